"""The site run's inputs (the ``AnsibleRun`` of playbooks/site.yml) are a function of the
stack config and of the cloud's outputs only: two builds of the same config, or a build whose
config differs only in what a measurement changes (``measure_id``, ``workload_variables``),
hand the site run the same inputs, so a measurement-only ``up`` never re-runs the site play.

Mocked: the Pulumi engine and the OpenStack provider (Pulumi's mock runtime, no parts). The
cloud double gives every resource outputs derived from its name, as a real cloud keeps a
port's fixed IP and a floating IP's address for the life of the resource; LabMocks' own
outputs come from a registration counter, and the registration order differs from one run of
the program to the next.

``playbook_digest`` is checked on a copy of playbooks/ (this working tree may be edited while
the tests run): it covers only the files site.yml uses, so an edit of the workload play or of
its role does not re-run the site play either.

The last test drives the end-to-end engine double (tests/e2e/engine.py) twice with a
recording provider in place of the real provider host: a cloud resource already in its state
keeps its outputs, so the second, measurement-only ``up`` leaves the site run ``same``.
"""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.runtime.stack import wait_for_rpcs

from infra import program
from infra.config import from_pulumi_config
from infra.dynamic.ansible_run import PLAYBOOKS, RUN_INPUTS, play_digest, play_files
from tests.pulumi.mocks import LabMocks, stack_raw, use_config

DYNAMIC = "pulumi-python:dynamic"
MEASUREMENT_ONLY = {
    "measure_id": "again",
    "workload_variables": {"workload_run_suite": "smoke", "workload_run_expect_device": "gpu"},
}


def _octet(name: str) -> int:
    return 10 + zlib.crc32(name.encode()) % 240


class StableCloudMocks(LabMocks):
    """LabMocks whose addresses depend on the resource's name, not on registration order."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        rid, outs = super().new_resource(args)
        if args.typ == "openstack:networking/port:Port":
            outs["allFixedIps"] = [f"10.42.0.{_octet(args.name)}"]
        elif args.typ == "openstack:networking/floatingIp:FloatingIp":
            outs["address"] = f"198.51.100.{_octet(args.name)}"
        return rid, outs


def program_dynamic_inputs(raw: dict[str, Any], stack: str = "stable") -> dict[str, Any]:
    """Run the whole program with this stack config under fresh mocks; the dynamic resources'
    inputs by name."""
    mocks = StableCloudMocks()
    pulumi.runtime.set_mocks(mocks, project="gpulab", stack=stack, preview=False)
    use_config(raw)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> Any:
        cfg = from_pulumi_config()
        original = pulumi.export
        pulumi.export = lambda *_: None
        try:
            program.run(cfg)
        finally:
            pulumi.export = original
        return pulumi.Output.from_input(wait_for_rpcs(await_all_outstanding_tasks=False))

    run()
    return {r.name: r.inputs for r in mocks.resources if r.typ.startswith(DYNAMIC)}


def site_inputs(topology: str, **overrides: Any) -> dict[str, Any]:
    """The site run's inputs of the whole program of an example stack."""
    made = program_dynamic_inputs(stack_raw(topology, **overrides))
    [site] = [inputs for name, inputs in made.items() if name.endswith("-site")]
    return dict(site)


@pytest.mark.parametrize("topology", ["ironic-bm", "nova-pci"])
def test_site_inputs_equal_for_the_same_config_and_for_a_measurement_only_change(
    topology: str,
) -> None:
    first = site_inputs(topology)
    assert set(RUN_INPUTS) - {"triggers"} <= set(first), sorted(first)
    assert first["hosts"] and all(h["vars"]["private_address"] for h in first["hosts"])
    again = site_inputs(topology)
    measured = site_inputs(topology, **MEASUREMENT_ONLY)
    for other in (again, measured):
        # playbook_digest: the files of playbooks/ as they are now (this working tree may be
        # edited between two builds); its stability is checked on a copy below
        changed = sorted(
            k
            for k in set(first) | set(other)
            if k != "playbook_digest" and first.get(k) != other.get(k)
        )
        assert changed == [], {k: (first.get(k), other.get(k)) for k in changed}


