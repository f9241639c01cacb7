"""Real part: a standalone OpenStack Ironic (fake-hardware, sqlite, noauth, rpc_transport=none).

``scripts/parts/ironic.sh prepare`` builds ``.venv-ironic``; the session fixture writes the
configuration into a temporary directory, creates the schema, starts the one ``ironic`` process
on a free 127.0.0.1 port, waits for its API and yields an ``IronicPart`` whose ``conn`` is an
``openstack.connect(auth_type="none", baremetal_endpoint_override=URL)`` connection. The
process is stopped by PID, also when a test fails. Setup time goes to ``IronicPart.setup_s``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.parts import REPO, need

IRONIC_VENV = REPO / ".venv-ironic"

CONFIG = """\
[DEFAULT]
auth_strategy = noauth
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = no-bios,fake
enabled_boot_interfaces = fake
enabled_console_interfaces = no-console,fake
enabled_deploy_interfaces = fake
enabled_inspect_interfaces = no-inspect,fake
enabled_management_interfaces = fake
enabled_network_interfaces = noop,flat,neutron
enabled_power_interfaces = fake
enabled_raid_interfaces = no-raid,fake
enabled_rescue_interfaces = no-rescue,fake
enabled_storage_interfaces = noop
enabled_vendor_interfaces = no-vendor,fake
default_deploy_interface = fake
default_network_interface = noop
rpc_transport = none
host = gpulab-test
use_stderr = true
[api]
host_ip = 127.0.0.1
port = {port}
[database]
connection = sqlite:///{db}
# pysqlite's busy timeout (default 5 s): a writer waits this long for another one's lock
# instead of failing with "database is locked" on a loaded machine. Ironic itself turns WAL
# on and retries node/port/lock writes on sqlite; a transaction that read before another
# commit still fails at once (tests/cloud/helpers.py enroll orders its writes for that).
connection_parameters = timeout=30
[dhcp]
dhcp_provider = none
[conductor]
automated_clean = false
[oslo_concurrency]
lock_path = {locks}
"""


@dataclass
class IronicPart:
    url: str
    conn: Any  # openstack.connection.Connection
    log: Path
    setup_s: float


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"ironic exited with {proc.returncode}:\n{tail}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2):
            return
        time.sleep(0.2)
    raise RuntimeError(f"ironic API at {url} did not answer in {timeout:.0f} s (log: {log})")


def stop_pid(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM by PID, SIGKILL after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)


@pytest.fixture(scope="session")
def ironic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IronicPart]:
    """A running standalone Ironic; the connection speaks only the bare-metal API."""
    binary = IRONIC_VENV / "bin" / "ironic"
    dbsync = IRONIC_VENV / "bin" / "ironic-dbsync"
    need(
        binary.exists() and dbsync.exists(),
        f"Ironic venv {IRONIC_VENV} (scripts/parts/ironic.sh prepare)",
    )
    import openstack

    t0 = time.monotonic()
    d = tmp_path_factory.mktemp("ironic")
    port = free_port()
    conf = d / "ironic.conf"
    conf.write_text(CONFIG.format(port=port, db=d / "ironic.sqlite", locks=d / "locks"))
    log = d / "ironic.log"
    subprocess.run(
        [str(dbsync), "--config-file", str(conf), "create_schema"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(binary), "--config-file", str(conf)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_http(url + "/v1", proc, log, timeout=60)
        conn = openstack.connect(auth_type="none", baremetal_endpoint_override=url)
        part = IronicPart(url=url, conn=conn, log=log, setup_s=time.monotonic() - t0)
        print(f"\n[ironic] schema + start + API up: {part.setup_s:.1f} s at {url}")
        yield part
    finally:
        stop_pid(proc)
