"""The dynamic providers in the process the Pulumi engine runs them in, driven over gRPC.

``tests.parts.provider_host.ProviderHost`` starts ``.venv/bin/python -u -m pulumi.dynamic`` with
cwd = the repository root (the program directory: Pulumi.yaml has no ``main:``), as the
engine's launcher does, and stands in for the engine (the only double here): the SDK's
generated stubs, protobuf Struct property bags, the serialized provider the program itself
registers (``program_inputs``: the resource built under Pulumi's mocks). The targets are real:
AnsibleRun and WorkloadRun run the real playbooks on a local-connection host (WorkloadRun with a
tiny record-writing command in place of the runner), VgpuProfile attaches a vGPU in the real
vCenter simulator. Every input and output is compared after a Struct round trip.

``pytest -s`` prints each RPC and its time.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped,unused-ignore]
import pytest
from pulumi.dynamic import CheckResult, ResourceProvider
from pulumi.dynamic.dynamic import serialize_provider

from infra.dynamic.ansible_run import AnsibleRun
from infra.dynamic.vgpu import VgpuProfile
from infra.dynamic.workload_run import WorkloadRun
from infra.hosts import Host
from tests.parts.provider_host import (
    PROVIDER_KEY,
    REPO,
    ProviderError,
    ProviderHost,
    is_secret,
    program_inputs,
    reveal,
    round_trip,
    secret,
)

PROBE = str(REPO / "tests" / "lifecycle" / "playbooks" / "gpu_probe.yml")
SECRET = "grpc-S3cret-token"
TINY = (
    "import os, socket, sys\n"
    "from workloads.records import RecordWriter, make_record\n"
    "e = os.environ\n"
    "with RecordWriter(e['GPULAB_RECORDS_OUT']) as w:\n"
    "    w.write(make_record(run_id=e['GPULAB_RUN_ID'], suite='tiny', experiment='tiny',\n"
    "        model='none', kind='job', elapsed_s=0.01, topology=e['GPULAB_TOPOLOGY'],\n"
    "        arm=e['GPULAB_ARM'], host=socket.gethostname()))\n"
    "sys.exit(int(sys.argv[1]))\n"
)
FAILING_PLAY = """---
- name: A play that fails on its host
  hosts: all
  gather_facts: false
  tasks:
    - name: Check the scratch disk
      ansible.builtin.fail:
        msg: "scratch disk full\\n/scratch at 100%"
"""


@pytest.fixture(scope="module")
def ph() -> Iterator[ProviderHost]:
    with ProviderHost() as host:
        assert host.get_plugin_info() == "0.1.0"
        host.configure({"gpulab:lab": "grpc"})
        yield host
        print("\n[provider-host] RPC summary (method, resource, time):\n" + host.summary())


def local_host(name: str, **vars: Any) -> dict[str, Any]:
    return Host(name, "127.0.0.1", gpu_path="local", vars=vars).to_output()


def assert_round_trips(props: dict[str, Any]) -> None:
    """Through protobuf Struct and back unchanged (numbers come back as floats, equal)."""
    assert round_trip(props) == props


def changed(value: Any) -> Any:
    """A different value of the same shape."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "-x"
    if isinstance(value, list):
        return [*value, "x"]
    if isinstance(value, dict):
        return {**value, "x": 1}
    raise AssertionError(f"no change for {value!r}")


def diff_each_input(
    ph: ProviderHost,
    name: str,
    id_: str,
    outs: dict[str, Any],
    inputs: dict[str, Any],
    not_compared: tuple[str, ...] = (),
) -> list[tuple[str, dict[str, Any]]]:
    """Diff with each input changed alone; returns the diffs (all must see a change, but the
    ``not_compared`` inputs, which must not)."""
    assert ph.diff(name, id_, outs, inputs)["changes"] is False
    for key in not_compared:
        assert ph.diff(name, id_, outs, {**inputs, key: changed(inputs[key])})["changes"] is False
    diffs = []
    for key in sorted(k for k in inputs if k != PROVIDER_KEY and k not in not_compared):
        value = reveal(inputs[key])
        d = ph.diff(name, id_, outs, {**inputs, key: changed(value)})
        assert d["changes"] is True, key
        diffs.append((key, d))
    return diffs


# ----------------------------------------------------------------------------- AnsibleRun


