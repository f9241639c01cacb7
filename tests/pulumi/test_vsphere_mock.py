"""Mock-runtime tests (Pulumi engine and vSphere provider are test doubles) of the
vsphere-gpu topology in its three modes."""

from __future__ import annotations

import base64
from typing import Any

import dill
import pulumi
import pytest
import yaml

from infra.topologies.vsphere_gpu.build import mmio_size_gb
from tests.pulumi.helpers import check, run_stack, settle
from tests.pulumi.mocks import SECRET_VALUES, LabMocks, SecretRef

VM = "vsphere:index/virtualMachine:VirtualMachine"
# The vGPU resources' own types (pulumi stack shows gpulab:VgpuProfile, gpulab:VgpuPolicy), and
# the SDK's default dynamic type they had before, which their alias names.
VGPU_PROFILE = "pulumi-python:dynamic/gpulab:VgpuProfile"
VGPU_POLICY = "pulumi-python:dynamic/gpulab:VgpuPolicy"
SDK_DEFAULT = "pulumi-python:dynamic:Resource"
VGPU_TYPES = {VGPU_PROFILE, VGPU_POLICY, SDK_DEFAULT}  # a vGPU resource, of either type
SECRET_SIG = "4dabf18193072939515e22adb298388d"  # pulumi.runtime.rpc._special_sig_key


@pytest.mark.parametrize(
    ("gpus", "bar", "size"),
    [
        (1, 16, 32),
        (2, 16, 64),
        (3, 16, 64),
        (4, 16, 128),
        (1, 32, 64),
        (2, 64, 256),
        (1, 12, 16),
        (8, 80, 1024),
    ],
)
def test_mmio_size_is_next_power_of_two_over_total_bar(gpus: int, bar: int, size: int) -> None:
    assert mmio_size_gb(gpus, bar) == size


@pulumi.runtime.test
def test_vsphere_passthrough_mock_reservation_efi_mmio_devices(pulumi_mocks: LabMocks) -> Any:
    _, _, hosts = run_stack("vsphere-gpu")

    async def go() -> None:
        await settle()
        vms = pulumi_mocks.of_type(VM)
        assert [v.name for v in vms] == ["vs-lab-gpu-0", "vs-lab-gpu-1"]
        for vm, dev in zip(vms, ["0000:3b:00.0", "0000:d8:00.0"], strict=True):
            i = vm.inputs
            assert i["memory"] == 65536 and i["memoryReservation"] == 65536
            assert i["memoryReservationLockedToMax"] is True
            assert i["firmware"] == "efi"
            assert i["extraConfig"] == {
                "pciPassthru.use64bitMMIO": "TRUE",
                "pciPassthru.64bitMMIOSizeGB": "32",
            }
            assert i["pciDeviceIds"] == [dev]
            assert i["hostSystemId"] == "host-21"
            assert i["resourcePoolId"] == "resgroup-1" and i["datastoreId"] == "datastore-1"
            assert i["numCpus"] == 8 and i["guestId"] == "ubuntu64Guest"
            assert i["networkInterfaces"] == [{"networkId": "network-1", "adapterType": "vmxnet3"}]
            assert i["disks"] == [{"label": "disk0", "size": 40, "thinProvisioned": True}]
            clone = i["clone"]
            assert clone["templateUuid"] == "4217d2f0-template-uuid"
            assert clone["customize"]["linuxOptions"] == {
                "hostName": vm.name,
                "domain": "gpulab.local",
            }
            assert clone["customize"]["networkInterfaces"] == [{}]
            assert "lab=vs-lab" in i["annotation"]
        assert not {r.typ for r in pulumi_mocks.resources} & VGPU_TYPES
        looked_up = {t.split(":")[-1]: a.get("name") for t, a in pulumi_mocks.calls}
        assert looked_up == {
            "getDatacenter": "DC0",
            "getComputeCluster": "DC0_C0",
            "getDatastore": "LocalDS_0",
            "getNetwork": "VM Network",
            "getVirtualMachine": "ubuntu-22.04-template",
            "getHost": "DC0_C0_H0",
        }
        assert [h.gpu_path for h in hosts] == ["pci-passthrough"] * 2
        [provider] = pulumi_mocks.of_type("pulumi:providers:vsphere")
        assert provider.inputs["vsphereServer"] == "vcenter.example.org"

    return check(go())


