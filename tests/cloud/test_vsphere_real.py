"""GPU-host queries, vGPU attach/detach and the VM audit against govmomi's vCenter simulator
(tests/parts/vcsim/main.go puts an NVIDIA device, its passthrough entry and grid_* profiles on
every simulated host)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from infra.clouds import CloudError
from infra.clouds import vsphere as vs

pytestmark = pytest.mark.vcsim


@pytest.fixture(scope="module")
def si(vcsim: Any) -> Iterator[Any]:
    from pyVim.connect import Disconnect

    conn = vs.connect(vcsim.host, vcsim.user, vcsim.password, port=vcsim.port, insecure=True)
    yield conn
    Disconnect(conn)


def _power_off(si: Any, name: str) -> None:
    from pyVim.task import WaitForTask

    vm = vs.find_vm(si, name)
    if vm.runtime.powerState != "poweredOff":
        WaitForTask(vm.PowerOffVM_Task())


def _clone(si: Any, source: str, name: str, annotation: str = "") -> None:
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    vm = vs.find_vm(si, source)
    spec = vim.vm.CloneSpec(location=vim.vm.RelocateSpec(), powerOn=False)
    WaitForTask(vm.CloneVM_Task(folder=vm.parent, name=name, spec=spec))
    if annotation:  # the simulator ignores CloneSpec.config: set it as an operator would
        clone = vs.find_vm(si, name)
        WaitForTask(clone.ReconfigVM_Task(spec=vim.vm.ConfigSpec(annotation=annotation)))


def test_gpu_hosts_report_nvidia_devices_passthrough_and_profiles(si: Any) -> None:
    hosts = {h.name: h for h in vs.gpu_hosts(si)}
    assert sorted(hosts) == ["DC0_C0_H0", "DC0_C0_H1", "DC0_C0_H2", "DC0_H0"]
    h = hosts["DC0_C0_H1"]
    assert h.parent == "DC0_C0"
    [gpu] = h.gpus
    assert (gpu.id, gpu.device_id) == ("0000:3b:00.0", 0x15F8)
    assert "Tesla P100" in gpu.device_name
    assert gpu.passthrough_capable and gpu.passthrough_enabled
    assert h.passthrough_ready == [gpu]
    assert "grid_p100-4q" in h.vgpu_profiles and "grid_t4-4q" not in h.vgpu_profiles
    standalone = hosts["DC0_H0"]
    assert standalone.gpus[0].passthrough_capable
    assert not standalone.gpus[0].passthrough_enabled
    assert standalone.passthrough_ready == []
    assert standalone.vgpu_profiles[0] == "grid_t4-1q"


def test_gpu_hosts_filtered_by_cluster(si: Any) -> None:
    assert [h.name for h in vs.gpu_hosts(si, cluster="DC0_C0")] == [
        "DC0_C0_H0",
        "DC0_C0_H1",
        "DC0_C0_H2",
    ]
    assert vs.gpu_hosts(si, cluster="nope") == []


def test_attach_and_detach_vgpu_on_powered_off_vm(si: Any) -> None:
    name = "DC0_C0_RP0_VM0"  # on a P100 host of the cluster
    with pytest.raises(CloudError, match=f"VM {name} is poweredOn: power it off before"):
        vs.attach_vgpu(si, name, "grid_p100-4q")
    _power_off(si, name)
    assert vs.attach_vgpu(si, name, "grid_p100-4q") == ["grid_p100-4q"]
    vm = vs.find_vm(si, name)
    [dev] = vs._vgpu_devices(vm)
    assert dev.backing.vgpu == "grid_p100-4q"
    assert vm.config.memoryReservationLockedToMax is True
    # idempotent: a second attach (a retried pulumi create) adds nothing
    assert vs.attach_vgpu(si, name, "grid_p100-4q") == ["grid_p100-4q"]
    assert vs.detach_vgpu(si, name, "grid_p100-4q") == []
    assert vs._vgpu_devices(vs.find_vm(si, name)) == []
    assert vs.detach_vgpu(si, name, "grid_p100-4q") == []  # idempotent delete


def test_attach_rejects_profile_the_host_does_not_support(si: Any) -> None:
    name = "DC0_C0_RP0_VM1"
    _power_off(si, name)
    with pytest.raises(CloudError) as err:
        vs.attach_vgpu(si, name, "grid_t4-4q")  # the simulator would accept it; we do not
    msg = str(err.value)
    assert "does not support grid_t4-4q" in msg and "grid_p100-4q" in msg
    assert vs.vm_vgpu_profiles(si, name) == []


def test_attach_to_unknown_vm_is_one_line_error(si: Any) -> None:
    with pytest.raises(CloudError, match=r"^VM no-such-vm: no such virtual machine"):
        vs.attach_vgpu(si, "no-such-vm", "grid_p100-4q")


def test_audit_finds_lab_vms_by_prefix_and_annotation(si: Any) -> None:
    assert vs.audit_vms(si, prefix="vs-lab-")[0].passed
    _clone(si, "DC0_H0_VM0", "vs-lab-gpu-0")
    # the annotation infra/topologies/vsphere_gpu.py writes
    _clone(
        si,
        "DC0_H0_VM0",
        "renamed-by-hand",
        annotation="gpulab lab=vs-lab topology=vsphere-gpu mode=vgpu",
    )
    rows = vs.audit_vms(si, prefix="vs-lab-", tag="vs-lab")
    assert [(r.name, r.passed) for r in rows] == [
        ("vsphere VM renamed-by-hand", False),
        ("vsphere VM vs-lab-gpu-0", False),
    ]
    assert "delete VM vs-lab-gpu-0" in rows[1].fix
    assert vs.lab_vms(si, prefix="vs-lab-") == ["vs-lab-gpu-0"]
    from pyVim.task import WaitForTask

    for n in ("vs-lab-gpu-0", "renamed-by-hand"):
        WaitForTask(vs.find_vm(si, n).Destroy_Task())
    assert [r.passed for r in vs.audit_vms(si, prefix="vs-lab-", tag="vs-lab")] == [True]


def test_connection_refused_is_one_line_without_credentials(vcsim: Any) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(CloudError) as err:
        vs.connect("127.0.0.1", vcsim.user, vcsim.password, port=port, insecure=True)
    msg = str(err.value)
    assert msg == f"vCenter 127.0.0.1:{port}: connection refused (is vCenter up on that port?)"
    assert vcsim.password not in msg


def test_bad_password_is_one_line_without_credentials(vcsim: Any) -> None:
    wrong = vcsim.password + "-wrong"
    with pytest.raises(CloudError) as err:
        vs.connect(vcsim.host, vcsim.user, wrong, port=vcsim.port, insecure=True)
    msg = str(err.value)
    assert msg == f"vCenter {vcsim.host}:{vcsim.port}: login failed: bad user name or password"
    assert wrong not in msg and vcsim.password not in msg


def test_untrusted_certificate_names_the_insecure_setting(vcsim: Any) -> None:
    with pytest.raises(CloudError) as err:
        vs.connect(vcsim.host, vcsim.user, vcsim.password, port=vcsim.port)
    assert "TLS certificate not trusted" in str(err.value)
    assert "gpulab:vsphere_insecure" in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_permission_is_one_line() -> None:
    """The simulator grants every privilege, so the fault is built here (a double of what
    vCenter sends) and passed through the same guard the calls use."""
    from pyVmomi import vim

    with pytest.raises(CloudError) as err, vs.guard("attach vGPU grid_p100-4q to VM x"):
        raise vim.fault.NoPermission(
            privilegeId="VirtualMachine.Config.AddRemoveDevice", object=vim.VirtualMachine("vm-42")
        )
    assert str(err.value) == (
        "attach vGPU grid_p100-4q to VM x: permission denied: the user lacks "
        "VirtualMachine.Config.AddRemoveDevice on vm-42; grant it in vCenter's roles"
    )


def test_split_server() -> None:
    assert vs.split_server("vcenter.example.org") == ("vcenter.example.org", 443)
    assert vs.split_server("127.0.0.1:8989") == ("127.0.0.1", 8989)
