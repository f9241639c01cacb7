"""Waiting for hosts the way a cloud brings them up (infra/wait.py), and what the site run does
with a replaced or re-imaged machine (infra/dynamic/ansible_run.py), without a lab.

The sshd probes talk to real sockets on 127.0.0.1: a server that starts listening late and
then sends an SSH banner, a port nothing listens on, a server that is not sshd. The provider
tests replace only the play (``play_in_fresh_process``) with a double that records what it was
asked to run and answers as the wait play does.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from infra.ansible.inventory import InventoryError
from infra.ansible.runner import HostSummary, PlaybookResult
from infra.dynamic import ansible_run
from infra.dynamic.ansible_run import AnsibleRunProvider, reimaged
from infra.hosts import Host
from infra.wait import (
    REPORT_FACT,
    Backoff,
    HostReport,
    HostWaitError,
    host_wait_s,
    probe_sshd,
    ssh_target,
    wait_for_sshd,
    wait_lines,
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def late_sshd() -> Iterator[tuple[int, float]]:
    """A fake sshd on 127.0.0.1 that starts listening 1.5 s from now, then greets every
    connection with an SSH banner; (port, when it started listening)."""
    port, started = free_port(), {"at": 0.0}
    stop = threading.Event()

    def serve() -> None:
        time.sleep(1.5)
        with socket.socket() as srv:
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.bind(("127.0.0.1", port))
            srv.listen()
            srv.settimeout(0.2)
            started["at"] = time.monotonic()
            while not stop.is_set():
                try:
                    conn, _ = srv.accept()
                except TimeoutError:
                    continue
                with conn:
                    conn.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")

    t = threading.Thread(target=serve, daemon=True)
    t0 = time.monotonic()
    t.start()
    try:
        yield port, t0
    finally:
        stop.set()
        t.join(timeout=5)


def host(name: str, port: int, **vars_: Any) -> Host:
    return Host(name, "127.0.0.1", ssh_user="debian", gpu_path="none", ssh_port=port, vars=vars_)


@pytest.mark.integration
def test_waits_with_back_off_until_sshd_answers(late_sshd: tuple[int, float]) -> None:
    port, t0 = late_sshd
    (w,) = wait_for_sshd([host("late-0", port)], timeout_s=30, backoff=Backoff(0.2, 2.0, 1.0))
    assert w.ok and w.at is not None and w.skipped is None
    assert 1.5 <= time.monotonic() - t0 < 4  # answered soon after it started listening
    assert w.seconds >= 1.5 and 3 <= w.tries <= 8, w  # 0.2, 0.4, 0.8, 1.0 ... not every 0.1 s
    (line,) = wait_lines([w], {"late-0": HostReport(login_s=0.4, cloud_init="done")})
    assert line.startswith("wait: host late-0 (127.0.0.1): sshd ") and " tries)" in line, line
    assert line.endswith("login 0.4 s, cloud-init done"), line


@pytest.mark.integration
def test_a_port_nothing_answers_fails_within_the_timeout_with_one_line() -> None:
    dead, alive = host("dead-0", free_port()), host("dead-1", free_port())
    t0 = time.monotonic()
    with pytest.raises(HostWaitError) as err:
        wait_for_sshd([dead, alive], timeout_s=2, backoff=Backoff(0.1, 2.0, 0.5))
    took = time.monotonic() - t0
    line = str(err.value)
    assert 2 <= took < 4, took  # bounded: both waited at once, stopped at the timeout
    assert "\n" not in line
    assert line.startswith("host dead-0 (127.0.0.1): no SSH answer within 2 s (waited for sshd, ")
    assert "last: connection refused" in line and "gpulab:host_wait_s" in line
    assert line.endswith("(+1 more hosts)"), line
    assert [w.host for w in err.value.failed] == ["dead-0", "dead-1"]


def test_a_listener_that_is_not_sshd_is_not_taken_for_one() -> None:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]

        def greet() -> None:
            conn, _ = srv.accept()
            with conn:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n")

        threading.Thread(target=greet, daemon=True).start()
        assert probe_sshd("127.0.0.1", port, timeout_s=2) == "not SSH (got b'HTTP/1.1 400 Bad')"


def test_back_off_grows_to_its_cap() -> None:
    delays = Backoff(0.5, 2.0, 15.0).delays()
    assert [next(delays) for _ in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0]


def test_hosts_not_reached_over_ssh_are_not_probed() -> None:
    assert ssh_target(host("a", 2222)) == ("127.0.0.1", 2222)
    local = Host(name="c", address="127.0.0.1", ssh_user="debian", gpu_path="local")
    assert ssh_target(local) == "connection local"
    (w,) = wait_for_sshd([local], timeout_s=1)
    assert w.ok and w.tries == 0 and w.skipped == "connection local"


def test_a_field_the_inventory_refuses_is_refused_before_any_wait() -> None:
    """The probe goes where Ansible will connect, so a host the inventory refuses (here an
    ``ansible_ssh_common_args`` that would let data pick a ProxyCommand) fails at once with the
    inventory's line, not after ``host_wait_s``."""
    proxied = host("d", 22, ansible_ssh_common_args="-o ProxyCommand=evil")
    t0 = time.monotonic()
    with pytest.raises(InventoryError, match=r"host 'd'.*ansible_ssh_common_args"):
        wait_for_sshd([host("a", 1), proxied], timeout_s=30)
    assert time.monotonic() - t0 < 5


