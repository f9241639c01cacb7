"""Real Ansible targets: systemd-nspawn hosts over real SSH, and a chroot target.

Session fixtures (all processes stopped by PID at session end, also on failure):

- ``nspawn_lab``: one nspawn host booted from the cached rootfs (``scripts/parts/rootfs.sh``)
  with ``--volatile=overlay`` (writes go to a tmpfs, the cached rootfs stays untouched), a veth
  pair in a private /30 of 10.213.x.0/24 chosen so that it overlaps nothing on the machine,
  apt-cacher-ng bound to the host side (Debian backend = the machine's own mirror), the stub
  NVIDIA repository (``scripts/parts/nvidia-stub-repo.sh``) served over HTTP on the same
  address, and real SSH with a key generated for the session.
- ``nspawn_host``: the lab's host (an :class:`NspawnHost`); ``.host`` is an
  ``infra.hosts.Host`` to hand to ``infra.ansible.run_playbook``; ``.ssh(cmd)`` runs a command.
- ``chroot_target``: the cached rootfs under an overlay mount (with /proc and /dev), reachable
  through ``ansible_connection=community.general.chroot``; ``.host`` as above.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from infra.hosts import Host
from tests.parts import CACHE, REPO, need, need_command, need_root

ROOTFS = CACHE / "rootfs" / "bookworm"
ROOTFS_READY = CACHE / "rootfs" / "bookworm.ready"
STUB_REPO = CACHE / "nvidia-stub-repo"
ACNG_CACHE = CACHE / "acng"
ACNG_PORT = 3142
STUB_PORT = 8713


def _mirror() -> str:
    """The Debian mirror of this machine's apt sources (what debootstrap used too)."""
    for f in sorted(Path("/etc/apt").glob("sources.list.d/*.sources")):
        for line in f.read_text().splitlines():
            m = re.match(r"\s*URIs:\s*(\S+/debian)/?\s*$", line)
            if m:
                return m.group(1) + "/"
    for f in [Path("/etc/apt/sources.list"), *Path("/etc/apt").glob("sources.list.d/*.list")]:
        if f.is_file():
            for line in f.read_text().splitlines():
                m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)/?\s+bookworm\b", line)
                if m:
                    return m.group(1) + "/"
    return "http://deb.debian.org/debian/"


def _free_subnet() -> str:
    """A 10.213.N.0/24 no address or route on this machine uses."""
    used = (
        subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, check=False).stdout
        + subprocess.run(["ip", "route"], capture_output=True, text=True, check=False).stdout
    )
    for n in range(77, 128):
        if f"10.213.{n}." not in used:
            return f"10.213.{n}"
    raise RuntimeError("no free 10.213.N.0/24 subnet for the nspawn hosts")


