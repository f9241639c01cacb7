"""Real part: govmomi's vCenter simulator with GPU fixtures and ESXi host behaviour
(tests/parts/vcsim/main.go, esx_host.go).

``scripts/parts/vcsim.sh prepare`` builds ``.cache/vcsim/vcsim``. :func:`running_vcsim` starts
one on a free 127.0.0.1 port (HTTPS with a self-signed certificate) with a one-off user and
password, waits for the URL file it writes, yields a ``VcsimPart`` and stops it by PID. The
session fixture ``vcsim`` is one shared instance; ``fresh_vcsim`` (module scope) is one of the
module's own, for tests that reboot hosts, power VMs off or mark hosts (1 s reboots).

Simulated inventory: DC0 with cluster DC0_C0 (hosts DC0_C0_H0..2, Tesla P100, passthrough
enabled, grid_p100-* profiles), standalone host DC0_H0 (Tesla T4, passthrough capable but not
enabled, grid_t4-* profiles) and four powered-on VMs; every host has the NVIDIA vGPU
manager's ``nvidia`` kernel module with no options (best-effort scheduling), whose option
changes take effect at the host's next reboot. ``VcsimPart.esx()`` shows each host as its
shell would (the options configured and those the loaded module uses), which the vSphere API
does not; ``hang_reboot(host)`` makes the host's next reboot never come back.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.parts import CACHE, need
from tests.parts.fixtures_ironic import stop_pid

VCSIM = CACHE / "vcsim" / "vcsim"


@dataclass
class VcsimPart:
    url: str
    host: str
    port: int
    user: str
    password: str
    setup_s: float

    def _call(self, method: str, body: dict[str, Any] | None = None) -> Any:
        auth = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        req = urllib.request.Request(
            f"https://{self.host}:{self.port}/gpulab/esx",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Basic {auth}"},
        )
        ctx = ssl._create_unverified_context()
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            text = resp.read().decode()
        return json.loads(text) if text else None

    def esx(self) -> dict[str, dict[str, Any]]:
        """Each host as its shell shows it: ``configured``/``loaded`` module options, boot
        time, connection state, maintenance mode (not part of the vSphere API)."""
        return {h["name"]: h for h in self._call("GET")}

    def hang_reboot(self, host: str, hang: bool = True) -> None:
        """The host's next reboot never comes back (a host that fails to boot)."""
        self._call("POST", {"host": host, "hang_reboot": hang})


@contextlib.contextmanager
def running_vcsim(
    d: Path, reboot_seconds: float = 2.0, guest_boot_seconds: float = 2.0
) -> Iterator[VcsimPart]:
    """A vCenter simulator of its own in ``d`` (see the module docstring): a rebooting host is
    away ``reboot_seconds``; a powered-on guest runs VMware Tools and has its address
    ``guest_boot_seconds`` after the power-on (never at once: a wait must poll for it)."""
    if guest_boot_seconds <= 0:
        raise ValueError(
            f"guest_boot_seconds must be > 0 (a guest boots late), not {guest_boot_seconds}"
        )
    need(VCSIM.exists(), f"vCenter simulator {VCSIM} (scripts/parts/vcsim.sh prepare)")
    t0 = time.monotonic()
    url_file = d / "url"
    log = d / "vcsim.log"
    user, password = "gpulab", "pw-" + secrets.token_hex(8)
    env = dict(os.environ, VCSIM_PASSWORD=password)
    argv = [str(VCSIM), "-listen", "127.0.0.1:0", "-url-file", str(url_file), "-username", user]
    argv += ["-reboot-seconds", str(reboot_seconds)]
    argv += ["-guest-boot", f"{guest_boot_seconds}s"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
    try:
        deadline = time.monotonic() + 30
        while not url_file.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"vcsim exited with {proc.returncode}: {_tail(log)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"vcsim wrote no URL in 30 s: {_tail(log)}")
            time.sleep(0.05)
        url = url_file.read_text().strip()
        u = urlparse(url)
        assert u.hostname and u.port
        part = VcsimPart(
            url=url,
            host=u.hostname,
            port=u.port,
            user=user,
            password=password,
            setup_s=time.monotonic() - t0,
        )
        print(f"\n[vcsim] start until URL: {part.setup_s:.2f} s at {url}")
        yield part
    finally:
        stop_pid(proc)


@pytest.fixture(scope="session")
def vcsim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VcsimPart]:
    with running_vcsim(tmp_path_factory.mktemp("vcsim")) as part:
        yield part


@pytest.fixture(scope="module")
def fresh_vcsim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VcsimPart]:
    with running_vcsim(tmp_path_factory.mktemp("vcsim-own"), reboot_seconds=1.0) as part:
        yield part


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-1500:]
