"""The vGPU scheduling policy of a vsphere-gpu arm on the ESXi hosts' NVIDIA vGPU manager:
in effect, or refused.

NVIDIA's Virtual GPU Software User Guide, "Changing Scheduling Behavior for Time-Sliced
vGPUs" and its "RmPVMRL Registry Key" section: the policy is the ``RmPVMRL`` registry DWORD of
the ``nvidia`` kernel module on the hypervisor; on VMware vSphere it is set with

    esxcli system module parameters set -m nvidia -p "NVreg_RegistryDwords=RmPVMRL=<value>"

and takes effect after the host reboots. Documented values: 0x00 best effort (the default),
0x01 equal share, 0x11 fixed share, each optionally with a time slice of TT ms as 0x00TT0001 /
0x00TT0011. The policy can be changed only on Pascal and later GPUs. ``esxcli ... set``
replaces the module's whole option string: gpulab keeps the other options and registry DWORDs
it finds and replaces ``RmPVMRL`` alone.

What the vSphere API says about it (``HostKernelModuleSystem``):
``QueryConfiguredModuleOptionString`` (the call behind ``esxcli system module parameters list
-m nvidia``) and ``QueryModules``' ``optionString`` both give the option string configured for
the module's next load, "not necessarily the option string currently in use"; no call reads
what the loaded module uses.
So gpulab takes a policy as in effect only from a boot it saw: after it set the options and
rebooted the host it reads the configured string back and marks the host (custom attribute
:data:`MARKER`: the boot time and the options loaded at it). While the host's
``runtime.bootTime`` is that boot, its module runs with those options, whatever is configured
since; after any other boot what it loaded is not known, and the policy is not in effect for
gpulab until it reboots the host again (``gpulab:vgpu_policy_apply: true``) or the arm is
refused.

:func:`ensure_policy` does that per host, one host at a time: read; when the arm's policy is
not in effect, refuse with one line (``apply`` false), or set the options, enter maintenance
mode (refused when powered-on VMs are on the host: gpulab moves and powers off no VM), reboot,
wait until the host is back (bounded), read the options back, mark the host and leave
maintenance mode (:mod:`infra.clouds.vsphere_host`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from infra.clouds import CloudError
from infra.clouds import vsphere_host as esx
from infra.clouds.vsphere import ServiceInstance, gpu_hosts, guard

MODULE = "nvidia"
# gpulab:vgpu_policy -> RmPVMRL value (NVIDIA vGPU user guide, "RmPVMRL Registry Key").
RMPVMRL = {"best-effort": "0x00", "equal-share": "0x01", "fixed-share": "0x11"}
SCHEDULERS = {0x00: "best-effort", 0x01: "equal-share", 0x11: "fixed-share"}
DEFAULT_POLICY = "best-effort"  # no RmPVMRL in the module's options
DWORDS = "NVreg_RegistryDwords"
KEY = "RmPVMRL"
MARKER = "gpulab.nvidia-options"  # HostSystem custom attribute: "boot=<ISO> options=<string>"
# vGPU families of Maxwell GPUs, whose scheduling policy cannot be changed
MAXWELL = ("grid_m6-", "grid_m10-", "grid_m60-")
DOC = (
    "NVIDIA Virtual GPU Software User Guide: Changing Scheduling Behavior for Time-Sliced "
    "vGPUs / RmPVMRL Registry Key"
)


def policy_of_value(value: str) -> str | None:
    """The policy an RmPVMRL value selects (``0x01``, ``0x00030011`` ...); None for a value
    no documented policy has."""
    try:
        v = int(value.strip(), 0)
    except ValueError:
        return None
    if v < 0 or v & ~0x00FF00FF:
        return None
    policy = SCHEDULERS.get(v & 0xFF)
    if policy == DEFAULT_POLICY and v >> 16:
        return None  # best effort takes no time slice
    return policy


def _split(options: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(the other module parameters, the registry DWORDs as (name, value)) of an option string."""
    others: list[str] = []
    dwords: list[tuple[str, str]] = []
    for token in options.split():
        name, sep, value = token.partition("=")
        if name == DWORDS and sep:
            for item in value.strip("\"'").split(";"):
                key, _, val = item.partition("=")
                if key.strip():
                    dwords.append((key.strip(), val.strip()))
        else:
            others.append(token)
    return others, dwords


