"""The vGPU study's factors as a record's sharing states them (workloads.setting: ``sharing``
is ``KIND[:DETAIL]``): ``vgpu:<profile>[.<policy>][.<N>-per-gpu][.kw<N>]``.

  profile      the NVIDIA vGPU profile of the measuring VM (``grid_p100-8q``)
  policy       the vGPU scheduling policy IN EFFECT on the ESXi hosts, as they report it after
               gpulab saw them boot with it (best-effort, equal-share, fixed-share); absent
               when the lab states none (the stack sets no gpulab:vgpu_policy)
  N-per-gpu    the VMs one GPU holds with that profile (gpulab:vgpu_vms_per_gpu), when stated
  kwN          CPU-only knowledge-worker VMs running beside them (gpulab:kw_vm_count), when > 0

e.g. ``vgpu:grid_p100-8q.equal-share.2-per-gpu.kw32``. The lab writes it
(infra/topologies/vsphere_gpu) and the report reads it (the mixed-workload claim compares arms
that differ only in kwN): one spec for both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

KIND = "vgpu"
_PER_GPU = re.compile(r"^([1-9][0-9]{0,2})-per-gpu$")
_KW = re.compile(r"^kw([1-9][0-9]{0,3})$")
_PROFILE = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class VgpuFactors:
    profile: str
    policy: str | None = None  # in effect on the hosts (None: not stated)
    vms_per_gpu: int | None = None
    kw_vms: int = 0

    def sharing(self) -> str:
        """The records' sharing, ``vgpu:<profile>[.<policy>][.<N>-per-gpu][.kw<N>]``."""
        parts = [self.profile]
        if self.policy:
            parts.append(self.policy)
        if self.vms_per_gpu:
            parts.append(f"{self.vms_per_gpu}-per-gpu")
        if self.kw_vms:
            parts.append(f"kw{self.kw_vms}")
        return f"{KIND}:" + ".".join(parts)

    def without_kw(self) -> VgpuFactors:
        """The same arm without knowledge-worker VMs (the mixed-workload claim's reference)."""
        return replace(self, kw_vms=0)


def parse(sharing: object) -> VgpuFactors | None:
    """The factors of a record's ``sharing``; None when it is not ``vgpu:<detail>`` or the
    detail does not read as one (a hand-set sharing, an older record)."""
    if not isinstance(sharing, str) or not sharing.startswith(f"{KIND}:"):
        return None
    profile, *rest = sharing[len(KIND) + 1 :].split(".")
    if not _PROFILE.match(profile):
        return None
    policy: str | None = None
    per_gpu: int | None = None
    kw = 0
    for part in rest:
        if (m := _PER_GPU.match(part)) and per_gpu is None:
            per_gpu = int(m.group(1))
        elif (m := _KW.match(part)) and not kw:
            kw = int(m.group(1))
        elif policy is None and per_gpu is None and not kw and re.match(r"^[a-z-]+$", part):
            policy = part
        else:
            return None
    return VgpuFactors(profile, policy, per_gpu, kw)
