"""Real part: govmomi's vCenter simulator with GPU fixtures (tests/parts/vcsim/main.go).

``scripts/parts/vcsim.sh prepare`` builds ``.cache/vcsim/vcsim``. The session fixture starts it
on a free 127.0.0.1 port (HTTPS with a self-signed certificate) with a one-off user and
password, waits for the URL file it writes, yields a ``VcsimPart`` and stops it by PID.
Simulated inventory: DC0 with cluster DC0_C0 (hosts DC0_C0_H0..2, Tesla P100, passthrough
enabled, grid_p100-* profiles), standalone host DC0_H0 (Tesla T4, passthrough capable but not
enabled, grid_t4-* profiles) and four powered-on VMs.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
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


@pytest.fixture(scope="session")
def vcsim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VcsimPart]:
    need(VCSIM.exists(), f"vCenter simulator {VCSIM} (scripts/parts/vcsim.sh prepare)")
    t0 = time.monotonic()
    d = tmp_path_factory.mktemp("vcsim")
    url_file = d / "url"
    log = d / "vcsim.log"
    user, password = "gpulab", "pw-" + secrets.token_hex(8)
    env = dict(os.environ, VCSIM_PASSWORD=password)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(VCSIM), "-listen", "127.0.0.1:0", "-url-file", str(url_file), "-username", user],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
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


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-1500:]