def policy_of_options(options: str) -> str | None:
    """The policy the ``nvidia`` option string selects: its RmPVMRL value's, the default
    (best effort) without one, None for a value no documented policy has."""
    values = [v for k, v in _split(options)[1] if k == KEY]
    if not values:
        return DEFAULT_POLICY
    return policy_of_value(values[-1])


def with_policy(options: str, policy: str) -> str:
    """``options`` with RmPVMRL set to ``policy``'s value; every other option and DWORD kept."""
    if policy not in RMPVMRL:
        raise ValueError(f"vGPU policy {policy!r} is not one of {', '.join(RMPVMRL)}")
    others, dwords = _split(options)
    kept = [f"{k}={v}" for k, v in dwords if k != KEY] + [f"{KEY}={RMPVMRL[policy]}"]
    return " ".join([*others, f"{DWORDS}={';'.join(kept)}"])


def module_options(policy: str) -> str:
    """The ``nvidia`` module option string that selects ``policy`` (no other options)."""
    return with_policy("", policy)


def esxcli_command(policy: str, options: str = "") -> str:
    """The ESXi shell command that sets ``policy`` over ``options`` (then reboot the host)."""
    return f'esxcli system module parameters set -m {MODULE} -p "{with_policy(options, policy)}"'


@dataclass
class HostPolicy:
    """What one ESXi host reports about the policy (see the module docstring)."""

    host: str
    configured: str  # the nvidia option string configured for the next load
    configured_policy: str | None  # the policy it selects (None: no documented one)
    boot_time: str  # runtime.bootTime, ISO
    loaded: str | None  # the options loaded at this boot, where gpulab saw that boot
    in_effect: str | None  # the policy the loaded module runs (None: not known)
    evidence: str  # how gpulab knows, in words

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PolicyPlan:
    """An arm's policy on the hosts its vGPUs may run on, and what gpulab found and did."""

    policy: str
    registry_dword: str
    command: str
    hosts: list[str]
    applied: list[str] = field(default_factory=list)  # hosts gpulab set and rebooted
    states: list[dict[str, Any]] = field(default_factory=list)  # HostPolicy of each host
    steps: list[str] = field(default_factory=list)  # one line per host: what it waited for
    in_effect: str | None = None  # the policy, once every host runs it
    source: str = DOC

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def policy_hosts(si: ServiceInstance, cluster: str, profile: str | None = None) -> list[str]:
    """ESXi hosts of ``cluster`` with an NVIDIA GPU (that support ``profile`` when given):
    the hosts whose vGPU manager runs the lab's vGPUs."""
    return [h.name for h in _policy_hosts(si, cluster, profile)]


def _policy_hosts(si: ServiceInstance, cluster: str, profile: str | None) -> list[Any]:
    return [
        h for h in gpu_hosts(si, cluster=cluster) if profile is None or profile in h.vgpu_profiles
    ]


