"""vSphere preflight: the inventory a vsphere-gpu stack names exists, and its hosts can give
the VMs their GPUs (vGPU profile supported with room for every VM, or passthrough enabled on
the listed devices)."""

from __future__ import annotations

import re
from typing import Any

from infra.clouds import Check, CloudError, fail, ok
from infra.clouds.vgpu_policy import plan_policy, read_host
from infra.clouds.vsphere import GpuHost, ServiceInstance, _objects, gpu_hosts, guard
from infra.clouds.vsphere_host import host_object, powered_on_vms

_FB = re.compile(r"^(?P<family>grid_[a-z0-9]+)-(?:\d+-)?(?P<fb>\d+)[a-z]$")


def check_inventory(
    si: ServiceInstance,
    *,
    datacenter: str,
    cluster: str,
    datastore: str,
    network: str,
    template: str,
) -> list[Check]:
    """Each inventory name of the stack exists in vCenter."""
    from pyVmomi import vim

    wanted = (
        ("datacenter", vim.Datacenter, datacenter, "gpulab:datacenter"),
        ("cluster", vim.ClusterComputeResource, cluster, "gpulab:cluster"),
        ("datastore", vim.Datastore, datastore, "gpulab:datastore"),
        ("network", vim.Network, network, "gpulab:network"),
        ("template", vim.VirtualMachine, template, "gpulab:template"),
    )
    rows = []
    for label, kind, name, key in wanted:
        row = f"vsphere {label} {name}"
        try:
            with guard(f"vSphere {label} lookup"):
                names = sorted(r.get("name", "") for r in _objects(si, kind, ["name"]))
        except CloudError as exc:
            rows.append(fail(row, str(exc), "grant the user read access to the inventory"))
            continue
        if name in names:
            rows.append(ok(row, "found"))
        else:
            have = ", ".join(names[:6]) + (" ..." if len(names) > 6 else "")
            rows.append(
                fail(
                    row, f"not found (have: {have or 'none'})", f"set {key} to an existing {label}"
                )
            )
    return rows


def profile_framebuffer(profile: str) -> tuple[str, int] | None:
    """``grid_p100-4q`` -> (``grid_p100``, 4); MIG-backed ``grid_a100-3-20c`` -> (.., 20)."""
    m = _FB.match(profile)
    return (m.group("family"), int(m.group("fb"))) if m else None


