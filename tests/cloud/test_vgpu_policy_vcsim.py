"""A vGPU scheduling policy in effect or refused, against govmomi's vCenter simulator with the
ESXi behaviour of tests/parts/vcsim/esx_host.go (a module option change takes effect only when
the host reboots; a reboot needs maintenance mode; maintenance mode waits for powered-on VMs).

Each test module gets a simulator of its own (``fresh_vcsim``: 1 s reboots), since these
tests reboot hosts, power VMs off and mark hosts. What the host's module really loaded is read
through the simulator's shell view (``VcsimPart.esx()``), never through gpulab's own code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from infra.clouds import CloudError
from infra.clouds import vgpu_policy as vp
from infra.clouds import vsphere as vs
from infra.clouds import vsphere_host as esx
from infra.clouds.vsphere_preflight import check_policy
from infra.dynamic.vgpu_policy import VgpuPolicyProvider

pytestmark = pytest.mark.vcsim

CLUSTER = "DC0_C0"
HOSTS = ["DC0_C0_H0", "DC0_C0_H1", "DC0_C0_H2"]
EQUAL = "NVreg_RegistryDwords=RmPVMRL=0x01"


@pytest.fixture(scope="module")
def si(fresh_vcsim: Any) -> Iterator[Any]:
    conn = vs.connect(
        fresh_vcsim.host,
        fresh_vcsim.user,
        fresh_vcsim.password,
        port=fresh_vcsim.port,
        insecure=True,
    )
    yield conn
    vs.disconnect(conn)


def props(vcsim: Any, **extra: Any) -> dict[str, Any]:
    return {
        "cluster": CLUSTER,
        "policy": "equal-share",
        "profile": "grid_p100-4q",
        "apply": True,
        "timeout_s": 20,
        "check_id": "",
        "server": f"{vcsim.host}:{vcsim.port}",
        "user": vcsim.user,
        "password": vcsim.password,
        "insecure": True,
        **extra,
    }


def running_vms(si: Any) -> list[Any]:
    from pyVmomi import vim

    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
    try:
        return [
            vm
            for vm in view.view
            if vm.runtime.powerState == "poweredOn"
            and vm.runtime.host is not None
            and vm.runtime.host.name in HOSTS
        ]
    finally:
        view.Destroy()


def power_off_cluster_vms(si: Any) -> list[str]:
    """What the operator does before a policy change: the cluster's VMs powered off."""
    names = []
    for vm in running_vms(si):
        vs.set_power(vm, vm.name, on=False)
        names.append(vm.name)
    return names


def test_the_simulator_behaves_as_esxi_an_option_change_needs_a_reboot(
    si: Any, fresh_vcsim: Any
) -> None:
    """The double is no friendlier than ESXi: an update changes the configured options only,
    the API reads back only those, a reboot needs maintenance mode, maintenance mode waits
    for powered-on VMs (Timedout), and the loaded options change at the next boot."""
    from pyVmomi import vim

    name = "DC0_H0"  # the standalone host: its VM is this test's to power off
    h = esx.host_object(si, name)
    kms = h.configManager.kernelModuleSystem
    before = fresh_vcsim.esx()[name]
    assert before["configured"]["nvidia"] == before["loaded"]["nvidia"] == ""
    kms.UpdateModuleOptionString(name="nvidia", options=EQUAL)
    after = fresh_vcsim.esx()[name]
    assert (after["configured"]["nvidia"], after["loaded"]["nvidia"]) == (EQUAL, "")
    assert kms.QueryConfiguredModuleOptionString(name="nvidia") == EQUAL
    assert [m.optionString for m in kms.QueryModules() if m.name == "nvidia"] == [EQUAL]
    with pytest.raises(vim.fault.InvalidState):
        h.RebootHost_Task(force=False)
    busy = esx.powered_on_vms(h)
    assert busy, "the standalone host runs a VM"
    with pytest.raises(CloudError, match=r"maintenance mode: Timedout.*powered-on VMs still on it"):
        esx.enter_maintenance(h, name, timeout_s=1)
    for vm in h.vm:
        vs.set_power(vm, vm.name, on=False)
    esx.enter_maintenance(h, name, timeout_s=10)
    booted = esx.boot_time(h)
    away = esx.reboot(h, name, timeout_s=20)
    shell = fresh_vcsim.esx()[name]
    assert shell["loaded"]["nvidia"] == EQUAL and shell["in_maintenance_mode"] is True
    assert esx.boot_time(h) > booted and away >= 0.9
    esx.exit_maintenance(h, name, timeout_s=10)
    assert fresh_vcsim.esx()[name]["in_maintenance_mode"] is False
    kms.UpdateModuleOptionString(name="nvidia", options="")
    for vm in h.vm:
        vs.set_power(vm, vm.name, on=True)


