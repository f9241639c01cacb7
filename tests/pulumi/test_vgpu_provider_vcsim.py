"""The VgpuProfile dynamic provider against the real vCenter simulator
(tests/parts/fixtures_vcsim.py): the VM is found by its UUID, attach/detach go through
infra.clouds.vsphere with the VM's power state restored, delete is idempotent, read asks
vCenter whether the vGPU is still there. check/diff are plain logic."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from infra.dynamic.vgpu import VgpuProfileProvider

VM = "gpulab-test-vgpu-provider"
PROFILE = "grid_p100-4q"


def clone(si: Any, name: str, power_on: bool = True) -> Any:
    """A fresh clone of DC0_C0_RP0_VM0 on its P100 host."""
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    from infra.clouds import vsphere as vs

    src = vs.find_vm(si, "DC0_C0_RP0_VM0")
    spec = vim.vm.CloneSpec(location=vim.vm.RelocateSpec(host=src.runtime.host), powerOn=power_on)
    WaitForTask(src.CloneVM_Task(folder=src.parent, name=name, spec=spec))
    vm = vs.find_vm(si, name)
    vs.set_power(vm, name, on=power_on)
    return vm


def destroy(si: Any, name: str) -> None:
    from pyVim.task import WaitForTask

    from infra.clouds import CloudError
    from infra.clouds import vsphere as vs

    try:
        vm = vs.find_vm(si, name)
    except CloudError:
        return
    vs.set_power(vm, name, on=False)
    WaitForTask(vm.Destroy_Task())


@pytest.fixture
def si(vcsim: Any) -> Iterator[Any]:
    from pyVim.connect import Disconnect

    from infra.clouds import vsphere as vs

    si = vs.connect(vcsim.host, vcsim.user, vcsim.password, port=vcsim.port, insecure=True)
    yield si
    Disconnect(si)


@pytest.fixture
def powered_on_vm(si: Any) -> Iterator[Any]:
    """A fresh powered-on clone on a P100 host of DC0_C0; removed afterwards."""
    vm = clone(si, VM)
    try:
        yield vm
    finally:
        destroy(si, VM)


def vgpu_props(vcsim: Any, vm: Any, **extra: Any) -> dict[str, Any]:
    p = {
        "vm_uuid": vm.config.uuid,
        "vm_name": vm.name,
        "profile": PROFILE,
        "server": f"{vcsim.host}:{vcsim.port}",
        "user": vcsim.user,
        "password": vcsim.password,
        "insecure": True,
    }
    p.update(extra)
    return p


@pytest.mark.vcsim
def test_vgpu_provider_create_read_delete_on_vcsim(vcsim: Any, si: Any, powered_on_vm: Any) -> None:
    from infra.clouds import vsphere as vs

    props = vgpu_props(vcsim, powered_on_vm)
    provider = VgpuProfileProvider()
    assert provider.check({}, props).failures == []
    result = provider.create(props)
    assert result.outs is not None
    assert result.id == f"{powered_on_vm.config.uuid}/{PROFILE}"
    assert result.outs["profiles"] == [PROFILE]
    vm = vs.find_vm(si, VM)
    assert vs.vm_vgpu_profiles(si, VM) == [PROFILE]
    assert vm.runtime.powerState == "poweredOn"  # power state restored
    assert vm.config.memoryReservationLockedToMax is True
    # A retried create on a VM that has the profile changes nothing (no power cycle).
    assert (provider.create(props).outs or {})["profiles"] == [PROFILE]

    read = provider.read(result.id, result.outs)
    assert (read.id, read.outs) == (result.id, result.outs)

    provider.delete(result.id, result.outs)
    assert vs.vm_vgpu_profiles(si, VM) == []
    assert vs.find_vm(si, VM).runtime.powerState == "poweredOn"
    # Device gone: read says the resource is gone, delete again succeeds.
    assert provider.read(result.id, result.outs).id == ""
    provider.delete(result.id, result.outs)


@pytest.mark.vcsim
def test_vgpu_is_keyed_on_the_vm_uuid_not_its_name(vcsim: Any, si: Any, powered_on_vm: Any) -> None:
    """Another VM takes the name: the attach still goes to the VM with the UUID."""
    from pyVim.task import WaitForTask

    from infra.clouds import vsphere as vs

    props = vgpu_props(vcsim, powered_on_vm)
    WaitForTask(powered_on_vm.Rename_Task(newName=VM + "-renamed"))
    impostor = clone(si, VM)
    try:
        result = VgpuProfileProvider().create(props)
        assert result.outs is not None
        assert vs.vgpu_profiles_of(impostor) == []
        assert vs.vm_vgpu_profiles(si, VM + "-renamed") == [PROFILE]
        VgpuProfileProvider().delete(result.id, result.outs)
        assert vs.vm_vgpu_profiles(si, VM + "-renamed") == []
    finally:
        destroy(si, VM + "-renamed")


@pytest.mark.vcsim
def test_powered_off_vm_stays_off_and_a_gone_vm_deletes_cleanly(vcsim: Any, si: Any) -> None:
    from infra.clouds import vsphere as vs

    name = VM + "-off"
    vm = clone(si, name, power_on=False)
    try:
        props = vgpu_props(vcsim, vm)
        result = VgpuProfileProvider().create(props)
        assert result.outs is not None
        assert vs.vm_vgpu_profiles(si, name) == [PROFILE]
        assert vs.find_vm(si, name).runtime.powerState == "poweredOff"
    finally:
        destroy(si, name)
    # The VM went away with its topology: read says gone, delete succeeds.
    assert VgpuProfileProvider().read(result.id, result.outs).id == ""
    VgpuProfileProvider().delete(result.id, result.outs)


@pytest.mark.vcsim
def test_suspended_vm_is_a_one_line_error(vcsim: Any, si: Any, powered_on_vm: Any) -> None:
    from pyVim.task import WaitForTask

    from infra.clouds import CloudError
    from infra.clouds import vsphere as vs

    WaitForTask(powered_on_vm.SuspendVM_Task())
    with pytest.raises(CloudError, match=f"^VM {VM} is suspended: resume it") as err:
        VgpuProfileProvider().create(vgpu_props(vcsim, powered_on_vm))
    assert "\n" not in str(err.value)
    assert vs.vm_vgpu_profiles(si, VM) == []
    assert vs.find_vm(si, VM).runtime.powerState == "suspended"  # left as it was


@pytest.mark.vcsim
def test_unknown_uuid_is_a_one_line_error(vcsim: Any, si: Any, powered_on_vm: Any) -> None:
    from infra.clouds import CloudError

    props = vgpu_props(vcsim, powered_on_vm, vm_uuid="00000000-0000-0000-0000-000000000000")
    with pytest.raises(CloudError, match=r"^VM .*: no virtual machine with UUID 0{8}-"):
        VgpuProfileProvider().create(props)


@pytest.mark.vcsim
def test_vgpu_provider_bad_password_is_one_line_without_it(vcsim: Any) -> None:
    from infra.clouds import CloudError

    props = {
        "vm_uuid": "4217",
        "vm_name": VM,
        "profile": PROFILE,
        "server": f"{vcsim.host}:{vcsim.port}",
        "user": vcsim.user,
        "password": "wrong-Pa55",
        "insecure": True,
    }
    with pytest.raises(CloudError) as err:
        VgpuProfileProvider().create(props)
    assert "login failed" in str(err.value) and "wrong-Pa55" not in str(err.value)


def test_read_keeps_the_stored_outputs_when_vcenter_is_unreachable() -> None:
    props = {
        "vm_uuid": "u-1",
        "vm_name": "v",
        "profile": PROFILE,
        "server": "127.0.0.1:9",  # discard port: connection refused
        "user": "u",
        "password": "p",
        "insecure": True,
        "profiles": [PROFILE],
    }
    read = VgpuProfileProvider().read("u-1/" + PROFILE, props)
    assert (read.id, read.outs) == ("u-1/" + PROFILE, props)


def test_vgpu_provider_check_and_diff() -> None:
    p = VgpuProfileProvider()
    base = {
        "vm_uuid": "u-1",
        "vm_name": "v",
        "profile": PROFILE,
        "server": "vc",
        "user": "u",
        "password": "p",
        "insecure": False,
    }
    bad = p.check({}, {**base, "profile": "p100-4q", "password": "", "vm_uuid": None})
    assert sorted(f.property for f in bad.failures) == ["password", "profile", "vm_uuid"]
    assert p.diff("id", base, base).changes is False
    for key in ("vm_uuid", "profile", "server"):
        d = p.diff("id", base, {**base, key: "grid_p100-8q"})
        assert d.changes and d.replaces == [key] and d.delete_before_replace, key
    for key, value in (
        ("vm_name", "renamed"),
        ("user", "u2"),
        ("password", "new"),
        ("insecure", True),
    ):
        d = p.diff("id", base, {**base, key: value})
        assert d.changes and d.replaces == [], key