def vgpu_capacity(host: GpuHost, profile: str) -> int:
    """VMs of ``profile`` that ``host`` can hold: per GPU, the family's largest profile (the
    whole framebuffer) divided by this profile's framebuffer."""
    if profile not in host.vgpu_profiles:
        return 0
    mine = profile_framebuffer(profile)
    if mine is None:
        return len(host.gpus)
    family, fb = mine
    full = max(
        (p[1] for p in map(profile_framebuffer, host.vgpu_profiles) if p and p[0] == family),
        default=fb,
    )
    return len(host.gpus) * max(1, full // fb)


def check_vgpu(si: ServiceInstance, *, cluster: str, profile: str, vms: int) -> list[Check]:
    """Hosts of ``cluster`` support ``profile`` with room for ``vms`` VMs."""
    row = f"vgpu profile {profile}"
    try:
        hosts = gpu_hosts(si, cluster=cluster)
    except CloudError as exc:
        return [fail(row, str(exc), "grant the user read access to the hosts")]
    able = {h.name: vgpu_capacity(h, profile) for h in hosts}
    able = {k: v for k, v in able.items() if v}
    if not able:
        seen = sorted({p for h in hosts for p in h.vgpu_profiles})
        offer = ", ".join(seen) if seen else "none (no NVIDIA GPU with a vGPU host driver)"
        return [
            fail(
                row,
                f"no host of cluster {cluster} supports it; supported: {offer}",
                "set gpulab:vgpu_profile to a supported profile, or install the NVIDIA "
                "vGPU host driver and set the host graphics type to Shared Direct",
            )
        ]
    room = sum(able.values())
    detail = "room for " + ", ".join(f"{k}: {v}" for k, v in sorted(able.items()))
    if room < vms:
        return [
            fail(
                row,
                f"{detail}; {vms} VMs need one each",
                "use a smaller profile, fewer hosts (gpulab:host_count) or add GPUs",
            )
        ]
    return [ok(row, f"{detail} ({vms} needed)")]


def check_vms_per_gpu(
    si: ServiceInstance, *, cluster: str, profile: str, per_gpu: int
) -> list[Check]:
    """The arm's ``vgpu_vms_per_gpu`` is what ``profile`` gives on the cluster's GPUs (the
    family's whole framebuffer over the profile's): the profile sweep's factor as stated."""
    row = f"vgpu VMs per GPU {profile}"
    try:
        hosts = [h for h in gpu_hosts(si, cluster=cluster) if profile in h.vgpu_profiles]
    except CloudError as exc:
        return [fail(row, str(exc), "grant the user read access to the hosts")]
    if not hosts:
        return [fail(row, f"no host of cluster {cluster} supports it", "see the profile row")]
    got = sorted({vgpu_capacity(h, profile) // max(1, len(h.gpus)) for h in hosts})
    if got != [per_gpu]:
        return [
            fail(
                row,
                f"{profile} puts {', '.join(map(str, got))} VM(s) on a GPU here, "
                f"gpulab:vgpu_vms_per_gpu says {per_gpu}",
                "pick the profile whose framebuffer is the GPU's divided by "
                "gpulab:vgpu_vms_per_gpu, or fix gpulab:vgpu_vms_per_gpu",
            )
        ]
    return [ok(row, f"{per_gpu} VM(s) per GPU")]


def check_policy(
    si: ServiceInstance, *, cluster: str, profile: str, policy: str, apply: bool = False
) -> list[Check]:
    """Per host the vGPU scheduling policy is for: in effect (as the host reports it), or what
    ``up`` will do (``apply``: set it and reboot the host, which powered-on VMs block) or
    refuse."""
    row = f"vgpu policy {policy}"
    try:
        plan = plan_policy(si, cluster, policy, profile)
    except CloudError as exc:
        return [fail(row, str(exc), "install the NVIDIA vGPU manager on the cluster's hosts")]
    rows = []
    for name in plan.hosts:
        r = f"{row} on {name}"
        try:
            host = host_object(si, name)
            state = read_host(si, name, host)
            busy = powered_on_vms(host)
        except CloudError as exc:
            rows.append(fail(r, str(exc), "grant the user Host.Config.Settings on the host"))
            continue
        running = state.in_effect or "not known"
        configured = state.configured_policy or repr(state.configured)
        if state.in_effect == policy:
            rows.append(ok(r, f"in effect ({state.evidence})"))
        elif not apply:
            rows.append(
                fail(
                    r,
                    f"not in effect (running: {running}; configured: {configured}; "
                    f"{state.evidence})",
                    "set gpulab:vgpu_policy_apply: true: up sets it, reboots the host in "
                    "maintenance mode and reads it back",
                )
            )
        elif busy:
            rows.append(
                fail(
                    r,
                    f"up must reboot it in maintenance mode, but powered-on VMs are on it: "
                    f"{', '.join(busy)}",
                    "move them (vMotion) or power them off before up: gpulab moves and powers "
                    "off no VM",
                )
            )
        else:
            rows.append(
                ok(
                    r,
                    f"up sets it ({plan.command}; other options kept), reboots the host in "
                    f"maintenance mode and reads it back (running now: {running})",
                )
            )
    return rows


def check_passthrough(
    si: ServiceInstance, *, cluster: str, gpu_host: str, pci_device_ids: list[str] | tuple[str, ...]
) -> list[Check]:
    """``gpu_host`` is in ``cluster`` and each listed device is an NVIDIA GPU with
    passthrough enabled (DirectPath I/O)."""
    row = f"passthrough host {gpu_host}"
    try:
        hosts = {h.name: h for h in gpu_hosts(si)}
    except CloudError as exc:
        return [fail(row, str(exc), "grant the user read access to the hosts")]
    host = hosts.get(gpu_host)
    if host is None:
        return [
            fail(
                row,
                "no such host with an NVIDIA GPU (have: "
                + (", ".join(sorted(hosts)) or "none")
                + ")",
                "set gpulab:gpu_host to a host that holds the GPUs",
            )
        ]
    rows = [
        ok(row, f"{len(host.gpus)} NVIDIA GPU(s)")
        if host.parent == cluster
        else fail(
            row,
            f"is in {host.parent}, not in cluster {cluster}",
            "set gpulab:gpu_host to a host of gpulab:cluster",
        )
    ]
    gpus = {g.id: g for g in host.gpus}
    for dev in pci_device_ids:
        g = gpus.get(dev)
        name = f"passthrough device {dev}"
        if g is None:
            rows.append(
                fail(
                    name,
                    f"not an NVIDIA device on {gpu_host} (have: " + ", ".join(sorted(gpus)) + ")",
                    "list the GPU addresses from esxcli hardware pci list",
                )
            )
        elif not g.passthrough_capable:
            rows.append(
                fail(
                    name,
                    "not passthrough capable (IOMMU/VT-d off?)",
                    "enable VT-d/IOMMU in the host's firmware",
                )
            )
        elif not g.passthrough_enabled:
            rows.append(
                fail(
                    name,
                    f"{g.device_name}: passthrough capable but not enabled",
                    f"enable passthrough for {dev} on {gpu_host} (Configure > PCI "
                    "Devices) and reboot the host",
                )
            )
        else:
            rows.append(ok(name, f"{g.device_name}: passthrough enabled"))
    return rows


__all__: list[Any] = [
    "check_inventory",
    "check_passthrough",
    "check_policy",
    "check_vgpu",
    "check_vms_per_gpu",
    "vgpu_capacity",
]
