"""Waiting for a lab's hosts, the way a cloud brings them up.

Nova reports a server ACTIVE, and vSphere ends a power-on task, long before the machine answers
SSH; cloud-init then creates the login user and installs the key. Everything that logs in to
the hosts waits first:

- :func:`wait_for_sshd` (here): each host's sshd answers (a TCP connection to its SSH port that
  sends an ``SSH-`` banner), tried with a growing pause (:class:`Backoff`) until a bounded
  timeout (``gpulab:host_wait_s``). The site and workload runs call it before their play; a
  host that never answers fails the run with one line naming the host, what was waited for and
  how long (:class:`HostWaitError`).
- playbooks/wait.yml (the first play of site.yml): logging in works and ``cloud-init status
  --wait`` has returned where cloud-init runs; it reports each host's machine id and when
  cloud-init finished (:data:`REPORT_FACT`).
- :func:`infra.clouds.vsphere.wait_for_guest`: after a vGPU power cycle, VMware Tools run and
  the guest has an address again.

:func:`wait_lines` makes the one line per host that says what was waited for and how long.
The probe goes where Ansible will connect: the host's checked inventory variables
(:func:`infra.ansible.inventory.host_vars`; a bad field is refused before any wait, with the
inventory's one line). Hosts not reached over SSH at all (``ansible_connection`` local,
chroot) are not probed here; the wait play still waits for them through Ansible's own
connection.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from infra.ansible.inventory import host_vars
from infra.hosts import Host

DEFAULT_HOST_WAIT_S = 600.0  # gpulab:host_wait_s when the stack does not set it
HOST_WAIT_KEY = "host_wait_s"
REPORT_FACT = "gpulab_host_wait"  # what playbooks/wait.yml sets on each host
WAIT_PLAY = "Wait for the hosts"  # its play name (events of that play are not "first tasks")
BANNER = b"SSH-"
_SSH_CONNECTIONS = (None, "", "ssh", "ansible.builtin.ssh", "paramiko", "paramiko_ssh")


@dataclass(frozen=True)
class Backoff:
    """Pause before try *n* (n >= 1): ``first_s * factor**(n-1)``, at most ``max_s``."""

    first_s: float = 0.5
    factor: float = 2.0
    max_s: float = 5.0  # a probe is one TCP connection: cheap enough to keep the wait close

    def delays(self) -> Iterator[float]:
        d = self.first_s
        while True:
            yield min(d, self.max_s)
            d *= self.factor


@dataclass
class Waited:
    """One host's wait for sshd: ``seconds`` from the start of the wait, ``tries`` probes,
    ``at`` the wall-clock time it answered, ``skipped`` why it was not probed (or None),
    ``last`` the last failed probe's reason."""

    host: str
    address: str
    seconds: float = 0.0
    tries: int = 0
    at: float | None = None
    skipped: str | None = None
    last: str = ""

    @property
    def ok(self) -> bool:
        return self.at is not None or self.skipped is not None


class HostWaitError(RuntimeError):
    """A host did not come up within the timeout: one line naming the host, what was waited
    for and how long (the other hosts that failed are counted)."""

    def __init__(self, failed: list[Waited], timeout_s: float) -> None:
        self.failed = failed
        self.timeout_s = timeout_s
        first = failed[0]
        more = f" (+{len(failed) - 1} more hosts)" if len(failed) > 1 else ""
        line = (
            f"host {first.host} ({first.address}): no SSH answer within {timeout_s:.0f} s "
            f"(waited for sshd, {first.tries} tries, last: {first.last or 'no answer'}); "
            f"raise gpulab:{HOST_WAIT_KEY} if the hosts boot slowly{more}"
        )
        super().__init__(line)


def host_wait_s(config: Any) -> float:
    """``gpulab:host_wait_s`` from a dynamic provider's stack config (``pulumi.Config``-like:
    ``get(key)``), else :data:`DEFAULT_HOST_WAIT_S`."""
    raw = None
    try:
        raw = config.get(HOST_WAIT_KEY)
    except Exception:  # no config in this process: the default
        raw = None
    try:
        value = float(raw) if raw not in (None, "") else DEFAULT_HOST_WAIT_S
    except (TypeError, ValueError):
        value = DEFAULT_HOST_WAIT_S
    return value if value > 0 else DEFAULT_HOST_WAIT_S


def ssh_target(host: Host) -> tuple[str, int] | str:
    """``(address, port)`` to probe, or why the host is not probed directly (a connection other
    than SSH). Read from the host's inventory variables, so the probe goes where Ansible will
    connect; a field the inventory refuses raises its
    :class:`~infra.ansible.inventory.InventoryError` (one line naming the host and the field)."""
    hv = host_vars(host)
    conn = hv.get("ansible_connection")
    if conn not in _SSH_CONNECTIONS:
        return f"connection {conn}"
    return str(hv["ansible_host"]), int(hv["ansible_port"])


