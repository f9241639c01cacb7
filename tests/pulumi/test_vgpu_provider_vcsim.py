"""The VgpuProfile dynamic provider's create/delete against the real vCenter simulator
(tests/parts/fixtures_vcsim.py): power-off, attach/detach through infra.clouds.vsphere,
power back on. check/diff are plain logic."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from infra.dynamic.vgpu import VgpuProfileProvider

VM = "gpulab-test-vgpu-provider"


@pytest.fixture
def powered_on_vm(vcsim: Any) -> Iterator[Any]:
    """A fresh powered-on clone on a P100 host of DC0_C0; removed afterwards."""
    from pyVim.connect import Disconnect
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    from infra.clouds import vsphere as vs

    si = vs.connect(vcsim.host, vcsim.user, vcsim.password, port=vcsim.port, insecure=True)
    src = vs.find_vm(si, "DC0_C0_RP0_VM0")
    spec = vim.vm.CloneSpec(location=vim.vm.RelocateSpec(host=src.runtime.host), powerOn=True)
    WaitForTask(src.CloneVM_Task(folder=src.parent, name=VM, spec=spec))
    vm = vs.find_vm(si, VM)
    if vm.runtime.powerState != "poweredOn":
        WaitForTask(vm.PowerOnVM_Task())
    try:
        yield si, vm
    finally:
        vm = vs.find_vm(si, VM)
        if vm.runtime.powerState != "poweredOff":
            WaitForTask(vm.PowerOffVM_Task())
        WaitForTask(vm.Destroy_Task())
        Disconnect(si)


@pytest.mark.vcsim
def test_vgpu_provider_create_and_delete_on_vcsim(vcsim: Any, powered_on_vm: Any) -> None:
    from infra.clouds import vsphere as vs

    si, _ = powered_on_vm
    props = {"vm_name": VM, "profile": "grid_p100-4q", "server": f"{vcsim.host}:{vcsim.port}",
             "user": vcsim.user, "password": vcsim.password, "insecure": True}
    provider = VgpuProfileProvider()
    assert provider.check({}, props).failures == []
    result = provider.create(props)
    assert result.id == f"{VM}/grid_p100-4q"
    assert result.outs["profiles"] == ["grid_p100-4q"]
    vm = vs.find_vm(si, VM)
    assert vs.vm_vgpu_profiles(si, VM) == ["grid_p100-4q"]
    assert vm.runtime.powerState == "poweredOn"  # power state restored
    assert vm.config.memoryReservationLockedToMax is True
    provider.delete(result.id, result.outs)
    assert vs.vm_vgpu_profiles(si, VM) == []
    assert vs.find_vm(si, VM).runtime.powerState == "poweredOn"


@pytest.mark.vcsim
def test_vgpu_provider_bad_password_is_one_line_without_it(vcsim: Any) -> None:
    from infra.clouds import CloudError

    props = {"vm_name": VM, "profile": "grid_p100-4q", "server": f"{vcsim.host}:{vcsim.port}",
             "user": vcsim.user, "password": "wrong-Pa55", "insecure": True}
    with pytest.raises(CloudError) as err:
        VgpuProfileProvider().create(props)
    assert "login failed" in str(err.value) and "wrong-Pa55" not in str(err.value)


def test_vgpu_provider_check_and_diff() -> None:
    p = VgpuProfileProvider()
    base = {"vm_name": "v", "profile": "grid_p100-4q", "server": "vc", "user": "u",
            "password": "p", "insecure": False}
    bad = p.check({}, {**base, "profile": "p100-4q", "password": ""})
    assert sorted(f.property for f in bad.failures) == ["password", "profile"]
    assert p.diff("id", base, base).changes is False
    d = p.diff("id", base, {**base, "profile": "grid_p100-8q"})
    assert d.changes and d.replaces == ["profile"] and d.delete_before_replace
    d = p.diff("id", base, {**base, "password": "new"})
    assert d.changes and d.replaces == []
