"""Real part: the Prometheus Pushgateway (Debian's prometheus-pushgateway 1.5).

``scripts/parts/pushgateway.sh prepare`` unpacks ``.cache/pushgateway/prometheus-pushgateway``.
The fixture starts it on a free 127.0.0.1 port with persistence off (``--persistence.file=""``:
pushes live in memory), waits for ``/-/ready``, yields a ``PushgatewayPart`` and stops it by PID.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.parts import CACHE, need
from tests.parts.fixtures_ironic import free_port, stop_pid

PUSHGATEWAY = CACHE / "pushgateway" / "prometheus-pushgateway"


@dataclass
class PushgatewayPart:
    url: str
    pid: int
    log: Path

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return str(r.read().decode("utf-8"))


@pytest.fixture(scope="session")
def pushgateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PushgatewayPart]:
    import subprocess

    need(PUSHGATEWAY.exists(), f"Pushgateway {PUSHGATEWAY} (scripts/parts/pushgateway.sh prepare)")
    log = tmp_path_factory.mktemp("pushgateway") / "pushgateway.log"
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(PUSHGATEWAY), f"--web.listen-address=127.0.0.1:{port}", "--persistence.file="],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    part = PushgatewayPart(f"http://127.0.0.1:{port}", proc.pid, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"pushgateway exited {proc.returncode}: {log.read_text()[-800:]}"
                )
            try:
                part.get("/-/ready")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"pushgateway not ready in 30 s: {log.read_text()[-800:]}"
                    ) from None
                time.sleep(0.1)
        yield part
    finally:
        stop_pid(proc)