def plan_policy(
    si: ServiceInstance, cluster: str, policy: str, profile: str | None = None
) -> PolicyPlan:
    """The command for ``policy`` and the hosts it is for; nothing is read or changed on them.
    A host whose GPUs cannot change the policy (Maxwell) is refused with one line."""
    if policy not in RMPVMRL:
        raise CloudError(f"vGPU policy {policy!r}: not one of {', '.join(RMPVMRL)}")
    hosts = _policy_hosts(si, cluster, profile)
    if not hosts:
        raise CloudError(
            f"vGPU policy {policy}: no host of cluster {cluster} has an NVIDIA GPU"
            + (f" supporting {profile}" if profile else "")
        )
    for h in hosts:
        if h.vgpu_profiles and all(p.startswith(MAXWELL) for p in h.vgpu_profiles):
            raise CloudError(
                f"ESXi host {h.name}: vGPU policy {policy}: its GPUs ("
                + ", ".join(sorted({g.device_name for g in h.gpus}))
                + ") are Maxwell, whose scheduling policy cannot be changed (Pascal and later)"
            )
    return PolicyPlan(
        policy=policy,
        registry_dword=f"{KEY}={RMPVMRL[policy]}",
        command=esxcli_command(policy),
        hosts=[h.name for h in hosts],
    )


# ------------------------------------------------------------------------- read from the host


def configured_options(si: ServiceInstance, host: str, obj: Any = None) -> str:
    """The ``nvidia`` module option string configured on ``host`` now."""
    h = obj if obj is not None else esx.host_object(si, host)
    with guard(f"ESXi host {host}: read {MODULE} module options"):
        kms = h.configManager.kernelModuleSystem
        if kms is None:
            raise CloudError(f"ESXi host {host}: no kernel module system (not an ESXi host)")
        return str(kms.QueryConfiguredModuleOptionString(name=MODULE) or "")


def _iso(t: datetime | None) -> str:
    return t.isoformat() if t is not None else ""


def _marker_key(si: ServiceInstance, create: bool) -> int | None:
    from pyVmomi import vim

    cfm = si.RetrieveContent().customFieldsManager
    for f in cfm.field or []:
        if f.name == MARKER and f.managedObjectType in (vim.HostSystem, None):
            return int(f.key)
    if not create:
        return None
    return int(cfm.AddCustomFieldDef(name=MARKER, moType=vim.HostSystem).key)


def marker_of(si: ServiceInstance, host: Any) -> tuple[str, str] | None:
    """(boot time, options) of the host's mark, or None."""
    key = _marker_key(si, create=False)
    if key is None:
        return None
    for v in host.customValue or []:
        if int(v.key) == key:
            boot, sep, options = str(getattr(v, "value", "") or "").partition(" options=")
            if sep and boot.startswith("boot="):
                return boot[len("boot=") :], options
    return None


def set_marker(si: ServiceInstance, host: Any, name: str, boot: str, options: str) -> None:
    """Mark the host: the module loaded ``options`` at the boot of ``boot``."""
    with guard(f"ESXi host {name}: mark the loaded {MODULE} options ({MARKER})"):
        key = _marker_key(si, create=True)
        si.RetrieveContent().customFieldsManager.SetField(
            entity=host, key=key, value=f"boot={boot} options={options}"
        )


def read_host(si: ServiceInstance, name: str, obj: Any = None) -> HostPolicy:
    """What ``name`` reports: the configured options, its boot, and the policy in effect when
    gpulab saw the module load at this boot (see the module docstring)."""
    h = obj if obj is not None else esx.host_object(si, name)
    configured = configured_options(si, name, h)
    with guard(f"ESXi host {name}: read its boot time and {MARKER}"):
        boot = _iso(esx.boot_time(h))
        mark = marker_of(si, h)
    loaded = mark[1] if mark is not None and boot and mark[0] == boot else None
    if loaded is not None:
        in_effect = policy_of_options(loaded)
        evidence = f"loaded at this boot ({boot}), seen by gpulab after its reboot"
    elif mark is not None:
        in_effect = None
        evidence = f"rebooted ({boot}) since gpulab saw the module load ({mark[0]})"
    else:
        in_effect = None
        evidence = "no boot seen by gpulab: the vSphere API reads only the configured options"
    return HostPolicy(
        name, configured, policy_of_options(configured), boot, loaded, in_effect, evidence
    )


# ---------------------------------------------------------------------------------- in effect