def probe_sshd(address: str, port: int, timeout_s: float = 5.0) -> str | None:
    """None when sshd at ``address:port`` sends its banner; else why not (one short phrase)."""
    try:
        with socket.create_connection((address, port), timeout=timeout_s) as s:
            s.settimeout(timeout_s)
            data = b""
            while len(data) < len(BANNER):
                chunk = s.recv(64)
                if not chunk:
                    return "connection closed before the SSH banner"
                data += chunk
            return None if data.startswith(BANNER) else f"not SSH (got {data[:16]!r})"
    except ConnectionRefusedError:
        return "connection refused"
    except TimeoutError:
        return "timed out"
    except socket.gaierror:
        return "address does not resolve"
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def wait_for_sshd(
    hosts: Iterable[Host],
    timeout_s: float,
    backoff: Backoff = Backoff(),
    probe: Callable[[str, int], str | None] = probe_sshd,
    log: Callable[[str], None] | None = None,
) -> list[Waited]:
    """Wait, all hosts at once, until each one's sshd answers; raises :class:`HostWaitError`
    naming the hosts that did not answer within ``timeout_s`` (after every host was waited
    for). Returns one :class:`Waited` per host, in the order given. Every host's inventory
    fields are checked first: a bad one is refused before anything waits."""
    hosts = list(hosts)
    targets = {h.name: ssh_target(h) for h in hosts}
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    lock = threading.Lock()

    def one(host: Host) -> Waited:
        target = targets[host.name]
        if isinstance(target, str):
            return Waited(host.name, str(host.address), skipped=target)
        address, port = target
        w = Waited(host.name, address)
        delays = backoff.delays()
        while True:
            w.tries += 1
            reason = probe(address, port)
            now = time.monotonic()
            w.seconds = now - t0
            if reason is None:
                w.at = time.time()
                return w
            w.last = reason
            if now >= deadline:
                return w
            pause = min(next(delays), max(deadline - now, 0.0))
            time.sleep(pause)

    if not hosts:
        return []
    with ThreadPoolExecutor(max_workers=min(len(hosts), 32)) as pool:
        done = list(pool.map(one, hosts))
    if log is not None:
        with lock:
            for w in done:
                if w.at is None and w.skipped is None:
                    log(
                        f"wait: host {w.host} ({w.address}): no SSH answer after {w.seconds:.1f}"
                        f" s ({w.tries} tries, last: {w.last})"
                    )
    failed = [w for w in done if not w.ok]
    if failed:
        raise HostWaitError(failed, timeout_s)
    return done


@dataclass
class HostReport:
    """What the wait play reported for one host (``REPORT_FACT``), see playbooks/wait.yml."""

    login_s: float | None = None
    cloud_init: str | None = None  # done, error, disabled, absent, not booted, ...
    cloud_init_done_at: float | None = None
    machine_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_fact(cls, fact: Any) -> HostReport:
        if not isinstance(fact, Mapping):
            return cls()

        def num(v: Any) -> float | None:
            try:
                return float(v)
            except (TypeError, ValueError):
                return None

        mid = fact.get("machine_id")
        return cls(
            login_s=num(fact.get("login_s")),
            cloud_init=str(fact["cloud_init"]) if fact.get("cloud_init") else None,
            cloud_init_done_at=num(fact.get("cloud_init_done_at")),
            machine_id=str(mid).strip() or None if mid else None,
        )


def wait_lines(
    sshd: Iterable[Waited], reports: Mapping[str, HostReport] | None = None
) -> list[str]:
    """One line per host: the host, what was waited for and how long, e.g.
    ``wait: host lab-gpu-0 (10.0.0.5): sshd 23.4 s (7 tries), login 0.4 s, cloud-init done``."""
    reports = reports or {}
    lines = []
    for w in sshd:
        parts = [
            f"sshd not probed ({w.skipped})"
            if w.skipped
            else f"sshd {w.seconds:.1f} s ({w.tries} {'try' if w.tries == 1 else 'tries'})"
        ]
        r = reports.get(w.host)
        if r is not None and r.login_s is not None:
            parts.append(f"login {r.login_s:.1f} s")
        if r is not None and r.cloud_init:
            parts.append(f"cloud-init {r.cloud_init}")
        lines.append(f"wait: host {w.host} ({w.address}): " + ", ".join(parts))
    return lines


def waited_outputs(
    sshd: Iterable[Waited], reports: Mapping[str, HostReport], first_task_at: Mapping[str, float]
) -> dict[str, dict[str, Any]]:
    """The ``waited`` output of a play run: per host, when sshd answered (epoch seconds) and
    after how long, the login wait, cloud-init's status and end, the first task's start."""
    out: dict[str, dict[str, Any]] = {}
    for w in sshd:
        r = reports.get(w.host, HostReport())
        out[w.host] = {
            "address": w.address,
            "sshd_s": None if w.skipped else round(w.seconds, 2),
            "sshd_tries": w.tries,
            "sshd_at": w.at,
            "login_s": r.login_s,
            "cloud_init": r.cloud_init,
            "cloud_init_done_at": r.cloud_init_done_at,
            "first_task_at": first_task_at.get(w.host),
        }
    return out