class Config:
    def __init__(self, **values: Any) -> None:
        self.values = values

    def get(self, key: str) -> Any:
        return self.values.get(key)


def test_host_wait_s_comes_from_the_stack_config() -> None:
    assert host_wait_s(Config(host_wait_s="45")) == 45.0
    assert host_wait_s(Config()) == 600.0
    assert host_wait_s(Config(host_wait_s="soon")) == 600.0
    p = AnsibleRunProvider()

    class Req:
        config = Config(host_wait_s="90")

    p.configure(Req())
    assert p.host_wait_s == 90.0


# -- the site run and machines that change ---------------------------------------------------


def entry(name: str, identity: str) -> dict[str, Any]:
    return Host(name, f"10.0.0.{name[-1]}", ssh_user="debian", gpu_path="none",
                identity=identity).to_output()  # fmt: skip


def site_props(*hosts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"hosts": list(hosts), "playbook": "site.yml", "variables": {"v": 1},
            "playbook_digest": "d", "triggers": [], "secrets": None, **extra}  # fmt: skip


class PlayDouble:
    """Stands in for the play: records (hosts in the inventory, --limit) and answers each
    limited host as the wait play does (its machine id) with a recap of ``changed``."""

    def __init__(self, machine_ids: dict[str, str], changed: int = 3) -> None:
        self.machine_ids = machine_ids
        self.changed = changed
        self.calls: list[tuple[list[str], str | None]] = []

    def __call__(
        self, playbook: str, hosts: list[dict[str, Any]], extravars: Any = None,
        secrets: Any = None, limit: str | None = None,
    ) -> tuple[PlaybookResult, dict[str, dict[str, Any]]]:  # fmt: skip
        names = [h["name"] for h in hosts]
        ran = limit.split(",") if limit else names
        self.calls.append((names, limit))
        recaps = {n: HostSummary(ok=9, changed=self.changed) for n in ran}
        result = PlaybookResult(playbook, "successful", 0, recaps)
        facts = {n: {REPORT_FACT: {"machine_id": self.machine_ids[n], "cloud_init": "done",
                                   "login_s": 0.3}} for n in ran}  # fmt: skip
        return result, facts


@pytest.fixture()
def provider(monkeypatch: pytest.MonkeyPatch) -> AnsibleRunProvider:
    p = AnsibleRunProvider()
    monkeypatch.setattr(p, "wait_for_hosts", lambda hosts: [])
    return p