@pulumi.runtime.test
def test_vsphere_passthrough_mock_two_gpus_per_vm_split_in_order(pulumi_mocks: LabMocks) -> Any:
    ids = ["0000:3b:00.0", "0000:5e:00.0", "0000:86:00.0", "0000:af:00.0"]
    run_stack("vsphere-gpu", gpus_per_vm=2, pci_device_ids=ids, gpu_bar_gb=32)

    async def go() -> None:
        await settle()
        vms = pulumi_mocks.of_type(VM)
        assert [v.inputs["pciDeviceIds"] for v in vms] == [ids[:2], ids[2:]]
        assert {v.inputs["extraConfig"]["pciPassthru.64bitMMIOSizeGB"] for v in vms} == {"128"}

    return check(go())


@pulumi.runtime.test
def test_vsphere_vgpu_mock_dynamic_profile_resource(pulumi_mocks: LabMocks) -> Any:
    over = {k: None for k in ("gpu_host", "pci_device_ids", "gpus_per_vm", "gpu_bar_gb")}
    _, comp, hosts = run_stack(
        "vsphere-gpu",
        mode="vgpu",
        vgpu_profile="grid_p100-4q",
        vgpu_license_token=SecretRef("vgpu_license_token"),
        **over,
    )

    async def go() -> None:
        await settle()
        vms = pulumi_mocks.of_type(VM)
        for vm in vms:
            assert "pciDeviceIds" not in vm.inputs and "hostSystemId" not in vm.inputs
            assert vm.inputs["memoryReservation"] == vm.inputs["memory"] == 65536
            assert vm.inputs["memoryReservationLockedToMax"] is True
        vgpus = pulumi_mocks.of_type(VGPU_PROFILE)
        assert [v.name for v in vgpus] == ["vs-lab-gpu-0-vgpu", "vs-lab-gpu-1-vgpu"]
        for v, vm in zip(vgpus, vms, strict=True):
            i = v.inputs
            assert (i["vm_name"], i["profile"], i["server"]) == (
                vm.inputs["name"],
                "grid_p100-4q",
                "vcenter.example.org",
            )
            assert i["user"] == "administrator@vsphere.local" and i["insecure"] is False
            # the provider is pickled by reference: no state, no password inside
            serialized = i["__provider"]
            if isinstance(serialized, dict):  # a secret travels wrapped with its signature
                serialized = serialized["value"]
            blob = base64.b64decode(serialized)
            assert SECRET_VALUES["vsphere_password"].encode() not in blob
            provider = dill.loads(blob)
            assert type(provider).__module__ == "infra.dynamic.vgpu" and vars(provider) == {}
            # the password reaches the vGPU resource as a secret (Pulumi's secret envelope)
            assert i["password"] == {
                SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270",
                "value": SECRET_VALUES["vsphere_password"],
            }
        assert [h.gpu_path for h in hosts] == ["vgpu"] * 2
        assert all(h.vars["vgpu_profile"] == "grid_p100-4q" for h in hosts)
        assert await comp.vgpus[0].profile.future() == "grid_p100-4q"

    return check(go())


@pulumi.runtime.test
def test_vsphere_bitfusion_mock_clients_and_server_record(pulumi_mocks: LabMocks) -> Any:
    over = {k: None for k in ("gpu_host", "pci_device_ids", "gpus_per_vm", "gpu_bar_gb")}
    _, _, hosts = run_stack(
        "vsphere-gpu", mode="bitfusion", bitfusion_server="10.0.0.50", host_count=3, **over
    )

    async def go() -> None:
        await settle()
        vms = pulumi_mocks.of_type(VM)
        assert len(vms) == 3
        for vm in vms:
            assert not {"pciDeviceIds", "memoryReservation", "extraConfig"} & set(vm.inputs)
        assert not {r.typ for r in pulumi_mocks.resources} & VGPU_TYPES
        assert [(h.name, h.gpu_path) for h in hosts] == [
            ("vs-lab-gpu-0", "bitfusion"),
            ("vs-lab-gpu-1", "bitfusion"),
            ("vs-lab-gpu-2", "bitfusion"),
            ("vs-lab-bitfusion-server", "none"),
        ]
        assert hosts[-1].address == "10.0.0.50" and hosts[-1].groups == ["bitfusion_server"]
        assert hosts[-1].vars["managed_by_gpulab"] is False  # no play configures it
        assert all(h.vars["bitfusion_server"] == "10.0.0.50" for h in hosts[:3])

    return check(go())