def test_without_apply_a_policy_not_seen_in_effect_is_refused_naming_the_host(
    si: Any, fresh_vcsim: Any
) -> None:
    """gpulab has seen no boot of these hosts: the configured options say best effort, but
    the API cannot tell what the loaded module uses, so even best-effort is refused."""
    for policy in ("equal-share", "best-effort"):
        with pytest.raises(CloudError) as exc:
            VgpuPolicyProvider().create(props(fresh_vcsim, policy=policy, apply=False))
        line = str(exc.value)
        print(line)
        assert "\n" not in line and fresh_vcsim.password not in line
        assert line.startswith(f"ESXi host DC0_C0_H0: vGPU policy {policy} (RmPVMRL=")
        assert "is not in effect (running: not known; configured best-effort;" in line
        assert "gpulab:vgpu_policy_apply: true" in line
    assert {
        h: s["rebooting"] or s["in_maintenance_mode"] for h, s in fresh_vcsim.esx().items()
    } == {h: False for h in [*HOSTS, "DC0_H0"]}, "a refusal changes nothing"


def test_apply_refuses_hosts_with_powered_on_vms_then_sets_reboots_and_reads_back(
    si: Any, fresh_vcsim: Any
) -> None:
    """Maintenance mode needs the hosts empty and gpulab powers off no VM: one line naming the
    host and its VMs. Emptied (as an operator does), each host is set, put in maintenance
    mode, rebooted, waited for, read back, marked and taken out of maintenance mode; the
    module the host then runs has the policy (its shell says so)."""
    busy = sorted({vm.runtime.host.name for vm in running_vms(si)})
    assert busy, "the simulator's cluster runs VMs"
    with pytest.raises(CloudError) as exc:
        VgpuPolicyProvider().create(props(fresh_vcsim))
    line = str(exc.value)
    print(line)
    assert line.startswith(f"ESXi host {busy[0]}: maintenance mode for vGPU policy equal-share")
    assert "powered-on VMs on it: DC0_C0_RP0_VM" in line and "\n" not in line
    stopped = power_off_cluster_vms(si)
    print("powered off by the operator:", stopped)
    before = {h: s["boot_time"] for h, s in fresh_vcsim.esx().items()}
    res = VgpuPolicyProvider().create(props(fresh_vcsim))
    plan = res.outs["plan"]
    for step in plan["steps"]:
        print(step)
    assert res.outs["in_effect"] == "equal-share" and plan["applied"] == HOSTS
    shell = fresh_vcsim.esx()
    for h in HOSTS:
        assert shell[h]["configured"]["nvidia"] == shell[h]["loaded"]["nvidia"] == EQUAL
        assert shell[h]["boot_time"] > before[h] and not shell[h]["in_maintenance_mode"]
    assert [s["in_effect"] for s in plan["states"]] == ["equal-share"] * 3
    assert all("reboot" in s and "limit 20 s" in s for s in plan["steps"])
    # a second lab with the same policy: the mark and the unchanged boot say it is in effect
    again = VgpuPolicyProvider().create(props(fresh_vcsim, apply=False))
    assert again.outs["in_effect"] == "equal-share" and again.outs["plan"]["applied"] == []
    assert {h: fresh_vcsim.esx()[h]["boot_time"] for h in HOSTS} == {
        h: shell[h]["boot_time"] for h in HOSTS
    }


def test_options_changed_without_a_reboot_leave_the_loaded_policy_in_effect(
    si: Any, fresh_vcsim: Any
) -> None:
    """Someone sets the options by hand and does not reboot: the host still runs what it
    loaded, and gpulab says so (configured and running differ in what it reads)."""
    h = esx.host_object(si, HOSTS[0])
    kms = h.configManager.kernelModuleSystem
    kms.UpdateModuleOptionString(name="nvidia", options="NVreg_RegistryDwords=RmPVMRL=0x11")
    try:
        state = vp.read_host(si, HOSTS[0])
        assert (state.configured_policy, state.in_effect) == ("fixed-share", "equal-share")
        rows = check_policy(si, cluster=CLUSTER, profile="grid_p100-4q", policy="fixed-share")
        assert (
            not rows[0].passed and "running: equal-share; configured: fixed-share" in rows[0].detail
        )
    finally:
        kms.UpdateModuleOptionString(name="nvidia", options=EQUAL)


