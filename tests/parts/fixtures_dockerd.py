"""Part "dockerd": a private Docker engine for the docker execution environment's tests.

Started the way this machine needs it (ENVIRONMENT.md): ``dockerd --data-root D --exec-root E
-H unix://SOCK --bridge=none --iptables=false``, on a socket of its own (never the system's).
Images cannot be pulled here, so the base image ``gpulab-test-base:bookworm`` is imported from
the debootstrap rootfs that the ``rootfs`` part prepares (waited for through its ``.ready``
marker). The data root lives under ``.cache/dockerd`` so the image survives between sessions; it
is re-imported when the rootfs changes. The daemon is stopped by PID at session end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.parts import CACHE, need, need_command, need_root

ROOTFS = CACHE / "rootfs" / "bookworm"
ROOTFS_READY = CACHE / "rootfs" / "bookworm.ready"
# One data root per pytest-xdist worker (scripts/test.sh runs two): two daemons never share one.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
DATA_ROOT = CACHE / "dockerd" / ("data" if _WORKER in ("", "gw0") else f"data-{_WORKER}")
BASE_IMAGE = "gpulab-test-base:bookworm"
ROOTFS_WAIT_S = float(os.environ.get("GPULAB_ROOTFS_WAIT_S", "900"))
LABEL = "io.gpulab.rootfs"
LABEL_FORMAT = '{{index .Config.Labels "io.gpulab.rootfs"}}'


@dataclass
class Dockerd:
    socket: str  # path of the unix socket
    host: str  # DOCKER_HOST value: unix://<socket>
    base_image: str  # imported from the rootfs; has python3 (3.11), no TensorFlow
    pid: int
    log: Path

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, DOCKER_HOST=self.host)

    def docker(self, *args: str, timeout: float = 120, check: bool = True) -> str:
        r = subprocess.run(
            ["docker", *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and r.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout.strip()


def _wait_for_rootfs() -> str | None:
    deadline = time.monotonic() + ROOTFS_WAIT_S
    while time.monotonic() < deadline:
        if ROOTFS_READY.is_file() and (ROOTFS / "usr/bin/python3").exists():
            return ROOTFS_READY.read_text().strip()
        if not (ROOTFS.parent / "bookworm.tmp").exists() and not ROOTFS.exists():
            return None  # nobody is building it
        time.sleep(2)
    return None


def _import_base(d: Dockerd, stamp: str) -> None:
    have = d.docker("image", "inspect", "-f", LABEL_FORMAT, BASE_IMAGE, check=False)
    if have == stamp:
        return
    tar = subprocess.Popen(["tar", "-C", str(ROOTFS), "-c", "."], stdout=subprocess.PIPE)
    r = subprocess.run(
        ["docker", "import", "--change", f"LABEL {LABEL}={stamp}", "-", BASE_IMAGE],
        stdin=tar.stdout,
        env=d.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    tar.wait()
    if r.returncode != 0:
        raise RuntimeError(f"docker import of {ROOTFS} failed: {r.stderr.strip()}")


@pytest.fixture(scope="session")
def dockerd() -> Iterator[Dockerd]:
    """A running private dockerd with the base image imported; yields its handle."""
    need_root("dockerd")
    exe = need_command("dockerd", "the docker execution environment")
    need_command("docker", "the docker execution environment")
    stamp = _wait_for_rootfs()
    need(stamp is not None, f"the rootfs part ({ROOTFS_READY} within {ROOTFS_WAIT_S:.0f} s)")
    assert stamp is not None

    DATA_ROOT.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="gpulab-dockerd-", dir="/tmp"))  # short socket path
    sock = tmp / "docker.sock"
    log = tmp / "dockerd.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [
                exe,
                "--data-root",
                str(DATA_ROOT),
                "--exec-root",
                str(tmp / "exec"),
                "-H",
                f"unix://{sock}",
                "--pidfile",
                str(tmp / "dockerd.pid"),
                "--bridge=none",
                "--iptables=false",
                "--ip-masq=false",
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    d = Dockerd(str(sock), f"unix://{sock}", BASE_IMAGE, proc.pid, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"dockerd exited {proc.returncode}: {log.read_text()[-800:]}")
            if sock.exists() and d.docker("version", check=False, timeout=10):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"dockerd did not answer in 60 s: {log.read_text()[-800:]}")
            time.sleep(0.2)
        d.docker("container", "prune", "-f", check=False)  # left by an earlier killed session
        _import_base(d, stamp)
        yield d
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        # dockerd leaves its default netns bind mount behind: unmount what is under our dir
        # (deepest first), and never delete through a mount that is still there.
        mine = sorted(
            (m for m in _mount_points() if m.startswith(f"{tmp}/")), key=len, reverse=True
        )
        for m in mine:
            subprocess.run(["umount", m], capture_output=True, check=False)
        if not any(m.startswith(f"{tmp}/") for m in _mount_points()):
            shutil.rmtree(tmp, ignore_errors=True)


def _mount_points() -> list[str]:
    return [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