@pulumi.runtime.test
def test_vsphere_vgpu_mock_study_factors_policy_profile_and_knowledge_workers(
    pulumi_mocks: LabMocks,
) -> Any:
    """A vGPU arm of the mixed-workload study: 4 ML VMs of grid_p100-4q (4 per GPU), the
    equal-share policy recorded (VgpuPolicy resource, host vars, records' sharing) and 3
    CPU-only knowledge-worker VMs outside the GPU groups."""
    over = {k: None for k in ("gpu_host", "pci_device_ids", "gpus_per_vm", "gpu_bar_gb")}
    cfg, comp, hosts = run_stack(
        "vsphere-gpu",
        mode="vgpu",
        vgpu_profile="grid_p100-4q",
        vgpu_vms_per_gpu=4,
        vgpu_policy="equal-share",
        host_count=4,
        kw_vm_count=3,
        kw_vm_cpus=4,
        kw_vm_memory_mb=8192,
        **over,
    )
    command = 'esxcli system module parameters set -m nvidia -p "NVreg_RegistryDwords=RmPVMRL=0x01"'

    async def go() -> None:
        await settle()
        vms = {v.name: v.inputs for v in pulumi_mocks.of_type(VM)}
        kw = [f"vs-lab-kw-{i}" for i in range(3)]
        assert sorted(vms) == sorted([f"vs-lab-gpu-{i}" for i in range(4)] + kw)
        for name in kw:
            i = vms[name]
            assert (i["numCpus"], i["memory"]) == (4, 8192)
            assert not {"memoryReservation", "pciDeviceIds", "extraConfig"} & set(i)
            assert i["annotation"] == "gpulab lab=vs-lab topology=vsphere-gpu role=knowledge-worker"
        profiles = [d.name for d in pulumi_mocks.of_type(VGPU_PROFILE)]
        assert profiles == [f"vs-lab-gpu-{i}-vgpu" for i in range(4)]
        (policy,) = pulumi_mocks.of_type(VGPU_POLICY)
        assert policy.name == "vs-lab-vgpu-policy"
        pol = policy.inputs
        assert (pol["policy"], pol["cluster"], pol["profile"], pol["apply"]) == (
            "equal-share",
            cfg.args.cluster,
            "grid_p100-4q",
            False,
        )
        ml = [h for h in hosts if h.gpu_path == "vgpu"]
        workers = [h for h in hosts if h.name in kw]
        assert len(ml) == 4 and len(workers) == 3
        for h in ml:
            assert h.vars["vgpu_policy"] == "equal-share"
            assert h.vars["vgpu_policy_command"] == command
            assert h.vars["vgpu_vms_per_gpu"] == 4 and h.vars["kw_vms"] == 3
            # what the records state comes from the policy resource (as the hosts report it)
            in_effect = await h.vars["vgpu_policy_in_effect"].future()
            sharing = await h.vars["workload_run_sharing"].future()
            assert in_effect == "equal-share"
            assert sharing == "vgpu:grid_p100-4q.equal-share.4-per-gpu.kw3"
        for h in workers:
            assert h.gpu_path == "none" and h.groups == ["knowledge_workers"]
            assert not any("gpu" in g for g in h.groups)
        assert comp.policy is not None

    return check(go())


def test_vgpu_sharing_detail_is_a_valid_records_sharing() -> None:
    """The records' sharing the builder hands the runner passes workloads/setting.py."""
    from dataclasses import replace

    from infra.topologies.vsphere_gpu.args import VsphereGpuArgs
    from infra.topologies.vsphere_gpu.build import sharing_detail
    from workloads.setting import _SHARING
    from workloads.vgpu_factors import VgpuFactors, parse

    cfg = VsphereGpuArgs(topology="vsphere-gpu", lab="x1", vgpu_profile="grid_p40-24q")
    for c, in_effect, want in (
        (cfg, None, "vgpu:grid_p40-24q"),
        (replace(cfg, vgpu_policy="fixed-share"), "fixed-share", "vgpu:grid_p40-24q.fixed-share"),
        # the stack's word is not what the records say: the hosts' is
        (replace(cfg, vgpu_policy="fixed-share"), None, "vgpu:grid_p40-24q"),
        (
            replace(cfg, vgpu_policy="best-effort", kw_vm_count=96, vgpu_vms_per_gpu=2),
            "best-effort",
            "vgpu:grid_p40-24q.best-effort.2-per-gpu.kw96",
        ),
    ):
        got = sharing_detail(c, in_effect)
        assert got == want and _SHARING.match(got)
        f = parse(got)
        assert f == VgpuFactors("grid_p40-24q", in_effect, c.vgpu_vms_per_gpu, c.kw_vm_count)