def test_measure_checks_again_and_refuses_once_another_policy_is_in_effect(
    si: Any, fresh_vcsim: Any
) -> None:
    """A built lab (equal-share) whose hosts another lab switched to fixed-share: the next
    `gpulab measure` (a new check_id) refuses before the workloads; with apply it would have
    to reboot hosts that now run the lab's own VMs, which it does not power off."""
    p = props(fresh_vcsim, apply=False, check_id="m1")
    built = VgpuPolicyProvider().create(p)
    other = VgpuPolicyProvider().create(props(fresh_vcsim, policy="fixed-share"))
    assert other.outs["plan"]["applied"] == HOSTS
    news = dict(p, check_id="m2")
    assert VgpuPolicyProvider().diff("id", built.outs, news).changes
    with pytest.raises(CloudError, match=r"^ESXi host DC0_C0_H0: vGPU policy equal-share .* "
                       r"is not in effect \(running: fixed-share;"):  # fmt: skip
        VgpuPolicyProvider().update("id", built.outs, news)
    vm = esx.host_object(si, HOSTS[0]).vm[0]
    vs.set_power(vm, vm.name, on=True)  # the lab's own VM, say
    try:
        with pytest.raises(CloudError, match=f"^ESXi host {HOSTS[0]}: maintenance mode.*"
                           f"powered-on VMs on it: {vm.name}"):  # fmt: skip
            VgpuPolicyProvider().update("id", built.outs, dict(news, apply=True))
    finally:
        vs.set_power(vm, vm.name, on=False)
    refreshed = VgpuPolicyProvider().read("id", built.outs)
    assert refreshed.outs["in_effect"] is None
    assert {s["in_effect"] for s in refreshed.outs["plan"]["states"]} == {"fixed-share"}
    # after a refresh, the same inputs still make the next up check again (an update)
    assert VgpuPolicyProvider().diff("id", refreshed.outs, p).changes


def test_a_host_that_does_not_come_back_is_one_line_and_stays_in_maintenance_mode(
    si: Any, fresh_vcsim: Any
) -> None:
    fresh_vcsim.hang_reboot(HOSTS[1])
    with pytest.raises(CloudError) as exc:
        VgpuPolicyProvider().create(props(fresh_vcsim, timeout_s=3))
    line = str(exc.value)
    print(line)
    assert line.startswith(f"ESXi host {HOSTS[1]}: reboot: not back within 3 s")
    assert "(vCenter says notResponding)" in line and "stays in maintenance mode" in line
    assert "\n" not in line
    shell = fresh_vcsim.esx()
    assert shell[HOSTS[0]]["loaded"]["nvidia"] == EQUAL  # done before the failure: kept
    assert shell[HOSTS[1]]["rebooting"] and shell[HOSTS[1]]["in_maintenance_mode"]


def test_an_rmpvmrl_value_no_policy_has_is_refused_naming_it(si: Any, fresh_vcsim: Any) -> None:
    kms = esx.host_object(si, "DC0_H0").configManager.kernelModuleSystem
    kms.UpdateModuleOptionString(name="nvidia", options="NVreg_RegistryDwords=RmPVMRL=0x21")
    state = vp.read_host(si, "DC0_H0")
    assert state.configured_policy is None
    line = vp._refusal(state, "fixed-share")
    assert "configured 'NVreg_RegistryDwords=RmPVMRL=0x21', an RmPVMRL value no documented" in line


def test_a_host_the_operator_put_in_maintenance_mode_stays_there(si: Any, fresh_vcsim: Any) -> None:
    """The standalone host (DC0_H0, a T4), already in maintenance mode: gpulab reboots it with
    the policy and leaves it as the operator had it."""
    h = esx.host_object(si, "DC0_H0")
    kms = h.configManager.kernelModuleSystem
    kms.UpdateModuleOptionString(name="nvidia", options="")
    for vm in h.vm:
        vs.set_power(vm, vm.name, on=False)
    esx.enter_maintenance(h, "DC0_H0", timeout_s=10)
    res = VgpuPolicyProvider().create(
        props(fresh_vcsim, cluster="DC0_H0", profile="grid_t4-16q", policy="fixed-share")
    )
    (line,) = res.outs["plan"]["steps"]
    assert line.endswith("left in maintenance mode, as it was"), line
    shell = fresh_vcsim.esx()["DC0_H0"]
    assert shell["in_maintenance_mode"] and shell["loaded"]["nvidia"].endswith("RmPVMRL=0x11")