@pytest.mark.integration
def test_ansible_run_over_grpc(ph: ProviderHost, tmp_path: Path) -> None:
    log = tmp_path / "probe.log"
    name = "grpc-site"
    inputs = program_inputs(
        AnsibleRun,
        name,
        hosts=[local_host("grpc-local")],
        playbook=PROBE,
        variables={"probe_log": str(log), "probe_label": "one"},
        secrets={"token": SECRET},
        triggers=["t1"],
    )
    assert inputs[PROVIDER_KEY] and is_secret(inputs["secrets"])
    assert_round_trips(inputs)

    checked, failures = ph.check(name, {}, inputs)
    assert failures == [] and checked == inputs
    _, bad = ph.check(name, {}, {**inputs, "hosts": [], "playbook": "", "variables": [1]})
    assert sorted(p for p, _ in bad) == ["hosts", "playbook", "variables"]
    assert all(reason for _, reason in bad)

    id_, outs = ph.create(name, inputs)
    assert id_.startswith("ansible-")
    assert_round_trips(outs)
    assert SECRET not in repr(outs)  # only the digest of the secrets is kept
    for key in ("hosts", "playbook", "variables", "playbook_digest", "triggers"):
        assert outs[key] == inputs[key], key
    assert outs["summary"]["grpc-local"]["failed"] == 0 and outs["status"] == "successful"
    assert outs["facts"]["grpc-local"]["facts"]["gpu_facts_probe_label"] == "one"
    assert len(log.read_text().splitlines()) == 1

    diffs = diff_each_input(ph, name, id_, outs, inputs)
    assert [k for k, _ in diffs] == sorted(
        ["hosts", "playbook", "variables", "secrets", "playbook_digest", "triggers"]
    )
    assert all(d["replaces"] == [] for _, d in diffs)  # re-run in place

    # refresh reads the host's machine id back (the probe play sets none: nothing to compare)
    read_id, read_outs = ph.read(name, id_, outs)
    assert (read_id, read_outs) == (id_, {**outs, "machines_now": read_outs["machines_now"]})
    assert ph.diff(name, id_, read_outs, inputs)["changes"] is False

    news = {**inputs, "variables": {"probe_log": str(log), "probe_label": "two"}}
    updated = ph.update(name, id_, outs, news)
    assert_round_trips(updated)
    assert updated["facts"]["grpc-local"]["facts"]["gpu_facts_probe_label"] == "two"
    assert len(log.read_text().splitlines()) == 2

    ph.delete(name, id_, updated)
    assert len(log.read_text().splitlines()) == 2  # delete runs nothing


def test_failing_playbook_is_unknown_with_one_line_naming_host_and_task(
    ph: ProviderHost, tmp_path: Path
) -> None:
    play = tmp_path / "fails.yml"
    play.write_text(FAILING_PLAY)
    inputs = program_inputs(
        AnsibleRun, "grpc-fail", hosts=[local_host("grpc-x")], playbook=str(play)
    )
    with pytest.raises(ProviderError) as err:
        ph.create("grpc-fail", inputs)
    e = err.value
    assert e.code == grpc.StatusCode.UNKNOWN
    assert e.line.endswith(
        "host 'grpc-x' failed at task 'Check the scratch disk': scratch disk full /scratch at 100%"
    ), e.line
    assert e.line.startswith("infra.ansible.runner.PlaybookError: fails.yml: ")


# ---------------------------------------------------------------------------- WorkloadRun


def tiny_host(name: str, tmp_path: Path, rc: int | None = 0) -> dict[str, Any]:
    command = [sys.executable, "-c", TINY, str(rc)] if rc is not None else ["/bin/false"]
    return local_host(
        name,
        workload_run_command=command,
        workload_run_python=sys.executable,
        workload_run_dir=str(REPO),
        workload_run_results_dir=str(tmp_path / "host-results" / name),
    )