def test_published_vgpu_claims_carry_numbers_tolerances_and_the_policy_values() -> None:
    """The VMware paper's mixed-workload and scheduling claims in the published data: the
    ML-time range parses as report.published reads values, and the policies' RmPVMRL values
    are those the vsphere-gpu arm records."""
    from infra.clouds.vgpu_policy import RMPVMRL
    from report.published import DEFAULT_PATH, load_published, parse_value

    pub = load_published()
    assert "vmware_vgpu_containers/mixed_workloads" in pub.claim_texts
    doc = yaml.safe_load(DEFAULT_PATH.read_text())
    claims = {c["id"]: c for c in doc["vmware_vgpu_containers"]["claims"]}
    mixed = claims["mixed_workloads"]
    assert parse_value(mixed["value"], "mixed_workloads") == (1.02, 1.18)
    assert mixed["factor"] == {"kw_vms": [32, 96]} and 0 < mixed["tolerance"] < 0.1
    assert claims["vgpu_scheduling"]["factor"]["vgpu_policy"] == RMPVMRL


def test_study_keys_validate_and_kw_load_inputs_pass_through_site() -> None:
    """What docs/topologies.md promises a vGPU arm's stack may say: the policy, VMs per GPU,
    knowledge-worker VMs and the kw_load role's inputs in gpulab:site; bad values refused."""
    import pytest

    from infra.config import ConfigError
    from tests.cloud.helpers import stack

    base = {k: None for k in ("gpu_host", "pci_device_ids", "gpus_per_vm", "gpu_bar_gb")}
    cfg = stack(
        "vsphere-gpu",
        mode="vgpu",
        vgpu_profile="grid_p100-4q",
        vgpu_policy="fixed-share",
        vgpu_vms_per_gpu=4,
        kw_vm_count=96,
        site={"kw_load_cpu_load": 50, "kw_load_vm_bytes": "25%"},
        **base,
    )
    assert (cfg.args.vgpu_policy, cfg.args.vgpu_vms_per_gpu, cfg.args.kw_vm_count) == (
        "fixed-share",
        4,
        96,
    )
    assert cfg.args.vgpu_policy_apply is False and cfg.site["kw_load_cpu_load"] == 50
    for key, value in (
        ("vgpu_policy", "round-robin"),
        ("kw_vm_count", 10_000),
        ("site", {"kw_load_bogus": 1}),
    ):
        with pytest.raises(ConfigError) as exc:
            stack("vsphere-gpu", mode="vgpu", vgpu_profile="grid_p100-4q", **base, **{key: value})
        assert f"gpulab:{key}" in str(exc.value)
    with pytest.raises(ConfigError, match="gpulab:vgpu_policy"):  # a vgpu-mode key only
        stack("vsphere-gpu", vgpu_policy="equal-share")


def test_vgpu_policy_comes_before_every_vm_and_the_records_state_it_mock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The requests the engine would get for a vGPU arm with a policy and knowledge-worker
    VMs: every VM (GPU and knowledge worker) depends on the VgpuPolicy resource, which depends
    on no VM (its reboots need hosts without powered-on VMs, and gpulab powers off none); it
    is told the measure id (checked again at every `gpulab measure`) and its bound; the
    workload run's hosts carry the sharing built from what it reports in effect."""
    from tests.pulumi.entry import run_entry_point, stack_config
    from tests.pulumi.mocks import REPO

    over = {k: None for k in ("gpu_host", "pci_device_ids", "gpus_per_vm", "gpu_bar_gb")}
    raw = stack_config(
        REPO / "examples/vsphere-gpu/Pulumi.vsphere-gpu.yaml",
        {
            **over,
            "mode": "vgpu",
            "vgpu_profile": "grid_p100-8q",
            "vgpu_vms_per_gpu": 2,
            "vgpu_policy": "fixed-share",
            "vgpu_policy_apply": True,
            "vgpu_policy_timeout_s": 600,
            "kw_vm_count": 2,
            "measure_id": "20261127T010203.000000Z",
        },
    )

    @pulumi.runtime.test
    def body() -> Any:
        monitor, _ = run_entry_point("vsphere-gpu-vgpu", raw, monkeypatch)

        async def go() -> None:
            await settle()
            (policy,) = monitor.of_type(VGPU_POLICY)
            assert policy.name == "vs-lab-vgpu-policy"
            vms = monitor.of_type(VM)
            assert sorted(v.name for v in vms) == [
                "vs-lab-gpu-0", "vs-lab-gpu-1", "vs-lab-kw-0", "vs-lab-kw-1"
            ]  # fmt: skip
            for vm in vms:
                assert policy.urn in vm.deps, f"{vm.name} does not wait for the policy"
            assert not {vm.urn for vm in vms} & policy.deps
            i = policy.inputs
            assert (i["policy"], i["apply"], i["timeout_s"]) == ("fixed-share", True, 600)
            assert i["check_id"] == "20261127T010203.000000Z"
            (run,) = monitor.of_type("pulumi-python:dynamic/gpulab:WorkloadRun")
            assert policy.urn in run.deps
            hosts = run.inputs["hosts"]
            sharing = {h["name"]: h["vars"].get("workload_run_sharing") for h in hosts}
            assert sharing == {
                "vs-lab-gpu-0": "vgpu:grid_p100-8q.fixed-share.2-per-gpu.kw2",
                "vs-lab-gpu-1": "vgpu:grid_p100-8q.fixed-share.2-per-gpu.kw2",
            }

        return check(go())

    body()


