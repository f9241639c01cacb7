"""``vsphere-gpu``'s preflight (the vCenter inventory, and per mode the vGPU profile, the VMs
per GPU, the scheduling policy, or the passthrough devices) and audit. The vCenter connection
is made from ``gpulab:vsphere_server``/``vsphere_user`` with the password from
``VSPHERE_PASSWORD``, as pulumi-vsphere reads it, unless a caller hands one in."""

from __future__ import annotations

import os
from typing import Any

from infra.clouds import Check, CloudError, connected, ok, vsphere
from infra.clouds import vsphere_preflight as vp
from infra.clouds.vsphere_audit import audit_vsphere
from infra.topologies.contract import Conns
from infra.topologies.vsphere_gpu.args import VsphereGpuArgs

CONNECTION_FIX = (
    "check gpulab:vsphere_server (host[:port]), gpulab:vsphere_user (or VSPHERE_USER), "
    "VSPHERE_PASSWORD and gpulab:vsphere_insecure"
)


def vsphere_connection(args: VsphereGpuArgs) -> Any:
    assert args.vsphere_server is not None
    host, port = vsphere.split_server(args.vsphere_server)
    user = os.environ.get("VSPHERE_USER") or args.vsphere_user or ""
    password = os.environ.get("VSPHERE_PASSWORD", "")
    if not password:
        raise CloudError(
            f"vCenter {host}:{port}: no password: set VSPHERE_PASSWORD (the stack "
            "file keeps gpulab:vsphere_password encrypted)"
        )
    return vsphere.connect(host, user, password, port=port, insecure=args.vsphere_insecure)


def vcenter(args: VsphereGpuArgs, conns: Conns) -> tuple[Any, list[Check]]:
    """The handed-in vCenter service instance, or one made from ``args``."""
    if conns.si is not None:
        return conns.si, []
    return connected("vcenter connection", lambda: vsphere_connection(args), CONNECTION_FIX)


def preflight(args: VsphereGpuArgs, conns: Conns) -> list[Check]:
    si, rows = vcenter(args, conns)
    if si is None:
        return rows
    assert args.datacenter and args.cluster and args.datastore and args.network
    assert args.template
    rows = [ok("vcenter connection", f"logged in to {args.vsphere_server}")]
    rows += vp.check_inventory(
        si,
        datacenter=args.datacenter,
        cluster=args.cluster,
        datastore=args.datastore,
        network=args.network,
        template=args.template,
    )
    vms = args.host_count or 1
    if args.mode == "vgpu":
        assert args.vgpu_profile
        rows += vp.check_vgpu(si, cluster=args.cluster, profile=args.vgpu_profile, vms=vms)
        if args.vgpu_vms_per_gpu:
            rows += vp.check_vms_per_gpu(
                si, cluster=args.cluster, profile=args.vgpu_profile, per_gpu=args.vgpu_vms_per_gpu
            )
        if args.vgpu_policy:
            rows += vp.check_policy(
                si,
                cluster=args.cluster,
                profile=args.vgpu_profile,
                policy=args.vgpu_policy,
                apply=args.vgpu_policy_apply,
            )
    elif args.mode == "passthrough":
        assert args.gpu_host
        rows += vp.check_passthrough(
            si, cluster=args.cluster, gpu_host=args.gpu_host, pci_device_ids=args.pci_device_ids
        )
    return rows


def audit(args: VsphereGpuArgs, conns: Conns) -> list[Check]:
    si, rows = vcenter(args, conns)
    if si is None:
        return rows
    found: list[Check] = audit_vsphere(si, args.lab)
    return found