@pytest.mark.integration
def test_workload_run_over_grpc(tmp_path: Path) -> None:
    """The records go to the results root of the machine that runs the command: the provider
    host's ``GPULAB_RESULTS`` (what ``gpulab up`` gives the engine), under the stack's name; a
    provider host with another results root sees no change in the same inputs."""
    name = "grpc-workloads-native"
    results = tmp_path / "results"
    inputs = program_inputs(
        WorkloadRun,
        name,
        hosts=[tiny_host("grpc-gpu", tmp_path)],
        suite="smoke",
        execution_env="native",
        topology="local",
        lab="grpc",
        variables={"workload_run_timeout_s": 120},
        stack="grpc-stack",
        machines={"grpc-gpu": "4b1d" * 8},
        triggers=["m1"],
    )
    assert "results_dir" not in inputs  # where records go is no input
    with ProviderHost(env={"GPULAB_RESULTS": str(results)}) as ph:
        ph.configure({"gpulab:lab": "grpc"})
        _workload_run_over_grpc(ph, name, inputs, results)
    elsewhere = tmp_path / "another-operator" / "results"
    with ProviderHost(env={"GPULAB_RESULTS": str(elsewhere)}) as other:
        other.configure({"gpulab:lab": "grpc"})
        checked, _ = other.check(name, {}, inputs)
        outs = dict(checked, run_id="x", status="ok")
        assert other.diff(name, "workloads-x", outs, inputs)["changes"] is False
    assert not elsewhere.exists()


def _workload_run_over_grpc(
    ph: ProviderHost, name: str, inputs: dict[str, Any], results: Path
) -> None:
    assert_round_trips(inputs)
    checked, failures = ph.check(name, {}, inputs)
    assert failures == [] and checked == inputs
    _, bad = ph.check(name, {}, {**inputs, "execution_env": "vm", "suite": ""})
    assert sorted(p for p, _ in bad) == ["execution_env", "suite"]
    assert "execution_env 'vm' is not one of" in dict(bad)["execution_env"]

    id_, outs = ph.create(name, inputs)
    assert_round_trips(outs)
    assert id_ == f"workloads-{outs['run_id']}"
    for key in inputs:
        if key != PROVIDER_KEY:
            assert outs[key] == inputs[key], key
    (record,) = outs["records"]
    assert Path(record).parent == results / "grpc-stack" / outs["run_id"] / "grpc-gpu"
    assert outs["status"] == "ok" and outs["summary"]["counts"]["records"] == 1

    diffs = diff_each_input(ph, name, id_, outs, inputs, not_compared=("stack",))
    assert {k for k, _ in diffs} >= {"hosts", "suite", "machines", "triggers", "variables"}

    assert ph.read(name, id_, outs) == (id_, outs)

    remeasure = {**inputs, "triggers": ["m2"]}  # what `gpulab measure` changes
    assert ph.diff(name, id_, outs, remeasure)["changes"] is True
    updated = ph.update(name, id_, outs, remeasure)
    assert_round_trips(updated)
    assert updated["run_id"] != outs["run_id"] and updated["triggers"] == ["m2"]

    ph.delete(name, id_, updated)
    assert Path(record).is_file() and Path(updated["records"][0]).is_file()  # results kept


@pytest.mark.integration
def test_workload_run_partial_failure_over_grpc(tmp_path: Path) -> None:
    name = "grpc-workloads-partial"
    inputs = program_inputs(
        WorkloadRun,
        name,
        hosts=[tiny_host("grpc-ok", tmp_path), tiny_host("grpc-bad", tmp_path, rc=None)],
        suite="smoke",
        lab="grpc",
        stack="grpc-partial",
    )
    with (
        ProviderHost(env={"GPULAB_RESULTS": str(tmp_path / "results")}) as ph,
        pytest.raises(ProviderError) as err,
    ):
        ph.create(name, inputs)
    e = err.value
    assert e.code == grpc.StatusCode.UNKNOWN
    assert "host 'grpc-bad' failed at task 'Fail when the run failed" in e.line
    assert "kept the finished records of grpc-ok in" in e.line
    [run_dir] = (tmp_path / "results" / "grpc-partial").iterdir()
    assert len(list((run_dir / "grpc-ok").glob("*.jsonl"))) == 1


# ---------------------------------------------------------------------------- VgpuProfile