def test_site_digest_is_stable_and_covers_only_what_site_yml_uses(tmp_path: Path) -> None:
    """On a copy of playbooks/: the digest is the same twice; an edit of a role only
    workloads.yml uses (workload_run) or of workloads.yml leaves site.yml's digest alone and
    changes workloads.yml's; an edit of a role site.yml uses (gpu_facts, named in site.yml;
    workload_env, named only in vars/exec_envs.yml) or of vars/ changes it; a role named only
    in a comment is not taken."""
    tree = tmp_path / "playbooks"
    shutil.copytree(PLAYBOOKS, tree, ignore=shutil.ignore_patterns("__pycache__"))
    site, workloads = tree / "site.yml", tree / "workloads.yml"

    def digests() -> tuple[str, str]:
        return play_digest(site, tree), play_digest(workloads, tree)

    def touch(rel: str) -> None:
        f = tree / rel
        f.write_text(f.read_text() + "\n# edited\n")

    s0, w0 = digests()
    assert digests() == (s0, w0)
    taken = {str(f.relative_to(tree)) for f in play_files(site, tree)}
    assert "workloads.yml" not in taken and "validate.yml" not in taken
    assert not any(t.startswith("roles/workload_run/") for t in taken), sorted(taken)
    assert "roles/workload_env/tasks/main.yml" in taken and "vars/exec_envs.yml" in taken

    touch("roles/workload_run/tasks/main.yml")
    s1, w1 = digests()
    assert s1 == s0 and w1 != w0
    touch("workloads.yml")
    s2, w2 = digests()
    assert s2 == s0 and w2 != w1
    for rel in ("roles/gpu_facts/tasks/main.yml", "roles/workload_env/tasks/main.yml"):
        touch(rel)
        s3, _ = digests()
        assert s3 != s2, rel
        s2 = s3
    touch("vars/exec_envs.yml")
    assert digests()[0] != s2


def test_site_inputs_follow_a_site_change() -> None:
    """The comparison can fail: a change of ``gpulab:site`` reaches the site run's inputs."""
    first = site_inputs("ironic-bm")
    changed = site_inputs("ironic-bm", site={"gpulab_site_note": "changed"})
    assert first["variables"] != changed["variables"]


class RecordingProvider:
    """Stands in for the real provider host: check passes the inputs through, diff reports a
    change of any of RUN_INPUTS, create/update run nothing and return the inputs as outputs
    with an empty successful summary."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, str]] = []

    def configure(self, config: dict[str, str]) -> None:
        pass

    def check(self, name: str, olds: dict[str, Any], news: dict[str, Any]) -> tuple[Any, list]:  # type: ignore[type-arg]
        return dict(news), []

    def create(self, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.ops.append(("create", name))
        return f"{name}-id", {**inputs, "status": "successful", "summary": {}, "facts": {}}

    def diff(
        self, name: str, rid: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> dict[str, Any]:
        return {"changes": any(olds.get(k) != news.get(k) for k in RUN_INPUTS)}

    def update(
        self, name: str, rid: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> dict[str, Any]:
        self.ops.append(("update", name))
        return {**news, "status": "successful", "summary": {}, "facts": {}}

    def delete(self, name: str, rid: str, outs: dict[str, Any]) -> None:
        self.ops.append(("delete", name))


@pytest.mark.integration
def test_engine_double_keeps_cloud_outputs_so_a_measurement_only_up_keeps_the_site_run() -> None:
    from tests.e2e.engine import Engine

    provider = RecordingProvider()
    engine = Engine(provider, ["192.0.2.10", "192.0.2.11"], log=lambda _: None)
    raw = stack_raw("ironic-bm", lab="stable")
    first = engine.up("ironic-bm", raw)
    assert first.error is None, first.error
    ports = {k: r.outs for k, r in engine.state.items() if k[0].endswith("port:Port")}
    assert len(ports) == 2
    second = engine.up("ironic-bm", dict(raw, **MEASUREMENT_ONLY))
    assert second.error is None, second.error
    ops = {name: op for name, op, _ in second.steps}
    assert ops["stable-site"] == "same", (ops, engine.changed_inputs)
    assert ops["stable-workloads-native"] == "update", ops
    assert engine.changed_inputs == {"stable-workloads-native": ["triggers", "variables"]}
    assert {k: r.outs for k, r in engine.state.items() if k[0].endswith("port:Port")} == ports
    assert [o for o in provider.ops if o[0] == "create"] == [
        ("create", "stable-site"),
        ("create", "stable-workloads-native"),
    ]
    engine.down()
