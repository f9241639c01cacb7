"""Mock-runtime tests (Pulumi engine and cloud providers are test doubles): every example
stack exports topology, lab and hosts in the host-contract shape, and provision and results;
no output holds a secret in plain text; how long each topology takes to evaluate under the mocks."""

from __future__ import annotations

import json
import time
from typing import Any

import pulumi
import pytest

from infra.hosts import GPU_PATHS, Host
from tests.pulumi.helpers import TIMINGS, Exports, check, resolve, run_stack, settle
from tests.pulumi.mocks import (
    MAGNUM_KUBECONFIG,
    SECRET_VALUES,
    STACKS,
    LabMocks,
    SecretRef,
)

HOST_KEYS = {"name", "address", "ssh_user", "groups", "gpu_path", "ssh_port", "vars", "identity"}
SECRET_SIG = "4dabf18193072939515e22adb298388d"
EXPECTED = {  # topology -> (number of hosts, gpu paths)
    "ironic-bm": (2, {"whole-machine"}),
    "nova-pci": (2, {"pci-passthrough"}),
    # the API host on the controller only: the cluster's nodes are no inventory hosts
    "magnum-k8s": (1, {"none"}),
    "vsphere-gpu": (2, {"pci-passthrough"}),
    "local": (1, {"local"}),
}
# Plaintext that must only ever travel inside Pulumi's secret envelope.
NEEDLES = [*SECRET_VALUES.values(), "MOCKPRIVATEKEY"]


def _plain_leaks(value: Any, inside_secret: bool = False) -> list[str]:
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return _plain_leaks(value.get("value"), True)
        return [x for v in value.values() for x in _plain_leaks(v, inside_secret)]
    if isinstance(value, list | tuple):
        return [x for v in value for x in _plain_leaks(v, inside_secret)]
    if isinstance(value, str) and not inside_secret:
        return [n for n in NEEDLES if n in value]
    return []


@pytest.mark.parametrize("topology", sorted(STACKS))
def test_example_stack_mock_exports_hosts_shape(topology: str, pulumi_mocks: LabMocks) -> None:
    @pulumi.runtime.test
    def body() -> Any:
        exports = Exports()
        start = time.perf_counter()
        cfg, component, _ = run_stack(topology, exports)

        async def go() -> None:
            await settle()
            hosts, _ = await resolve(exports["hosts"])
            TIMINGS[topology] = time.perf_counter() - start
            # no credential: magnum-k8s's kubeconfig is a file, never an output
            assert sorted(exports) == sorted(["topology", "lab", "hosts", "provision", "results"])
            assert exports["topology"] == topology and exports["lab"] == cfg.lab
            count, paths = EXPECTED[topology]
            assert len(hosts) == count
            assert {h["gpu_path"] for h in hosts} == paths
            for h in hosts:
                assert set(h) == HOST_KEYS
                assert isinstance(h["address"], str) and h["address"]
                assert h["gpu_path"] in GPU_PATHS and h["ssh_port"] == 22
                assert h["ssh_user"] == cfg.ssh_user and h["groups"]
                assert h["vars"]["lab"] == cfg.lab
                assert Host.from_output(h).to_output() == h  # round-trips the contract
                # what identifies the machine in its cloud (server id, VM UUID, cluster id)
                managed = topology != "local" and h["vars"].get("managed_by_gpulab") is not False
                assert bool(h["identity"]) == managed, h
            names = [h["name"] for h in hosts]
            assert len(set(names)) == len(names)
            typ = pulumi_mocks.resources[0].typ
            assert typ.startswith("gpulab:topology:") and component is not None
            if topology == "local":  # nothing in any cloud: the component, Ansible, workloads
                assert sorted(r.typ for r in pulumi_mocks.resources) == [
                    "gpulab:topology:LocalLab",
                    "pulumi-python:dynamic/gpulab:AnsibleRun",
                    "pulumi-python:dynamic/gpulab:WorkloadRun",
                ]
                assert pulumi_mocks.calls == []

        return check(go())

    body()
    print(f"\n[mock-eval] {topology}: {TIMINGS[topology] * 1000:.0f} ms")
    assert TIMINGS[topology] < 10


@pytest.mark.parametrize(
    ("topology", "overrides"),
    [
        ("nova-pci", {"os_password": SecretRef("os_password")}),
        ("magnum-k8s", {"os_password": SecretRef("os_password")}),
        ("vsphere-gpu", {}),
        (
            "vsphere-gpu",
            {
                "mode": "vgpu",
                "vgpu_profile": "grid_p100-4q",
                "vgpu_license_token": SecretRef("vgpu_license_token"),
                "gpu_host": None,
                "pci_device_ids": None,
                "gpus_per_vm": None,
                "gpu_bar_gb": None,
            },
        ),
    ],
)
def test_no_output_or_input_holds_a_secret_in_plain_text_mock(
    topology: str, overrides: dict[str, Any], pulumi_mocks: LabMocks
) -> None:
    @pulumi.runtime.test
    def body() -> Any:
        exports = Exports()
        cfg, _, _ = run_stack(topology, exports, **overrides)

        async def go() -> None:
            await settle()
            for name, value in exports.items():
                plain, secret = await resolve(value)
                assert not secret, name
                text = json.dumps(plain)
                assert not [n for n in NEEDLES if n in text], name
            # every secret read from config is an Output secret
            for key in ("os_password", "vsphere_password", "vgpu_license_token"):
                value = getattr(cfg.args, key, None)
                if value is not None:
                    assert isinstance(value, pulumi.Output) and await value.is_secret()
            # resources get secrets only inside Pulumi's secret envelope
            holders = set()
            for r in pulumi_mocks.resources:
                assert _plain_leaks(r.inputs) == [], (r.typ, r.name)
                if any(SECRET_SIG in json.dumps(v) for v in r.inputs.values()):
                    holders.add(r.typ)
            assert holders <= {
                "pulumi:providers:openstack",
                "pulumi:providers:vsphere",
                "pulumi-python:dynamic/gpulab:VgpuProfile",  # the vGPU attach
                "pulumi-python:dynamic/gpulab:AnsibleRun",  # license token
                MAGNUM_KUBECONFIG,  # the OpenStack password it connects with
            }

        return check(go())

    body()
