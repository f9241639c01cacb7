"""AnsibleRun's provider methods driven for real as plain Python (no engine): localhost over a
local connection, and an nspawn test host over real SSH when that part is available.

On localhost an NVIDIA DOUBLE (a stub ``nvidia-smi`` on PATH) answers the driver and CUDA
queries, since this machine has no GPU; the nspawn host has no stub and reports none.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infra.dynamic.ansible_run import (
    RUN_INPUTS,
    AnsibleRunProvider,
    secrets_digest,
    tree_digest,
)
from infra.hosts import Host

HERE = Path(__file__).parent
PROBE = str(HERE / "playbooks" / "gpu_probe.yml")

NVIDIA_SMI_DOUBLE = """#!/bin/sh
# NVIDIA double for tests: answers like a driver 550.54.15 / CUDA 12.4 host.
case "$*" in
  *driver_version*) echo "550.54.15" ;;
  *) echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |" ;;
esac
"""


def props(hosts: list[Host], log: Path, label: str = "one", **extra: Any) -> dict[str, Any]:
    p = {
        "hosts": [h.to_output() for h in hosts],
        "playbook": PROBE,
        "variables": {"probe_log": str(log), "probe_label": label},
        "playbook_digest": tree_digest(Path(PROBE)),
        "triggers": [],
        "secrets": None,
    }
    p.update(extra)
    return p


def runs(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_check_rejects_bad_inputs() -> None:
    res = AnsibleRunProvider().check({}, {"hosts": [], "playbook": "", "variables": [1]})
    assert sorted(f.property for f in res.failures) == ["hosts", "playbook", "variables"]
    ok = AnsibleRunProvider().check({}, {"hosts": [{"name": "a"}], "playbook": "site.yml"})
    assert ok.failures == []


def test_diff_only_on_input_changes(tmp_path: Path) -> None:
    p = AnsibleRunProvider()
    old = props([Host("h", "127.0.0.1")], tmp_path / "log")
    old_outs = dict(old, secrets=None, secrets_digest=None, summary={}, facts={}, status="x")
    assert p.diff("id", old_outs, dict(old)).changes is False
    changes = (
        ("hosts", [Host("h2", "127.0.0.2").to_output()]),
        ("playbook", "site.yml"),
        ("variables", {"probe_log": "/other"}),
        ("secrets", {"token": "t"}),
        ("playbook_digest", "0" * 64),
        ("triggers", ["driver-550"]),
        ("future_input", 1),  # an input the provider does not know yet counts too
    )
    # Every input the resource registers is changed once.
    assert {k for k, _ in changes} >= set(RUN_INPUTS) | {"secrets"}
    for key, value in changes:
        d = p.diff("id", old_outs, dict(old, **{key: value}))
        assert d.changes is True, key
        assert not d.replaces  # re-run in place, never replace
    digest = secrets_digest({"token": "t"}, "ab")  # salted: recomputed with the stored salt
    with_secret = dict(old_outs, secrets_digest=digest, secrets_salt="ab")
    assert p.diff("id", with_secret, dict(old, secrets={"token": "t"})).changes is False


def test_read_of_a_host_that_does_not_answer_keeps_the_stored_outputs(tmp_path: Path) -> None:
    """Nothing is learnt about a host whose sshd does not answer (a lab that is down): the
    stored outputs come back, its machine id as it was provisioned."""
    dead = Host("h", "127.0.0.1", ssh_port=9, gpu_path="none", vars={"ansible_connection": "ssh"})
    outs = dict(props([dead], tmp_path / "log"), summary={"h": {}}, status="ok",
                machines={"h": "0f" * 16})  # fmt: skip
    r = AnsibleRunProvider().read("ansible-1", outs)
    assert (r.id, r.outs) == ("ansible-1", {**outs, "machines_now": {"h": "0f" * 16}})
    # nothing learnt: no change for the next up
    assert (
        not AnsibleRunProvider().diff("ansible-1", r.outs, props([dead], tmp_path / "log")).changes
    )


def test_provider_pickles_by_reference_and_loads_in_a_fresh_process() -> None:
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(AnsibleRunProvider())
    assert len(blob) < 4000  # plain data, pickled by reference to an importable module
    code = (
        "import base64, sys, dill\n"
        "p = dill.loads(base64.b64decode(sys.stdin.read()))\n"
        "print(type(p).__module__, p.diff('i', {'hosts': [1]}, {'hosts': [2]}).changes)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        input=blob,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["infra.dynamic.ansible_run", "True"]
    base64.b64decode(blob)  # what the engine stores is base64 text


@pytest.mark.slow
def test_create_update_delete_on_localhost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "nvidia-smi").write_text(NVIDIA_SMI_DOUBLE)
    (stub / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{stub}:{os.environ['PATH']}")
    log = tmp_path / "probe.log"
    host = Host("localhost", "127.0.0.1", gpu_path="local")
    p = AnsibleRunProvider()

    created = p.create(props([host], log, label="one"))
    assert created.id.startswith("ansible-")
    outs = created.outs
    assert outs is not None
    assert outs["summary"]["localhost"]["failed"] == 0
    assert outs["summary"]["localhost"]["unreachable"] == 0
    assert outs["summary"]["localhost"]["ok"] >= 4
    assert outs["facts"]["localhost"]["driver_version"] == "550.54.15"
    assert outs["facts"]["localhost"]["cuda_version"] == "12.4"
    assert outs["facts"]["localhost"]["facts"]["gpu_facts_probe_label"] == "one"
    assert outs["status"] == "successful"
    assert len(runs(log)) == 1

    # Same inputs: the engine would not call update; changed variables re-run the play.
    assert p.diff(created.id, outs, props([host], log, label="one")).changes is False
    news = props([host], log, label="two")
    assert p.diff(created.id, outs, news).changes is True
    updated = p.update(created.id, outs, news)
    assert updated.outs is not None
    assert updated.outs["facts"]["localhost"]["facts"]["gpu_facts_probe_label"] == "two"
    assert len(runs(log)) == 2

    p.delete(created.id, updated.outs)
    assert len(runs(log)) == 2  # delete runs nothing


@pytest.mark.integration
def test_a_host_whose_sshd_never_answers_fails_after_host_wait_s(tmp_path: Path) -> None:
    from infra.wait import HostWaitError

    dead = Host(
        "dead-0", "127.0.0.1", ssh_port=9, gpu_path="none", vars={"ansible_connection": "ssh"}
    )
    p = AnsibleRunProvider()
    p.host_wait_s = 2  # the stack's gpulab:host_wait_s (configure)
    with pytest.raises(HostWaitError, match=r"host dead-0 \(127.0.0.1\): no SSH answer within 2 s"):
        p.create(props([dead], tmp_path / "log"))


@pytest.mark.slow
@pytest.mark.nspawn
def test_create_on_an_nspawn_host(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    from tests.parts import need

    try:
        handle = request.getfixturevalue("nspawn_host")
    except pytest.FixtureLookupError:
        handle = None
    need(handle is not None, "the nspawn fixture (tests/parts/fixtures_nspawn.py)")
    host: Host = handle.host
    log = Path("/tmp/gpulab-probe-test.log")  # on the nspawn host
    outs = AnsibleRunProvider().create(props([host], log, label="nspawn")).outs
    assert outs is not None
    s = outs["summary"][host.name]
    assert (s["failed"], s["unreachable"]) == (0, 0) and s["ok"] >= 4 and s["changed"] >= 1
    facts = outs["facts"][host.name]
    assert facts["driver_version"] is None and facts["cuda_version"] is None  # no GPU there
    assert facts["os"] and facts["os"].startswith("Debian")


V100_LSPCI = (
    "0000:3b:00.0 3D controller [0302]: NVIDIA Corporation GV100GL [Tesla V100 PCIe 32GB] "
    "[10de:1db6] (rev a1)"
)


@pytest.mark.slow
@pytest.mark.nspawn
def test_gpu_facts_role_facts_come_out_on_an_nspawn_host(request: pytest.FixtureRequest) -> None:
    """The real gpu_facts role over SSH; lspci answers through the role's documented hardware
    DOUBLE variable (a V100 line), since no NVIDIA device exists here."""
    from tests.parts import need

    try:
        handle = request.getfixturevalue("nspawn_host")
    except pytest.FixtureLookupError:
        handle = None
    need(handle is not None, "the nspawn fixture (tests/parts/fixtures_nspawn.py)")
    host: Host = handle.host
    playbook = str(HERE / "playbooks" / "gpu_facts.yml")
    outs = (
        AnsibleRunProvider()
        .create(
            {
                "hosts": [host.to_output()],
                "playbook": playbook,
                "variables": {"gpu_facts_lspci_output": V100_LSPCI},
                "playbook_digest": tree_digest(Path(playbook)),
                "triggers": [],
            }
        )
        .outs
    )
    assert outs is not None
    assert outs["summary"][host.name]["failed"] == 0
    facts = outs["facts"][host.name]
    assert facts["driver_version"] is None  # no NVIDIA kernel module loaded
    gpus = facts["facts"]["gpu_facts_gpus"]
    assert [g["device_id"] for g in gpus] == ["1db6"]
    assert "V100" in gpus[0]["name"]
    assert str(facts["facts"]["gpu_facts_has_gpu"]) == "True"
