"""``vsphere-gpu``: VMs cloned from a template reaching GPUs by ``gpulab:mode``: ``vgpu``
(an NVIDIA vGPU profile), ``passthrough`` (DirectPath I/O) or ``bitfusion`` (remote GPUs)."""

from __future__ import annotations

from typing import Any

from infra.topologies.contract import Topology
from infra.topologies.vsphere_gpu.args import VGPU_TOKEN_INPUT, VsphereGpuArgs, check_config

GPU_PATH = {"passthrough": "pci-passthrough", "vgpu": "vgpu", "bitfusion": "bitfusion"}


def site_secrets(args: VsphereGpuArgs) -> dict[str, Any]:
    """The vGPU guests' license token, for the site run's nvidia_vgpu_guest role."""
    token = args.vgpu_license_token
    return {} if token is None else {VGPU_TOKEN_INPUT: token}


SPEC = Topology(
    name="vsphere-gpu",
    summary="VMs cloned from a template; mode vgpu (profile), passthrough (DirectPath I/O, full "
    "memory reservation, EFI, 64-bit MMIO) or bitfusion (clients of a Bitfusion server)",
    order=40,
    args=VsphereGpuArgs,
    builder="infra.topologies.vsphere_gpu.build",
    checks="infra.topologies.vsphere_gpu.checks",
    gpu_paths=("pci-passthrough", "vgpu", "bitfusion"),
    gpu_path=lambda args: GPU_PATH[args.mode or "passthrough"],
    mode_envs={"bitfusion": ("bitfusion",)},
    check_config=check_config,
    stack_file="examples/vsphere-gpu/Pulumi.vsphere-gpu.yaml",
    extras=("vsphere",),
    site_secrets=site_secrets,
)