def _stop(proc: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL, one process by its PID."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def _wait(pred, timeout: float, what: str, step: float = 0.1):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


@dataclass
class NspawnHost:
    name: str
    address: str
    host_side: str
    key: Path
    proc: subprocess.Popen[bytes]
    host: Host
    log: Path

    def ssh(
        self, command: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        argv = [
            "ssh", "-i", str(self.key), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", "ConnectTimeout=5", f"root@{self.address}", command,
        ]  # fmt: skip
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        if check and r.returncode != 0:
            raise AssertionError(f"ssh {self.name} {command!r} -> rc {r.returncode}: {r.stderr}")
        return r


@dataclass
class NspawnLab:
    hosts: list[NspawnHost]
    apt_proxy: str
    stub_url: str
    stub_sha256: dict[str, str]
    workdir: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    boot_s: float = 0.0


@dataclass
class ChrootTarget:
    path: Path
    host: Host


def _prepare_stub_repo() -> dict[str, str]:
    r = subprocess.run(
        ["bash", str(REPO / "scripts/parts/nvidia-stub-repo.sh"), "prepare"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    need(r.returncode == 0, f"stub NVIDIA repository build failed: {r.stderr.strip()[-300:]}")
    sums = {}
    for line in (STUB_REPO / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.strip()] = digest
    return sums


def _boot(name: str, workdir: Path, key_pub: Path, proxy_conf: Path) -> tuple:
    hk = workdir / f"{name}-hostkeys"
    (hk / "etc/ssh").mkdir(parents=True)
    _run("ssh-keygen", "-q", "-A", "-f", str(hk))
    hostname = workdir / f"{name}-hostname"
    hostname.write_text(name + "\n")  # systemd reads /etc/hostname (the rootfs has the builder's)
    binds = [f"--bind-ro={key_pub}:/root/.ssh/authorized_keys",
             f"--bind-ro={proxy_conf}:/etc/apt/apt.conf.d/01gpulab-proxy",
             f"--bind-ro={hostname}:/etc/hostname"]  # fmt: skip
    for f in sorted((hk / "etc/ssh").iterdir()):
        binds.append(f"--bind-ro={f}:/etc/ssh/{f.name}")
    log = workdir / f"{name}.log"
    proc = subprocess.Popen(
        ["systemd-nspawn", "-b", "-D", str(ROOTFS), "-M", name, f"--hostname={name}",
         "--register=no", "--keep-unit", "--network-veth", "--console=passive",
         "--volatile=overlay", *binds],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    return proc, log


def _child_pid(pid: int) -> int | None:
    r = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    pids = r.stdout.split()
    return int(pids[0]) if pids else None


@pytest.fixture(scope="session")
def nspawn_lab() -> Iterator[NspawnLab]:
    need_root("nspawn test hosts")
    for cmd in ("systemd-nspawn", "apt-cacher-ng", "ssh-keygen", "ssh", "nsenter", "ip"):
        need_command(cmd, "nspawn test hosts")
    need(
        ROOTFS_READY.is_file() and (ROOTFS / "usr/bin/python3").exists(),
        f"cached rootfs {ROOTFS} (scripts/parts/rootfs.sh prepare)",
    )
    sums = _prepare_stub_repo()
    t0 = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="gpulab-nspawn-"))
    procs: list[subprocess.Popen[bytes]] = []
    hosts: list[NspawnHost] = []
    try:
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(workdir / "id"))
        pub = workdir / "authorized_keys"
        shutil.copy(workdir / "id.pub", pub)
        net = _free_subnet()
        side, addr = f"{net}.1", f"{net}.2"
        proxy_conf = workdir / "01proxy"
        proxy_conf.write_text(
            f'Acquire::http::Proxy "http://{side}:{ACNG_PORT}";\n'
            f'Acquire::http::Proxy::{side} "DIRECT";\n'  # the stub repository itself
        )
        name = f"gl{os.getpid() % 100000}a"
        proc, log = _boot(name, workdir, pub, proxy_conf)
        procs.append(proc)
        veth = f"ve-{name}"[:15]
        _wait(lambda: Path(f"/sys/class/net/{veth}").exists() or proc.poll() is not None,
              20, f"veth {veth}")  # fmt: skip
        if proc.poll() is not None:
            raise RuntimeError(f"systemd-nspawn exited: {log.read_text()[-800:]}")
        child = _wait(lambda: _child_pid(proc.pid), 10, "the container's init")
        _run("ip", "addr", "add", f"{side}/30", "dev", veth)
        _run("ip", "link", "set", veth, "up")
        ns = ["nsenter", "-t", str(child), "-n"]
        _run(*ns, "ip", "addr", "add", f"{addr}/30", "dev", "host0")
        _run(*ns, "ip", "link", "set", "host0", "up")
        _run(*ns, "ip", "route", "add", "default", "via", side)

        # apt-cacher-ng on the host side, Debian backend = this machine's mirror.
        cfg = workdir / "acng"
        (cfg / "log").mkdir(parents=True)
        (ACNG_CACHE / "cache").mkdir(parents=True, exist_ok=True)
        (cfg / "backends_debian").write_text(_mirror() + "\n")
        (cfg / "acng.conf").write_text(
            f"CacheDir: {ACNG_CACHE / 'cache'}\nLogDir: {cfg / 'log'}\n"
            "SupportDir: /usr/lib/apt-cacher-ng\n"
            f"Port: {ACNG_PORT}\nBindAddress: {side}\nForeGround: 1\nExThreshold: 4\n"
            "Remap-debrep: file:deb_mirror*.gz /debian ; file:backends_debian\n"
        )
        acng = subprocess.Popen(
            ["apt-cacher-ng", "-c", str(cfg)], stdout=(cfg / "out.log").open("wb"),
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        procs.append(acng)
        stub = subprocess.Popen(
            [sys.executable, "-m", "http.server", "--bind", side, "--directory", str(STUB_REPO),
             str(STUB_PORT)],
            stdout=(workdir / "stub-http.log").open("wb"), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        procs.append(stub)
        key = workdir / "id"
        nh = NspawnHost(
            name=name, address=addr, host_side=side, key=key, proc=proc, log=log,
            host=Host(
                name="nspawn-a", address=addr, ssh_user="root", gpu_path="pci-passthrough",
                groups=["gpu_hosts"],
                vars={"ansible_ssh_private_key_file": str(key),
                      "ansible_python_interpreter": "/usr/bin/python3"},
            ),
        )  # fmt: skip
        hosts.append(nh)
        _wait(lambda: nh.ssh("true", check=False, timeout=10).returncode == 0, 40, "ssh")
        _wait(
            lambda: (
                nh.ssh("systemctl is-system-running", check=False).stdout.strip()
                in ("running", "degraded")
            ),
            40,
            "systemd in the container",
            step=0.3,
        )
        for p, what in ((acng, "apt-cacher-ng"), (stub, "stub repository server")):
            if p.poll() is not None:
                raise RuntimeError(f"{what} exited with {p.returncode}")
        lab = NspawnLab(
            hosts=hosts, apt_proxy=f"http://{side}:{ACNG_PORT}",
            stub_url=f"http://{side}:{STUB_PORT}", stub_sha256=sums, workdir=workdir,
            procs=procs, boot_s=time.monotonic() - t0,
        )  # fmt: skip
        yield lab
    finally:
        for p in reversed(procs):
            _stop(p)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def nspawn_host(nspawn_lab: NspawnLab) -> NspawnHost:
    return nspawn_lab.hosts[0]


@pytest.fixture(scope="session")
def chroot_target() -> Iterator[ChrootTarget]:
    need_root("chroot target")
    need(ROOTFS_READY.is_file(), f"cached rootfs {ROOTFS} (scripts/parts/rootfs.sh prepare)")
    work = Path(tempfile.mkdtemp(prefix="gpulab-chroot-"))
    root = work / "root"
    for d in ("upper", "work", "root"):
        (work / d).mkdir()
    mounts: list[Path] = []
    try:
        opts = f"lowerdir={ROOTFS},upperdir={work / 'upper'},workdir={work / 'work'}"
        _run("mount", "-t", "overlay", "overlay", "-o", opts, str(root))
        mounts.append(root)
        _run("mount", "-t", "proc", "proc", str(root / "proc"))
        mounts.append(root / "proc")
        _run("mount", "--bind", "/dev", str(root / "dev"))
        mounts.append(root / "dev")
        host = Host(
            name="chroot-a", address=str(root), gpu_path="pci-passthrough",
            vars={"ansible_connection": "community.general.chroot",
                  "ansible_python_interpreter": "/usr/bin/python3"},
        )  # fmt: skip
        yield ChrootTarget(path=root, host=host)
    finally:
        for m in reversed(mounts):
            subprocess.run(["umount", str(m)], capture_output=True, check=False)
        # Never remove through a mount that is still there (/dev is the machine's own).
        if not any(os.path.ismount(m) for m in mounts):
            shutil.rmtree(work, ignore_errors=True)
