"""The vGPU scheduling policy of a vsphere-gpu arm, set on the ESXi hosts' NVIDIA vGPU manager.

NVIDIA's Virtual GPU Software User Guide, "Changing Scheduling Behavior for Time-Sliced vGPUs"
and its "RmPVMRL Registry Key" section: the policy is the ``RmPVMRL`` registry DWORD of the
``nvidia`` kernel module on the hypervisor; on VMware vSphere it is set with

    esxcli system module parameters set -m nvidia -p "NVreg_RegistryDwords=RmPVMRL=<value>"

and takes effect after the host reboots. Documented values (default time slice length):

    0x00  best effort scheduler (the default)
    0x01  equal share scheduler
    0x11  fixed share scheduler

The policy can be changed only on GPUs based on the Pascal, Volta, Turing and Ampere (and
later) architectures. ``esxcli ... parameters set`` replaces the module's whole option string,
so other ``nvidia`` options on the host must be added to the same ``-p`` value.

The same setting through the vSphere API is ``HostKernelModuleSystem.UpdateModuleOptionString``
(the call behind ``esxcli system module parameters set``); :func:`apply_policy` uses it only
when the stack asks (``gpulab:vgpu_policy_apply``). Otherwise the command is produced and
recorded, which is what a simulator or a read-only account gets.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from infra.clouds import CloudError
from infra.clouds.vsphere import ServiceInstance, gpu_hosts, guard

MODULE = "nvidia"
# gpulab:vgpu_policy -> RmPVMRL value (NVIDIA vGPU user guide, "RmPVMRL Registry Key").
RMPVMRL = {"best-effort": "0x00", "equal-share": "0x01", "fixed-share": "0x11"}
DOC = (
    "NVIDIA Virtual GPU Software User Guide: Changing Scheduling Behavior for Time-Sliced "
    "vGPUs / RmPVMRL Registry Key"
)


def module_options(policy: str) -> str:
    """The ``nvidia`` module option string that selects ``policy``."""
    try:
        return f"NVreg_RegistryDwords=RmPVMRL={RMPVMRL[policy]}"
    except KeyError:
        raise ValueError(f"vGPU policy {policy!r} is not one of {', '.join(RMPVMRL)}") from None


def esxcli_command(policy: str) -> str:
    """The ESXi shell command that sets ``policy`` (then reboot the host)."""
    return f'esxcli system module parameters set -m {MODULE} -p "{module_options(policy)}"'


@dataclass
class PolicyPlan:
    """What an arm's policy is on each host: recorded always, applied when asked."""

    policy: str
    registry_dword: str
    command: str
    hosts: list[str]
    applied: list[str] = field(default_factory=list)
    reboot_required: bool = False
    source: str = DOC

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def policy_hosts(si: ServiceInstance, cluster: str, profile: str | None = None) -> list[str]:
    """ESXi hosts of ``cluster`` with an NVIDIA GPU (that support ``profile`` when given):
    the hosts whose vGPU manager runs the lab's vGPUs."""
    return [
        h.name
        for h in gpu_hosts(si, cluster=cluster)
        if profile is None or profile in h.vgpu_profiles
    ]


def plan_policy(
    si: ServiceInstance, cluster: str, policy: str, profile: str | None = None
) -> PolicyPlan:
    """The command for ``policy`` and the hosts it is for; nothing is changed."""
    hosts = policy_hosts(si, cluster, profile)
    if not hosts:
        raise CloudError(
            f"vGPU policy {policy}: no host of cluster {cluster} has an NVIDIA GPU"
            + (f" supporting {profile}" if profile else "")
        )
    return PolicyPlan(
        policy=policy,
        registry_dword=f"RmPVMRL={RMPVMRL[policy]}",
        command=esxcli_command(policy),
        hosts=hosts,
    )


def _host(si: ServiceInstance, name: str) -> Any:
    from pyVmomi import vim

    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.HostSystem], True)
    try:
        for h in view.view:
            if h.name == name:
                return h
    finally:
        view.Destroy()
    raise CloudError(f"ESXi host {name}: not found in this vCenter")


def configured_options(si: ServiceInstance, host: str) -> str:
    """The ``nvidia`` module option string configured on ``host`` now."""
    with guard(f"read {MODULE} module options on {host}"):
        kms = _host(si, host).configManager.kernelModuleSystem
        if kms is None:
            raise CloudError(f"ESXi host {host}: no kernel module system (not a real ESXi host)")
        return str(kms.QueryConfiguredModuleOptionString(name=MODULE) or "")


def apply_policy(si: ServiceInstance, plan: PolicyPlan) -> PolicyPlan:
    """Set the plan's option string on each host (the API call behind the esxcli command);
    hosts that already have it are left alone. The new value takes effect after a reboot,
    which is the operator's (``reboot_required`` says whether one is due)."""
    want = module_options(plan.policy)
    for host in plan.hosts:
        if configured_options(si, host) == want:
            continue
        with guard(f"set {MODULE} module options on {host}"):
            kms = _host(si, host).configManager.kernelModuleSystem
            kms.UpdateModuleOptionString(name=MODULE, options=want)
        plan.applied.append(host)
        plan.reboot_required = True
    return plan
