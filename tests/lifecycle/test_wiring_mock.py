"""What infra.dynamic.measure hands the dynamic resources, under Pulumi's MOCK runtime (no
engine here). The flow itself (topology -> AnsibleRun(site.yml) -> WorkloadRun per execution
environment, one after another -> exports) is tested through the entry point in
tests/pulumi/test_entry_point_mock.py."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from infra import program
from infra.config import SecretRef, from_pulumi_config
from infra.dynamic import execution_envs
from tests.pulumi.mocks import SECRET_VALUES, LabMocks, stack_raw, use_config

ANSIBLE = "pulumi-python:dynamic/gpulab:AnsibleRun"
WORKLOAD = "pulumi-python:dynamic/gpulab:WorkloadRun"


@pytest.fixture
def mocks() -> LabMocks:
    m = LabMocks()
    pulumi.runtime.set_mocks(m, project="gpulab", stack="test", preview=False)
    return m


def build(topology: str, exports: dict, **overrides: Any) -> Any:
    use_config(stack_raw(topology, **overrides))
    cfg = from_pulumi_config()
    original = pulumi.export
    pulumi.export = exports.__setitem__  # type: ignore[assignment]
    try:
        made = program.run(cfg)
    finally:
        pulumi.export = original  # type: ignore[assignment]
    return cfg, made["hosts"], made


async def value(out: Any) -> tuple[Any, bool]:
    o = pulumi.Output.from_input(out)
    return await o.future(), await o.is_secret()


def test_site_and_workload_inputs_follow_the_stack_mock(mocks: LabMocks) -> None:
    """Every value the resources get is the stack's, none a default of the classes: a suite,
    environments, lab, variables and measure id that differ from every default."""
    overrides = {
        "lab": "lab-w",
        "suite": "catalogue-smoke",
        "execution_envs": ["docker", "native"],
        "workload_variables": {"workload_run_docker_image": "gpulab/runner:test"},
        "site": {"workload_env_pip_index_url": "http://pypi.lab/simple"},
        "measure_id": "m-42",
    }

    @pulumi.runtime.test
    def body() -> Any:
        exports: dict = {}
        _cfg, hosts, made = build("local", exports, **overrides)

        async def go() -> None:
            from pulumi.runtime.stack import wait_for_rpcs

            await wait_for_rpcs(await_all_outstanding_tasks=False)
            (site,) = mocks.of_type(ANSIBLE)
            works = mocks.of_type(WORKLOAD)
            assert site.name == "lab-w-site" and site.inputs["playbook"] == "site.yml"
            assert site.inputs["variables"] == {
                "workload_env_pip_index_url": "http://pypi.lab/simple",
                "gpulab_topology": "local",
                "gpulab_lab": "lab-w",
                "gpulab_exec_envs": ["docker", "native"],
                # the pip index's name, which lab_network resolves on each host first
                "gpulab_lab_names": {"pypi.lab": "gpulab:site.workload_env_pip_index_url"},
            }
            assert len(site.inputs["playbook_digest"]) == 64  # editing a role re-runs it
            assert [h["name"] for h in site.inputs["hosts"]] == [h.name for h in hosts]
            assert sorted(w.name for w in works) == [
                "lab-w-workloads-docker",
                "lab-w-workloads-native",
            ]
            for w in works:
                env = w.name.rsplit("-", 1)[1]
                assert w.inputs["execution_env"] == env and w.inputs["arm"] == env
                assert w.inputs["suite"] == "catalogue-smoke"
                assert w.inputs["lab"] == "lab-w" and w.inputs["topology"] == "local"
                assert w.inputs["variables"] == {"workload_run_docker_image": "gpulab/runner:test"}
                assert w.inputs["triggers"] == ["m-42"]  # `gpulab measure` re-runs only these
                assert w.inputs["suite_digest"]  # editing the suite re-runs it
            assert len(made["workloads"]) == 2

        return pulumi.Output.from_input(go())

    body()


def test_vgpu_license_token_reaches_ansible_only_as_a_secret_mock(mocks: LabMocks) -> None:
    overrides = {
        "mode": "vgpu",
        "vgpu_profile": "grid_p100-4q",
        "vgpu_license_token": SecretRef("vgpu_license_token"),
        "gpu_host": None,
        "pci_device_ids": None,
        "gpus_per_vm": None,
        "gpu_bar_gb": None,
    }

    @pulumi.runtime.test
    def body() -> Any:
        exports: dict = {}
        build("vsphere-gpu", exports, **overrides)

        async def go() -> None:
            from pulumi.runtime.stack import wait_for_rpcs

            await wait_for_rpcs(await_all_outstanding_tasks=False)
            (site,) = mocks.of_type(ANSIBLE)
            token = SECRET_VALUES["vgpu_license_token"]
            secret_sig = "4dabf18193072939515e22adb298388d"  # Pulumi's secret envelope
            wrapped = site.inputs["secrets"]
            assert wrapped[secret_sig] and wrapped["value"] == {
                "nvidia_vgpu_guest_client_token": token
            }
            rest = {k: v for k, v in site.inputs.items() if k != "secrets"}
            for inputs in [rest] + [r.inputs for r in mocks.of_type(WORKLOAD)]:
                assert token not in json.dumps(inputs, default=str)
            for name in ("provision", "results"):
                plain, _ = await value(exports[name])
                assert token not in json.dumps(plain, default=str)

        return pulumi.Output.from_input(go())

    body()


def test_execution_envs_by_topology() -> None:
    from types import SimpleNamespace as NS

    def cfg(topology: str, mode: str | None = None, envs: tuple[str, ...] = ()) -> NS:
        return NS(topology=topology, args=NS(mode=mode), execution_envs=envs)

    assert execution_envs(cfg("local")) == ["native"]
    assert execution_envs(cfg("magnum-k8s")) == ["k8s"]
    assert execution_envs(cfg("vsphere-gpu", mode="bitfusion")) == ["bitfusion"]
    assert execution_envs(cfg("nova-pci", envs=("native", "docker"))) == [
        "native",
        "docker",
    ]
