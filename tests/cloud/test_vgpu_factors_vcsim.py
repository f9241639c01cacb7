"""The vGPU study factors of a vsphere-gpu arm against govmomi's vCenter simulator
(tests/parts/fixtures_vcsim.py: cluster DC0_C0's hosts have a Tesla P100 with grid_p100-*
profiles): the profile sweep (VMs per GPU, attached through the VgpuProfile provider), the
CPU-only knowledge-worker VMs and the audit that finds them, and the scheduling policy's
command and hosts (brought into effect or refused: tests/cloud/test_vgpu_policy_vcsim.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from infra.clouds import CloudError
from infra.clouds import vsphere as vs
from infra.clouds.vgpu_policy import plan_policy
from infra.clouds.vsphere_audit import audit_vsphere
from infra.clouds.vsphere_preflight import check_vms_per_gpu
from infra.dynamic.vgpu import VgpuPolicyProvider, VgpuProfileProvider

pytestmark = pytest.mark.vcsim

LAB = "kwstudy"
CLUSTER = "DC0_C0"
# P100 (16 GB): the profile sweep of the paper's kind, 1, 2 and 4 VMs per GPU.
SWEEP = (("grid_p100-16q", 1), ("grid_p100-8q", 2), ("grid_p100-4q", 4))


@pytest.fixture(scope="module")
def si(vcsim: Any) -> Iterator[Any]:
    from pyVim.connect import Disconnect

    conn = vs.connect(vcsim.host, vcsim.user, vcsim.password, port=vcsim.port, insecure=True)
    yield conn
    Disconnect(conn)


def clone(si: Any, name: str, annotation: str, host: Any = None) -> Any:
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    src = vs.find_vm(si, "DC0_C0_RP0_VM0")
    spec = vim.vm.CloneSpec(
        location=vim.vm.RelocateSpec(host=host or src.runtime.host),
        powerOn=False,
        config=vim.vm.ConfigSpec(annotation=annotation),
    )
    WaitForTask(src.CloneVM_Task(folder=src.parent, name=name, spec=spec))
    return vs.find_vm(si, name)


def destroy(si: Any, names: list[str]) -> None:
    from pyVim.task import WaitForTask

    for name in names:
        try:
            vm = vs.find_vm(si, name)
        except CloudError:
            continue
        vs.set_power(vm, name, on=False)
        WaitForTask(vm.Destroy_Task())


def creds(vcsim: Any, **extra: Any) -> dict[str, Any]:
    return {
        "server": f"{vcsim.host}:{vcsim.port}",
        "user": vcsim.user,
        "password": vcsim.password,
        "insecure": True,
        **extra,
    }


@pytest.mark.parametrize(("profile", "per_gpu"), SWEEP)
def test_profile_sweep_vms_per_gpu_checked_against_the_hosts(
    si: Any, profile: str, per_gpu: int
) -> None:
    good = check_vms_per_gpu(si, cluster=CLUSTER, profile=profile, per_gpu=per_gpu)
    assert [r.passed for r in good] == [True], good
    bad = check_vms_per_gpu(si, cluster=CLUSTER, profile=profile, per_gpu=per_gpu * 2)
    assert not bad[0].passed
    assert f"puts {per_gpu} VM(s) on a GPU here" in bad[0].detail
    assert f"says {per_gpu * 2}" in bad[0].detail


def test_profile_sweep_attaches_each_profile_to_its_vms_on_one_gpu_host(
    si: Any, vcsim: Any
) -> None:
    host = vs.find_vm(si, "DC0_C0_RP0_VM0").runtime.host
    made: list[str] = []
    try:
        for profile, per_gpu in SWEEP:
            fb = profile.split("-")[1]
            names = [f"{LAB}-{fb}-gpu-{i}" for i in range(per_gpu)]
            for name in names:
                vm = clone(si, name, f"gpulab lab={LAB} topology=vsphere-gpu mode=vgpu", host)
                made.append(name)
                res = VgpuProfileProvider().create(
                    creds(vcsim, vm_uuid=vm.config.uuid, vm_name=name, profile=profile)
                )
                assert res.outs["profiles"] == [profile]
            got = {n: vs.vm_vgpu_profiles(si, n) for n in names}
            assert got == {n: [profile] for n in names}
            print(profile, per_gpu, "VM(s) per GPU:", got)
        assert len(made) == 1 + 2 + 4
    finally:
        destroy(si, made)


def test_knowledge_worker_vms_are_cpu_only_and_the_audit_lists_every_leftover(si: Any) -> None:
    from pyVmomi import vim

    gpu = f"{LAB}-gpu-0"
    kws = [f"{LAB}-kw-{i}" for i in range(3)]
    made: list[str] = []
    folder = None
    try:
        made.append(gpu)
        vm = clone(si, gpu, f"gpulab lab={LAB} topology=vsphere-gpu mode=vgpu")
        vs.attach_vgpu(si, gpu, "grid_p100-8q", uuid=vm.config.uuid)
        for name in kws:
            made.append(name)
            clone(si, name, f"gpulab lab={LAB} topology=vsphere-gpu role=knowledge-worker")
        assert vs.vm_vgpu_profiles(si, gpu) == ["grid_p100-8q"]
        assert {n: vs.vm_vgpu_profiles(si, n) for n in kws} == {n: [] for n in kws}
        dc = next(
            e for e in si.RetrieveContent().rootFolder.childEntity if isinstance(e, vim.Datacenter)
        )
        folder = dc.vmFolder.CreateFolder(f"{LAB}-vms")
        rows = audit_vsphere(si, LAB)
        for r in rows:
            print(f"{'PASS' if r.passed else 'FAIL'} | {r.name} | {r.detail} | {r.fix}")
        failing = {r.name for r in rows if not r.passed}
        assert failing == {f"vsphere VM {n}" for n in made} | {f"vsphere VM folder {LAB}-vms"}
    finally:
        destroy(si, made)
        if folder is not None:
            from pyVim.task import WaitForTask

            WaitForTask(folder.Destroy_Task())
    after = audit_vsphere(si, LAB)
    assert all(r.passed for r in after), after


@pytest.mark.parametrize(
    ("policy", "value"),
    [("best-effort", "0x00"), ("equal-share", "0x01"), ("fixed-share", "0x11")],
)
def test_policy_plan_is_the_esxcli_command_for_the_clusters_gpu_hosts(
    si: Any, policy: str, value: str
) -> None:
    """What a policy means on the cluster: its esxcli command and the hosts it is for (what
    VgpuPolicy then brings into effect or refuses: tests/cloud/test_vgpu_policy_vcsim.py)."""
    plan = plan_policy(si, CLUSTER, policy, "grid_p100-4q")
    print(plan)
    assert plan.command == (
        f'esxcli system module parameters set -m nvidia -p "NVreg_RegistryDwords=RmPVMRL={value}"'
    )
    assert plan.registry_dword == f"RmPVMRL={value}"
    hosts = [h.name for h in vs.gpu_hosts(si, cluster=CLUSTER)]
    assert hosts and plan.hosts == hosts
    assert plan.applied == [] and plan.in_effect is None


def test_policy_for_a_profile_no_host_supports_is_one_line(vcsim: Any) -> None:
    props = creds(vcsim, cluster=CLUSTER, policy="fixed-share", profile="grid_t4-4q", apply=False)
    with pytest.raises(CloudError, match="no host of cluster DC0_C0 has an NVIDIA GPU supporting"):
        VgpuPolicyProvider().create(props)


def test_gpulab_preflight_shows_the_policy_command_and_vms_per_gpu(
    vcsim: Any, tmp_path: Any
) -> None:
    """`gpulab preflight` on a vGPU arm's stack, as a user runs it against vCenter."""
    from tests.cloud.test_cli_vsphere import gpulab, vgpu_stack

    stack = vgpu_stack(
        tmp_path / "Pulumi.arm.yaml",
        vcsim,
        vgpu_profile="grid_p100-8q",
        vgpu_vms_per_gpu=2,
        vgpu_policy="fixed-share",
        kw_vm_count=32,
    )
    p = gpulab("preflight", str(stack), password=vcsim.password)
    out = " ".join(p.stdout.split())
    assert "vgpu VMs per GPU grid_p100-8q" in out and "2 VM(s) per GPU" in out
    # gpulab has seen none of the hosts boot: the policy is not known to be in effect, and
    # without gpulab:vgpu_policy_apply the lab would be refused, host by host
    assert p.returncode == 1, p.stdout + p.stderr
    for host in ("DC0_C0_H0", "DC0_C0_H1", "DC0_C0_H2"):
        assert f"vgpu policy fixed-share on {host}" in out
    assert "not in effect (running: not known; configured: best-effort;" in out
    assert "set gpulab:vgpu_policy_apply: true" in out
    applied = vgpu_stack(
        tmp_path / "Pulumi.apply.yaml",
        vcsim,
        vgpu_profile="grid_p100-8q",
        vgpu_policy="fixed-share",
        vgpu_policy_apply=True,
    )
    p = gpulab("preflight", str(applied), password=vcsim.password)
    out = " ".join(p.stdout.split())
    assert "NVreg_RegistryDwords=RmPVMRL=0x11" in out and "reboots the" in out
    # the simulator's cluster runs VMs: up would have to reboot hosts that gpulab may not empty
    assert "powered-on VMs are on it:" in out and "DC0_C0_RP0_VM" in out and p.returncode == 1
    bad = vgpu_stack(
        tmp_path / "Pulumi.bad.yaml", vcsim, vgpu_profile="grid_p100-8q", vgpu_vms_per_gpu=4
    )
    p = gpulab("preflight", str(bad), password=vcsim.password)
    assert p.returncode == 1 and "puts 2 VM(s) on a GPU here" in " ".join(p.stdout.split())
