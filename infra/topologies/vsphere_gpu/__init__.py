"""``vsphere-gpu``: VMs cloned from a template reaching GPUs by ``gpulab:mode``: ``vgpu``
(an NVIDIA vGPU profile), ``passthrough`` (DirectPath I/O) or ``bitfusion`` (remote GPUs)."""

from __future__ import annotations

from typing import Any

from infra.specs.topology import Conns, Topology

GPU_PATH = {"passthrough": "pci-passthrough", "vgpu": "vgpu", "bitfusion": "bitfusion"}


def preflight(cfg: Any, conns: Conns) -> list[Any]:
    from infra import preflight as pf
    from infra.clouds import ok
    from infra.clouds import vsphere_preflight as vp

    si, rows = pf.vcenter(cfg, conns)
    if si is None:
        return rows
    assert cfg.datacenter and cfg.cluster and cfg.datastore and cfg.network and cfg.template
    rows = [ok("vcenter connection", f"logged in to {cfg.vsphere_server}")]
    rows += vp.check_inventory(
        si,
        datacenter=cfg.datacenter,
        cluster=cfg.cluster,
        datastore=cfg.datastore,
        network=cfg.network,
        template=cfg.template,
    )
    vms = cfg.host_count or 1
    if cfg.mode == "vgpu":
        assert cfg.vgpu_profile
        rows += vp.check_vgpu(si, cluster=cfg.cluster, profile=cfg.vgpu_profile, vms=vms)
        if cfg.vgpu_vms_per_gpu:
            rows += vp.check_vms_per_gpu(
                si, cluster=cfg.cluster, profile=cfg.vgpu_profile, per_gpu=cfg.vgpu_vms_per_gpu
            )
        if cfg.vgpu_policy:
            rows += vp.check_policy(
                si, cluster=cfg.cluster, profile=cfg.vgpu_profile, policy=cfg.vgpu_policy
            )
    elif cfg.mode == "passthrough":
        assert cfg.gpu_host
        rows += vp.check_passthrough(
            si, cluster=cfg.cluster, gpu_host=cfg.gpu_host, pci_device_ids=cfg.pci_device_ids
        )
    return rows


def audit(cfg: Any, conns: Conns) -> list[Any]:
    from infra import preflight as pf
    from infra.clouds.vsphere_audit import audit_vsphere

    si, rows = pf.vcenter(cfg, conns)
    if si is None:
        return rows
    found: list[Any] = audit_vsphere(si, cfg.lab)
    return found


def check_config(raw: dict[str, Any], values: dict[str, Any], problems: list[str]) -> None:
    """Keys of the other modes are refused; the mode's own required keys must be there."""
    from infra.config.fields import BY_KEY, FIELDS, MODE_REQUIRED

    mode = values.get("mode")
    if mode is None:
        return
    for f in FIELDS:
        if f.modes and mode not in f.modes:
            if f.key in raw:
                problems.append(
                    f"gpulab:{f.key} is only used with gpulab:mode "
                    + " or ".join(sorted(f.modes))
                    + f", not {mode}"
                )
            values.pop(f.key, None)
    for key in MODE_REQUIRED[mode]:
        if key not in raw:
            problems.append(
                f"gpulab:{key} is required for vsphere-gpu mode {mode}: " + BY_KEY[key].help
            )
    ids = values.get("pci_device_ids")
    if mode == "passthrough" and isinstance(ids, list):
        want = values.get("host_count", 1) * values.get("gpus_per_vm", 1)
        if len(set(ids)) != len(ids):
            problems.append("gpulab:pci_device_ids must not repeat a device")
        elif len(ids) != want:
            problems.append(
                f"gpulab:pci_device_ids must list host_count x gpus_per_vm = {want} "
                f"devices, got {len(ids)}"
            )


SPEC = Topology(
    name="vsphere-gpu",
    summary="VMs cloned from a template; mode vgpu (profile), passthrough (DirectPath I/O, full "
    "memory reservation, EFI, 64-bit MMIO) or bitfusion (clients of a Bitfusion server)",
    order=40,
    builder="infra.topologies.vsphere_gpu",
    gpu_path=lambda cfg: GPU_PATH[cfg.mode or "passthrough"],
    settings={"pci-passthrough": "vm-passthrough", "vgpu": "vgpu", "bitfusion": "remote-gpu"},
    preflight=preflight,
    audit=audit,
    mode_envs={"bitfusion": ("bitfusion",)},
    check_config=check_config,
    stack_file="examples/vsphere-gpu/Pulumi.vsphere-gpu.yaml",
)
