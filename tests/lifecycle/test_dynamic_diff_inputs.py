"""Every input of each dynamic resource changes its diff (engine double: no Pulumi runtime).

The inputs are not a hand list: each resource class is built once with the engine's
``Resource.__init__`` replaced by a double that records the property map it would send, and
every key of that map that is not one of the provider's outputs is an input. Changing any one of
them (and nothing else) must make ``diff`` report a change; changing none must not. A new
constructor argument that never reaches the property map fails here too.
"""

from __future__ import annotations

import inspect
from typing import Any

import pulumi
import pulumi.dynamic
import pytest

from infra.dynamic import ansible_run, vgpu, workload_run
from infra.dynamic.ansible_run import AnsibleRun, AnsibleRunProvider
from infra.dynamic.vgpu import VgpuPolicy, VgpuPolicyProvider, VgpuProfile, VgpuProfileProvider
from infra.dynamic.workload_run import WorkloadRun, WorkloadRunProvider

HOST = {"name": "gpu-0", "address": "10.0.0.5", "user": "ubuntu", "groups": ["gpu"]}
# Constructor arguments that are not inputs: the resource name and Pulumi's options.
NOT_INPUTS = {"self", "name", "opts"}

CASES: dict[str, dict[str, Any]] = {
    "AnsibleRun": {
        "cls": AnsibleRun,
        "provider": AnsibleRunProvider,
        "outputs": set(ansible_run.OUTPUTS),
        "args": {
            "hosts": [HOST],
            "playbook": "site.yml",
            "variables": {"cuda_toolkit_version": "12.4"},
            "triggers": ["r1"],
        },
    },
    "WorkloadRun": {
        "cls": WorkloadRun,
        "provider": WorkloadRunProvider,
        "outputs": set(workload_run.OUTPUTS),
        "args": {
            "hosts": [HOST],
            "suite": "smoke",
            "execution_env": "docker",
            "arm": "docker",
            "topology": "ironic-bm",
            "lab": "lab-a",
            "variables": {"workload_run_image": "gpulab/runner:1"},
            "results_dir": "results/lab-a",
            "triggers": ["r1"],
        },
    },
    "VgpuProfile": {
        "cls": VgpuProfile,
        "provider": VgpuProfileProvider,
        "outputs": {"profiles"},
        "args": {
            "vm_uuid": "4210b2a1-0000-0000-0000-000000000001",
            "vm_name": "gpu-vm-0",
            "profile": "grid_p100-4q",
            "server": "vcenter.example:443",
            "user": "administrator@vsphere.local",
            "password": "pw-one",
            "insecure": False,
        },
    },
    "VgpuPolicy": {
        "cls": VgpuPolicy,
        "provider": VgpuPolicyProvider,
        "outputs": {"plan", "in_effect"},
        "args": {
            "cluster": "gpu-cluster",
            "policy": "best-effort",
            "profile": "grid_p100-4q",
            "apply": False,
            "timeout_s": 600,
            "check_id": "20261127T010203.000000Z",
            "server": "vcenter.example:443",
            "user": "administrator@vsphere.local",
            "password": "pw-one",
            "insecure": False,
        },
    },
}


def props_sent(cls: type, args: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The property map ``cls`` hands the engine (engine double: records it, registers nothing)."""
    sent: dict[str, Any] = {}

    def record(
        self: Any, provider: Any, name: str, props: dict[str, Any], opts: Any = None
    ) -> None:
        sent.update(props)

    monkeypatch.setattr(pulumi.dynamic.Resource, "__init__", record)
    cls("r", **args)
    return sent


def changed(value: Any) -> Any:
    """A different value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "-2"
    if isinstance(value, list):
        return [*value, "another"]
    if isinstance(value, dict):
        return {**value, "another": 1}
    if value is None:
        return "set"
    raise AssertionError(f"no changed value for {value!r}")


def inputs_of(case: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    """(inputs as sent, the stored state after a run: inputs plus outputs)."""
    c = CASES[case]
    sent = props_sent(c["cls"], c["args"], monkeypatch)
    inputs = {k: v for k, v in sent.items() if k not in c["outputs"]}
    for key, value in inputs.items():
        if value is None:  # e.g. WorkloadRun's suite digest of a suite that is not on disk
            inputs[key] = f"{key}-value"
    state = {**inputs, **{k: f"{k}-out" for k in c["outputs"]}}
    return inputs, state


def declared(case: str) -> set[str]:
    params = inspect.signature(CASES[case]["cls"].__init__).parameters
    return set(params) - NOT_INPUTS


@pytest.mark.parametrize("case", list(CASES))
def test_every_constructor_argument_reaches_the_inputs(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs, _ = inputs_of(case, monkeypatch)
    assert declared(case) <= set(inputs)
    assert set(CASES[case]["args"]) <= declared(case), "the case sets an argument that is gone"


def every_input() -> list[tuple[str, str]]:
    """(resource, input) for every input each resource sends, found the same way as the test."""
    mp = pytest.MonkeyPatch()
    try:
        return [(case, key) for case in CASES for key in sorted(inputs_of(case, mp)[0])]
    finally:
        mp.undo()


@pytest.mark.parametrize(("case", "key"), every_input())
def test_each_input_alone_changes_the_diff(
    case: str, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs, state = inputs_of(case, monkeypatch)
    provider = CASES[case]["provider"]()
    if case in ("AnsibleRun", "WorkloadRun"):
        # What a run stores for its secrets: a salted digest, never the secrets.
        inputs["secrets"] = {"token": "t-1"}
        salt = ansible_run.new_salt()
        state.update(
            secrets=None,
            secrets_salt=salt,
            secrets_digest=ansible_run.secrets_digest(inputs["secrets"], salt),
        )
    assert provider.diff("id", state, dict(inputs)).changes is False
    news = dict(inputs, **{key: changed(inputs[key])})
    diff = provider.diff("id", state, news)
    assert diff.changes is True, f"{case}: a change of {key!r} alone is not seen"
    if case == "VgpuProfile":
        assert (key in diff.replaces) == (key in vgpu.REPLACE_ON)


def test_every_dynamic_resource_has_a_case() -> None:
    """A new dynamic resource under infra/dynamic/ fails here until its inputs are covered."""
    import importlib
    import pkgutil

    import infra.dynamic

    found = set()
    for info in pkgutil.iter_modules(infra.dynamic.__path__):
        module = importlib.import_module(f"infra.dynamic.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, pulumi.dynamic.Resource)
                and obj.__module__ == module.__name__
                and not obj.__name__.startswith("_")  # a base class, not a resource
            ):
                found.add(obj.__name__)
    assert found == set(CASES)


def test_the_inputs_found_are_the_resources_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property maps are what the modules document as inputs (so the list above is real)."""
    found = {case: set(inputs_of(case, monkeypatch)[0]) for case in CASES}
    assert found["AnsibleRun"] == {*ansible_run.RUN_INPUTS, "secrets"}
    assert found["WorkloadRun"] == {*workload_run.RUN_INPUTS, "secrets"}
    assert found["VgpuProfile"] == {*vgpu.REPLACE_ON, *vgpu.UPDATE_ON}
