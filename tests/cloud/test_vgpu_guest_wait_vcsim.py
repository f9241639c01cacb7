"""After a vGPU attach powers a VM off and on, the guest is waited for: VMware Tools running and
an address again (infra.clouds.vsphere.wait_for_guest, called by VgpuProfile). Against the
vCenter simulator, whose guests boot as real ones do (tests/parts/vcsim/main.go: power-off
stops the tools and drops the address at once; power-on brings them back 2 s later)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest

from infra.clouds import CloudError
from infra.clouds import vsphere as vs
from infra.dynamic.vgpu import VgpuProfileProvider

VM = "gpulab-test-guest-wait"
PROFILE = "grid_p100-2q"
GUEST_BOOT_S = 2.0  # the simulator's -guest-boot default


@pytest.fixture(scope="module")
def si(vcsim: Any) -> Iterator[Any]:
    from pyVim.connect import Disconnect

    conn = vs.connect(vcsim.host, vcsim.user, vcsim.password, port=vcsim.port, insecure=True)
    yield conn
    Disconnect(conn)


@pytest.fixture
def booted_vm(si: Any) -> Iterator[Any]:
    """A powered-on clone whose guest is up, its address set to 10.77.0.9; removed after."""
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    src = vs.find_vm(si, "DC0_C0_RP0_VM0")
    spec = vim.vm.CloneSpec(location=vim.vm.RelocateSpec(host=src.runtime.host), powerOn=True)
    WaitForTask(src.CloneVM_Task(folder=src.parent, name=VM, spec=spec))
    vm = vs.find_vm(si, VM)
    try:
        vs.set_power(vm, VM, on=True)  # the simulator's clone ignores spec.powerOn
        vs.wait_for_guest(vm, VM, 30)
        extra = [vim.option.OptionValue(key="SET.guest.ipAddress", value="10.77.0.9")]
        WaitForTask(vm.ReconfigVM_Task(spec=vim.vm.ConfigSpec(extraConfig=extra)))
        assert vs.guest_state(vm, VM) == ("guestToolsRunning", "10.77.0.9")
        yield vm
    finally:
        if vm.runtime.powerState != "poweredOff":
            WaitForTask(vm.PowerOffVM_Task())
        WaitForTask(vm.Destroy_Task())


@pytest.mark.vcsim
def test_the_attach_returns_only_when_the_guest_is_back(
    vcsim: Any, si: Any, booted_vm: Any
) -> None:
    provider = VgpuProfileProvider()
    provider.host_wait_s = 30
    props = {
        "vm_uuid": booted_vm.config.uuid, "vm_name": VM, "profile": PROFILE,
        "server": f"{vcsim.host}:{vcsim.port}", "user": vcsim.user,
        "password": vcsim.password, "insecure": True,
    }  # fmt: skip
    t0 = time.monotonic()
    result = provider.create(props)
    took = time.monotonic() - t0
    assert result.outs is not None and result.outs["profiles"] == [PROFILE]
    # the power cycle happened (the profile is on), and the guest came back before create
    # returned: tools running, the address it had
    assert took >= GUEST_BOOT_S, took
    assert vs.guest_state(booted_vm, VM) == ("guestToolsRunning", "10.77.0.9")
    print(f"\n[vcsim] vGPU attach with the power cycle and the guest wait: {took:.1f} s")


@pytest.mark.vcsim
def test_a_guest_that_does_not_come_back_is_one_line(si: Any, booted_vm: Any) -> None:
    from pyVim.task import WaitForTask

    WaitForTask(booted_vm.PowerOffVM_Task())  # tools stop and the address goes at once
    assert vs.guest_state(booted_vm, VM) == ("guestToolsNotRunning", None)
    t0 = time.monotonic()
    with pytest.raises(CloudError) as err:
        vs.wait_for_guest(booted_vm, VM, 1.5)
    assert 1.5 <= time.monotonic() - t0 < 4
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"VM {VM}: the guest is not back 2 s after power-on (waited for ")
    assert "VMware Tools: guestToolsNotRunning, address: none" in line and "host_wait_s" in line


def test_the_wait_polls_with_a_growing_pause() -> None:
    """No vCenter: the state answers are scripted; the pauses grow and the wait ends on the
    first answer with tools running and an address."""
    answers = iter(
        [("guestToolsNotRunning", None)] * 4 + [("guestToolsRunning", None)]
        + [("guestToolsRunning", "10.0.0.4")]
    )  # fmt: skip
    seen: list[float] = []

    def state(_vm: Any, _name: str) -> tuple[str, str | None]:
        seen.append(time.monotonic())
        return next(answers)

    waited, address = vs.wait_for_guest(None, "v", 30, first_s=0.05, max_s=0.2, state=state)
    assert address == "10.0.0.4" and len(seen) == 6 and waited >= 0.05 + 0.1 + 0.2
    pauses = [b - a for a, b in itertools.pairwise(seen)]
    assert pauses[0] < pauses[2] and max(pauses) < 0.4, pauses