@pytest.mark.vcsim
def test_vgpu_profile_over_grpc(ph: ProviderHost, vcsim: Any) -> None:
    from pyVim.connect import Disconnect

    from infra.clouds import vsphere as vs
    from tests.pulumi.test_vgpu_provider_vcsim import clone, destroy

    si = vs.connect(vcsim.host, vcsim.user, vcsim.password, port=vcsim.port, insecure=True)
    vm_name = "gpulab-grpc-vgpu"
    vm = clone(si, vm_name)
    try:
        name = f"{vm_name}-vgpu"
        inputs = program_inputs(
            VgpuProfile,
            name,
            vm_uuid=vm.config.uuid,
            vm_name=vm_name,
            profile="grid_p100-4q",
            server=f"{vcsim.host}:{vcsim.port}",
            user=vcsim.user,
            password=secret(vcsim.password),
            insecure=True,
        )
        assert is_secret(inputs["password"])
        assert_round_trips(inputs)
        checked, failures = ph.check(name, {}, inputs)
        assert failures == [] and checked == inputs
        _, bad = ph.check(name, {}, {**inputs, "profile": "p100-4q", "vm_uuid": ""})
        assert sorted(p for p, _ in bad) == ["profile", "vm_uuid"]

        id_, outs = ph.create(name, inputs)
        assert_round_trips(outs)
        assert id_ == f"{vm.config.uuid}/grid_p100-4q" and outs["profiles"] == ["grid_p100-4q"]
        assert is_secret(outs["password"])  # the engine keeps it secret in state
        assert vs.vm_vgpu_profiles(si, vm_name) == ["grid_p100-4q"]
        assert vs.find_vm(si, vm_name).runtime.powerState == "poweredOn"

        diffs = dict(diff_each_input(ph, name, id_, outs, inputs))
        assert {k for k, d in diffs.items() if d["replaces"]} == {"vm_uuid", "profile", "server"}

        assert ph.read(name, id_, outs) == (id_, outs)
        news = {**inputs, "vm_name": vm_name + "-renamed"}
        updated = ph.update(name, id_, outs, news)
        assert updated["vm_name"] == vm_name + "-renamed" and is_secret(updated["password"])

        ph.delete(name, id_, updated)
        assert vs.vm_vgpu_profiles(si, vm_name) == []
        assert ph.read(name, id_, updated)[0] == ""  # refresh: gone
        ph.delete(name, id_, updated)  # idempotent
    finally:
        destroy(si, vm_name)
        Disconnect(si)


# ------------------------------------------------------------------- the layout that fails


class ShadowProbe(ResourceProvider):
    """A provider that imports Ansible in-process, pickled BY VALUE (its module is set to
    ``__main__`` below) so that it unpickles from any cwd: only sys.path decides."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        import ansible.constants  # type: ignore[import-untyped]

        return CheckResult({"ansible": ansible.constants.__file__}, [])


ShadowProbe.__module__ = ShadowProbe.check.__module__ = "__main__"  # dill: by value


def test_old_layout_fails_in_the_provider_host() -> None:
    """``main: infra/`` made the engine start the host in infra/: the launcher looks for
    infra/.venv, and even with the right interpreter infra/ansible shadows Ansible."""
    with pytest.raises(ProviderError, match=r'virtual environment ".*/infra/\.venv" doesn'):
        ProviderHost(cwd=REPO / "infra").start()

    probe = {PROVIDER_KEY: serialize_provider(ShadowProbe())}
    python = str(REPO / ".venv" / "bin" / "python")
    with ProviderHost(cwd=REPO, python=python) as root:
        root.configure({})
        checked, _ = root.check("probe", {}, probe)
        assert checked["ansible"].endswith("site-packages/ansible/constants.py")
    with ProviderHost(cwd=REPO / "infra", python=python) as old:
        old.configure({})
        with pytest.raises(ProviderError) as err:
            old.check("probe", {}, probe)
    assert err.value.code == grpc.StatusCode.UNKNOWN
    assert err.value.line == "ModuleNotFoundError: No module named 'ansible.constants'"


def test_starting_again_stops_the_running_host() -> None:
    """The engine double starts a fresh host per operation, also on a host object a test
    opened with ``with``: the one running is stopped first, never left behind."""
    import os

    def running(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        return state != "Z"

    with ProviderHost(stack="restart") as ph:
        assert ph.proc is not None
        first = ph.proc.pid
        ph.start()
        assert ph.proc is not None and ph.proc.pid != first
        second = ph.proc.pid
        assert not running(first) and running(second)
        os.kill(second, 0)  # the new one answers signals: it is ours and alive
    assert not running(second)
