"""The keys of ``vsphere-gpu``: the vCenter and where VMs go, how they reach GPUs
(``gpulab:mode``) with each mode's own keys, the vGPU study factors (the VMware vGPU paper:
the scheduling policy set on the ESXi hosts, the VMs each GPU holds with the arm's profile,
CPU-only knowledge-worker VMs), and the rules across them."""

from dataclasses import dataclass
from typing import Annotated as A  # the key tables' lines stay short
from typing import Any

from infra.keys.key import K, keys_of
from infra.keys.lab import HOST_COUNT, LabArgs
from infra.keys.types import (
    MAX_BAR_GB,
    MAX_GPUS,
    MAX_KW_VMS,
    MAX_MEMORY_MB,
    MAX_VCPUS,
    VGPU_PROFILE_RE,
    Bool,
    Int,
    List,
    Name,
    OneOf,
    Parsed,
    Secret,
    Str,
    Text,
    _pci_address,
)

VSPHERE_MODES = ("passthrough", "vgpu", "bitfusion")
VGPU_POLICIES = ("best-effort", "equal-share", "fixed-share")
PASSTHROUGH, VGPU, BITFUSION = (frozenset({m}) for m in VSPHERE_MODES)
# Keys a mode must have (beyond the topology's required keys).
MODE_REQUIRED = {
    "passthrough": ("gpu_host", "pci_device_ids", "gpu_bar_gb"),
    "vgpu": ("vgpu_profile",),
    "bitfusion": ("bitfusion_server",),
}


@dataclass(frozen=True, kw_only=True)
class VsphereGpuArgs(LabArgs):
    """What ``vsphere-gpu`` takes."""

    # fmt: off
    host_count: A[int | None, HOST_COUNT] = None
    vsphere_server: A[str | None, K(Str, "vCenter address", True)] = None
    vsphere_user: A[str | None, K(Str, "vCenter user", True)] = None
    vsphere_password: A[Any, K(Secret, "vCenter password", True, secret=True)] = None
    vsphere_insecure: A[bool, K(Bool, "skip TLS verification", default=False)] = False
    datacenter: A[str | None, K(Str, "vSphere datacenter", True)] = None
    cluster: A[str | None, K(Str, "compute cluster", True)] = None
    datastore: A[str | None, K(Str, "datastore for the VMs", True)] = None
    network: A[str | None, K(Str, "port group for the VMs", True)] = None
    template: A[str | None, K(Str, "VM template to clone", True)] = None
    folder: A[str | None, K(Str, "VM folder")] = None
    domain: A[str | None, K(Name, "guest customization domain", default="gpulab.local")] = None
    mode: A[str | None, K(OneOf(*VSPHERE_MODES), "how VMs reach GPUs", True)] = None
    vm_cpus: A[int | None, K(Int(1, MAX_VCPUS), "vCPUs per VM", default=8)] = None
    vm_memory_mb: A[int | None, K(Int(1, MAX_MEMORY_MB), "memory per VM in MiB",
                                  default=32768)] = None
    gpu_host: A[str | None, K(Str, "ESXi host holding the passthrough GPUs",
                              modes=PASSTHROUGH)] = None
    pci_device_ids: A[tuple[str, ...], K(
        List(Parsed(_pci_address, ""), "PCI addresses like 0000:3b:00.0"),
        "GPU PCI addresses on gpu_host, gpus_per_vm per VM in order", modes=PASSTHROUGH)] = ()
    gpus_per_vm: A[int | None, K(Int(1, MAX_GPUS), "passthrough GPUs per VM", default=1,
                                 modes=PASSTHROUGH)] = None
    gpu_bar_gb: A[int | None, K(Int(1, MAX_BAR_GB), "BAR1 size of one GPU in GB (e.g. 16 for "
                                "P100/V100-16GB)", modes=PASSTHROUGH)] = None
    vgpu_profile: A[str | None, K(Text(VGPU_PROFILE_RE, "an NVIDIA vGPU profile name like "
                                       "grid_p100-4q, grid_t4-8c or grid_a100-3-20c"),
                                  "vGPU profile", modes=VGPU)] = None
    vgpu_license_token: A[Any, K(Secret, "NVIDIA license client token (Ansible gridd)",
                                 modes=VGPU, secret=True)] = None
    bitfusion_server: A[str | None, K(Str, "Bitfusion server address", modes=BITFUSION)] = None
    vgpu_policy: A[str | None, K(OneOf(*VGPU_POLICIES), "vGPU scheduling policy on the ESXi "
                                 "hosts (RmPVMRL; see docs/topologies.md)", modes=VGPU)] = None
    vgpu_policy_apply: A[bool, K(Bool, "let gpulab set vgpu_policy on the hosts' nvidia module "
                                 "and reboot each host in maintenance mode (else a policy not in "
                                 "effect refuses the lab)", default=False, modes=VGPU)] = False
    vgpu_policy_timeout_s: A[int, K(Int(10, 86400), "seconds gpulab waits for each host to "
                                    "enter maintenance mode and to come back from its reboot",
                                    default=1800, modes=VGPU)] = 1800
    vgpu_vms_per_gpu: A[int | None, K(Int(1, 32), "VMs one GPU holds with vgpu_profile "
                                      "(checked against the hosts' profiles)", modes=VGPU)] = None
    kw_vm_count: A[int, K(Int(0, MAX_KW_VMS), "CPU-only knowledge-worker VMs", default=0)] = 0
    kw_vm_cpus: A[int | None, K(Int(1, MAX_VCPUS), "vCPUs per knowledge-worker VM",
                                default=2)] = None
    kw_vm_memory_mb: A[int | None, K(Int(256, MAX_MEMORY_MB), "memory per knowledge-worker VM "
                                     "in MiB", default=4096)] = None
    # fmt: on


# The role input gpulab:vgpu_license_token is handed to (the site run's secrets).
VGPU_TOKEN_INPUT = "nvidia_vgpu_guest_client_token"


def check_config(raw: dict[str, Any], values: dict[str, Any], problems: list[str]) -> None:
    """Keys of the other modes are refused; the mode's own required keys must be there; the
    license token is given once."""
    if values.get("vgpu_license_token") is not None and VGPU_TOKEN_INPUT in (
        values.get("site") or {}
    ):
        problems.append(
            f"gpulab:vgpu_license_token and gpulab:site.{VGPU_TOKEN_INPUT} both set the vGPU "
            "license token: keep one"
        )
    mode = values.get("mode")
    if mode is None:
        return
    keys = keys_of(VsphereGpuArgs)
    for f in keys:
        if f.modes and mode not in f.modes:
            if f.key in raw:
                problems.append(
                    f"gpulab:{f.key} is only used with gpulab:mode "
                    + " or ".join(sorted(f.modes))
                    + f", not {mode}"
                )
            values.pop(f.key, None)
    by_key = {f.key: f for f in keys}
    for key in MODE_REQUIRED[mode]:
        if key not in raw:
            problems.append(
                f"gpulab:{key} is required for vsphere-gpu mode {mode}: " + by_key[key].help
            )
    ids = values.get("pci_device_ids")
    if mode == "passthrough" and isinstance(ids, tuple):
        want = values.get("host_count", 1) * values.get("gpus_per_vm", 1)
        if len(set(ids)) != len(ids):
            problems.append("gpulab:pci_device_ids must not repeat a device")
        elif len(ids) != want:
            problems.append(
                f"gpulab:pci_device_ids must list host_count x gpus_per_vm = {want} "
                f"devices, got {len(ids)}"
            )