def test_vgpu_resources_have_named_types_and_alias_the_default_type_mock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """VgpuProfile and VgpuPolicy register as ``gpulab:VgpuProfile`` / ``gpulab:VgpuPolicy``
    (``pulumi stack`` tells them apart), each with an alias to the SDK's default dynamic type
    they had before, so a stack made then finds them again instead of replacing them (a
    replaced VgpuProfile powers its VM off to detach and attach). The alias is a spec of the
    type alone (same name, same parent): the URN it stands for is the one these resources had
    under the default type. No resource of the program has the default type any more. Mock
    runtime: no Pulumi engine here (tests/e2e/engine.py keys its state by type and name and
    does not follow aliases)."""
    from tests.pulumi.entry import run_entry_point, stack_config
    from tests.pulumi.mocks import REPO

    over = {k: None for k in ("gpu_host", "pci_device_ids", "gpus_per_vm", "gpu_bar_gb")}
    raw = stack_config(
        REPO / "examples/vsphere-gpu/Pulumi.vsphere-gpu.yaml",
        {**over, "mode": "vgpu", "vgpu_profile": "grid_p100-8q", "vgpu_policy": "fixed-share"},
    )
    stack = "vsphere-gpu-vgpu"
    # the URNs of these resources when they had the SDK's default type
    old_prefix = f"urn:pulumi:{stack}::gpulab::gpulab:topology:VsphereGpuLab${SDK_DEFAULT}::"

    @pulumi.runtime.test
    def body() -> Any:
        monitor, _ = run_entry_point(stack, raw, monkeypatch)

        async def go() -> None:
            await settle()
            assert [r.name for r in monitor.regs if r.typ == SDK_DEFAULT] == []
            named = monitor.of_type(VGPU_POLICY) + monitor.of_type(VGPU_PROFILE)
            assert sorted(r.name for r in named) == [
                "vs-lab-gpu-0-vgpu", "vs-lab-gpu-1-vgpu", "vs-lab-vgpu-policy"
            ]  # fmt: skip
            for r in named:
                (alias,) = r.aliases
                spec = alias.spec
                assert (spec.type, spec.name, spec.parentUrn) == (SDK_DEFAULT, "", "")
                assert not spec.noParent and not spec.project and not spec.stack
                # the spec's name and parent are the resource's own: only the type differs
                assert r.urn.replace(f"${r.typ}::", f"${spec.type}::") == old_prefix + r.name

        return check(go())

    body()


@pulumi.runtime.test
def test_the_vgpu_studys_largest_knowledge_worker_arm_builds_all_its_vms(
    pulumi_mocks: LabMocks,
) -> Any:
    """studies/vmware-vgpu.yaml's vgpu-kw96 arm as the program builds it: its ML VM with the
    vGPU and all 96 knowledge-worker VMs (tests/e2e/test_vgpu_study_vcsim.py runs the study's
    knowledge-worker arms in the vCenter simulator with a sixteenth of the VMs)."""
    from infra.study.model import load_study

    (arm,) = [a for a in load_study("vmware-vgpu").arms if a.name == "vgpu-kw96"]
    config = dict(arm.config)
    assert config["kw_vm_count"] == 96
    cfg, _comp, hosts = run_stack("vsphere-gpu", **config)

    async def go() -> None:
        await settle()
        vms = sorted(v.name for v in pulumi_mocks.of_type(VM))
        assert vms == sorted(
            [f"{cfg.args.lab}-gpu-0"] + [f"{cfg.args.lab}-kw-{i}" for i in range(96)]
        )
        workers = [h for h in hosts if h.groups == ["knowledge_workers"]]
        (ml,) = [h for h in hosts if h.gpu_path == "vgpu"]
        assert len(workers) == 96 and ml.vars["kw_vms"] == 96
        sharing = await ml.vars["workload_run_sharing"].future()
        assert sharing.endswith(".1-per-gpu.kw96"), sharing

    return check(go())
