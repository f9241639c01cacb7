"""The vGPU scheduling policy's vocabulary (infra/clouds/vgpu_policy.py): RmPVMRL values as
NVIDIA documents them, the nvidia module's option string kept whole around the policy, GPUs
that cannot change it, and the records' sharing that states the factors
(workloads/vgpu_factors.py). No vCenter: plain values, and gpu_hosts stood in for."""

from __future__ import annotations

from typing import Any

import pytest

from infra.clouds import CloudError
from infra.clouds import vgpu_policy as vp
from infra.clouds.vsphere import GpuDevice, GpuHost
from workloads.vgpu_factors import VgpuFactors, parse


@pytest.mark.parametrize(
    ("value", "policy"),
    [
        ("0x00", "best-effort"),
        ("0x01", "equal-share"),
        ("0x11", "fixed-share"),
        ("0x00030001", "equal-share"),  # equal share, 3 ms time slice
        ("0x001E0011", "fixed-share"),  # fixed share, 30 ms
        ("17", "fixed-share"),
        ("0x21", None),
        ("0x00030000", None),  # best effort takes no time slice
        ("0x01000001", None),  # bits no documented value has
        ("fair", None),
    ],
)
def test_rmpvmrl_values_as_nvidia_documents_them(value: str, policy: str | None) -> None:
    assert vp.policy_of_value(value) == policy


def test_option_strings_keep_every_other_option_around_the_policy() -> None:
    assert vp.policy_of_options("") == "best-effort"  # the driver's default
    assert vp.policy_of_options("NVreg_RegistryDwords=RmPVMRL=0x11") == "fixed-share"
    assert vp.policy_of_options("NVreg_RegistryDwords=RmPVMRL=0x42") is None
    other = 'NVreg_EnableGpuFirmware=0 NVreg_RegistryDwords="RmFoo=0x1;RmPVMRL=0x00"'
    assert vp.policy_of_options(other) == "best-effort"
    got = vp.with_policy(other, "equal-share")
    assert got == "NVreg_EnableGpuFirmware=0 NVreg_RegistryDwords=RmFoo=0x1;RmPVMRL=0x01"
    assert vp.policy_of_options(got) == "equal-share"
    assert vp.with_policy(got, "equal-share") == got  # idempotent: no change, no reboot
    assert vp.esxcli_command("fixed-share") == (
        'esxcli system module parameters set -m nvidia -p "NVreg_RegistryDwords=RmPVMRL=0x11"'
    )
    with pytest.raises(ValueError, match="not one of best-effort, equal-share, fixed-share"):
        vp.with_policy("", "round-robin")


def _host(name: str, profiles: list[str], device: str) -> GpuHost:
    return GpuHost(name, "c1", [GpuDevice("0000:3b:00.0", device, 0x13F2)], profiles)


def test_maxwell_gpus_cannot_change_the_policy_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    hosts = [
        _host("esx-1", ["grid_p100-4q", "grid_p100-16q"], "GP100GL [Tesla P100 PCIe 16GB]"),
        _host("esx-2", ["grid_m60-1q", "grid_m60-8q"], "GM204GL [Tesla M60]"),
    ]

    def fake_gpu_hosts(_si: Any, cluster: str | None = None) -> list[GpuHost]:
        return hosts

    monkeypatch.setattr(vp, "gpu_hosts", fake_gpu_hosts)
    plan = vp.plan_policy(None, "c1", "equal-share", "grid_p100-4q")
    assert plan.hosts == ["esx-1"] and plan.registry_dword == "RmPVMRL=0x01"
    with pytest.raises(CloudError) as exc:
        vp.plan_policy(None, "c1", "fixed-share")
    assert str(exc.value) == (
        "ESXi host esx-2: vGPU policy fixed-share: its GPUs (GM204GL [Tesla M60]) are Maxwell, "
        "whose scheduling policy cannot be changed (Pascal and later)"
    )
    with pytest.raises(CloudError, match="vGPU policy 'fair': not one of"):
        vp.plan_policy(None, "c1", "fair")


def test_the_records_sharing_states_the_factors_and_reads_back() -> None:
    f = VgpuFactors("grid_p100-8q", "equal-share", 2, 32)
    assert f.sharing() == "vgpu:grid_p100-8q.equal-share.2-per-gpu.kw32"
    assert parse(f.sharing()) == f
    assert f.without_kw() == VgpuFactors("grid_p100-8q", "equal-share", 2, 0)
    assert parse("vgpu:grid_t4-16q") == VgpuFactors("grid_t4-16q")
    assert parse("vgpu:grid_a100-3-20c.kw96") == VgpuFactors("grid_a100-3-20c", None, None, 96)
    for bad in ("vgpu", "exclusive", "vgpu:grid_p100-8q.kw0", "vgpu:grid_p100-8q.kw3.kw4",
                "vgpu:grid_p100-8q.kw3.fixed-share", "vgpu:a b", None, 3):  # fmt: skip
        assert parse(bad) is None, bad