def test_a_replaced_machine_alone_gets_the_site_play(
    provider: AnsibleRunProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new identity (the server was replaced) changes the diff; the update runs the play on
    that host only and keeps the other host's recap, facts and machine id."""
    play = PlayDouble({"gpu-0": "m0", "gpu-1": "m1"})
    monkeypatch.setattr(ansible_run, "play_in_fresh_process", play)
    first = site_props(entry("gpu-0", "server-a"), entry("gpu-1", "server-b"))
    outs = provider.create(first).outs
    assert outs is not None and outs["ran_on"] == ["gpu-0", "gpu-1"]
    assert play.calls == [(["gpu-0", "gpu-1"], None)]

    replaced = site_props(entry("gpu-0", "server-a"), entry("gpu-1", "server-c"))
    assert provider.diff("id", outs, replaced).changes is True
    assert provider.hosts_to_run(outs, replaced) == ["gpu-1"]
    play.machine_ids["gpu-1"] = "m1-new"
    play.changed = 7
    new = provider.update("id", outs, replaced).outs
    assert new is not None
    assert play.calls[-1] == (["gpu-0", "gpu-1"], "gpu-1")  # whole inventory, one host runs
    assert new["ran_on"] == ["gpu-1"]
    assert new["summary"]["gpu-1"]["changed"] == 7
    assert new["summary"]["gpu-0"] == outs["summary"]["gpu-0"]  # not run: kept
    assert new["machines"] == {"gpu-0": "m0", "gpu-1": "m1-new"}
    assert provider.diff("id", new, replaced).changes is False

    # anything but host entries changes: every host runs again
    assert provider.hosts_to_run(new, {**replaced, "variables": {"v": 2}}) is None


def test_refresh_sees_a_re_imaged_host_and_the_update_runs_on_it_alone(
    provider: AnsibleRunProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read`` reads the machine ids back; a host re-imaged behind the same identity (a
    rebuild) has a new one: the next diff sees it, the update runs on that host only."""
    play = PlayDouble({"gpu-0": "m0", "gpu-1": "m1"})
    monkeypatch.setattr(ansible_run, "play_in_fresh_process", play)
    props = site_props(entry("gpu-0", "server-a"), entry("gpu-1", "server-b"))
    outs = provider.create(props).outs
    assert outs is not None

    monkeypatch.setattr(
        ansible_run, "read_machine_ids", lambda hosts, t: {"gpu-0": "m0", "gpu-1": "m1-rebuilt"}
    )
    read = provider.read("id", outs).outs
    assert read["machines_now"] == {"gpu-0": "m0", "gpu-1": "m1-rebuilt"}
    assert reimaged(read) == ["gpu-1"]
    assert provider.diff("id", read, props).changes is True
    assert provider.hosts_to_run(read, props) == ["gpu-1"]
    play.machine_ids["gpu-1"] = "m1-rebuilt"
    new = provider.update("id", read, props).outs
    assert new is not None and new["ran_on"] == ["gpu-1"] and new["machines_now"] is None
    assert provider.diff("id", new, props).changes is False

    # a host that does not answer the read is not taken for a new machine
    monkeypatch.setattr(ansible_run, "read_machine_ids", lambda hosts, t: {})
    assert provider.diff("id", provider.read("id", new).outs, props).changes is False


@pytest.mark.slow
@pytest.mark.nspawn
def test_a_late_host_is_waited_for_and_refresh_sees_it_re_imaged(
    nspawn_lab: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real hosts: one booted late (sshd 3 s after cloud-init) at the moment of the create;
    the run waits for it, the wait play reports cloud-init done and the machine id. The host
    is then booted again on a new disk at the same address (a rebuild): ``read`` sees the new
    machine id, and the update runs on it alone."""
    monkeypatch.setenv("ANSIBLE_PRIVATE_KEY_FILE", str(nspawn_lab.key))
    late = nspawn_lab.start_host(sshd_delay_s=3, hostname="late-0")
    h = Host("late-0", late.address, ssh_user="debian", gpu_path="none", identity="server-1")
    p = AnsibleRunProvider()
    p.host_wait_s = 120
    props = site_props(h.to_output(), playbook="wait.yml")
    outs = p.create(props).outs
    assert outs is not None
    w = outs["waited"]["late-0"]
    assert w["cloud_init"] == "done" and w["sshd_s"] >= 3 and w["sshd_tries"] > 1, w
    assert w["cloud_init_done_at"] < w["sshd_at"]
    first_id = outs["machines"]["late-0"]
    assert len(first_id) == 32
    read = p.read("id", outs).outs
    assert read["machines_now"] == {"late-0": first_id} and not p.diff("id", read, props).changes

    nspawn_lab.stop([late])
    again = nspawn_lab.start_host(address=late.address, sshd_delay_s=0, hostname="late-0")
    try:
        from tests.parts.nspawn import wait_for

        wait_for(again.answers_ssh, 60, "ssh to the rebuilt host", step=0.5)
        read = p.read("id", outs).outs
        assert read["machines_now"]["late-0"] not in (None, first_id), read["machines_now"]
        assert p.diff("id", read, props).changes is True
        assert p.hosts_to_run(read, props) == ["late-0"]
    finally:
        nspawn_lab.stop([again])