def _refusal(state: HostPolicy, policy: str) -> str:
    value = RMPVMRL[policy]
    if state.configured_policy is None:
        conf = f"configured {state.configured!r}, an RmPVMRL value no documented policy has"
    else:
        conf = f"configured {state.configured_policy}"
    running = state.in_effect or "not known"
    return (
        f"ESXi host {state.host}: vGPU policy {policy} (RmPVMRL={value}) is not in effect "
        f"(running: {running}; {conf}; {state.evidence}); the measurement does not start: "
        "set gpulab:vgpu_policy_apply: true to let gpulab set it and reboot the host in "
        "maintenance mode"
    )


def _change(
    si: ServiceInstance, h: Any, state: HostPolicy, policy: str, timeout_s: float
) -> tuple[str, str]:
    """Set, maintenance mode, reboot, read back, mark, exit; (the options, the line of waits)."""
    name = state.host
    busy = esx.powered_on_vms(h)
    if busy:
        raise CloudError(
            f"ESXi host {name}: maintenance mode for vGPU policy {policy}: powered-on VMs on "
            f"it: {', '.join(busy)}; gpulab moves and powers off no VM: move them (vMotion) "
            "or power them off, or build the lab again (its own VMs come after the policy)"
        )
    want = with_policy(state.configured, policy)
    if state.configured != want:
        with guard(f"ESXi host {name}: set {MODULE} module options"):
            h.configManager.kernelModuleSystem.UpdateModuleOptionString(name=MODULE, options=want)
    was_in_mm = bool(h.runtime.inMaintenanceMode)  # the operator's: it stays so afterwards
    t_mm = esx.enter_maintenance(h, name, timeout_s)
    t_boot = esx.reboot(h, name, timeout_s)
    got = configured_options(si, name, h)
    if got != want:
        raise CloudError(
            f"ESXi host {name}: read back after reboot: {MODULE} options are {got!r}, "
            f"not {want!r}; it stays in maintenance mode"
        )
    with guard(f"ESXi host {name}: read its boot time"):
        boot = _iso(esx.boot_time(h))
    set_marker(si, h, name, boot, got)
    if was_in_mm:
        left = "left in maintenance mode, as it was"
    else:
        left = f"exit {esx.exit_maintenance(h, name, timeout_s):.1f} s"
    return got, (
        f"ESXi host {name}: vGPU policy {policy} ({KEY}={RMPVMRL[policy]}) in effect after "
        f"maintenance mode {t_mm:.1f} s, reboot {t_boot:.1f} s (limit {timeout_s:.0f} s), "
        f"{left}"
    )


def ensure_policy(
    si: ServiceInstance,
    plan: PolicyPlan,
    apply: bool,
    timeout_s: float,
    say: esx.Say | None = None,
) -> PolicyPlan:
    """The plan's policy in effect on each of its hosts, or CloudError (one line naming the
    host and the step). ``apply``: change it where it is not (maintenance mode, reboot,
    read-back); otherwise refuse. ``say`` gets one line per host."""
    for name in plan.hosts:
        t0 = time.monotonic()
        h = esx.host_object(si, name)
        state = read_host(si, name, h)
        if state.in_effect != plan.policy:
            if not apply:
                raise CloudError(_refusal(state, plan.policy))
            _, line = _change(si, h, state, plan.policy, timeout_s)
            plan.applied.append(name)
            state = read_host(si, name, h)
            if state.in_effect != plan.policy:  # the mark says otherwise: never measure on it
                raise CloudError(_refusal(state, plan.policy))
        else:
            line = (
                f"ESXi host {name}: vGPU policy {plan.policy} in effect ({state.evidence}); "
                f"read in {time.monotonic() - t0:.1f} s"
            )
        plan.states.append(state.as_dict())
        plan.steps.append(line)
        if say is not None:
            say(line)
    plan.in_effect = plan.policy
    return plan
