"""Where a record ran, in the papers' words: the one place that maps records to settings.

A record's ``topology`` + ``arm`` give the paper "setting" (CLOSER 2018 vocabulary):

  ==============  ===============================  =========
  topology        arm                              setting
  ==============  ===============================  =========
  ironic-bm       native (anything not container)  bm
  ironic-bm       docker/singularity/k8s/...       cbm
  nova-pci        native                           vm
  nova-pci        docker/singularity/k8s/...       cvm
  magnum-k8s      container-bm                     cbm
  magnum-k8s      container-vm                     cvm
  magnum-k8s      other label: fingerprint VM?     cvm / cbm
  vsphere-gpu     native, vgpu, passthrough, ...   vm
  vsphere-gpu     docker/singularity/...           cvm
  local           native                           bm   (a bare-metal-like baseline)
  local           docker/singularity/...           cbm  (container on the same machine)
  ==============  ===============================  =========

An arm is a container arm when its label is one of CONTAINER_ARMS or starts with
``container``. Anything else (an unknown topology) has setting ``other``: it is tabulated and
plotted but never compared with a published number.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from workloads.errors import InputError

SETTINGS = ("bm", "cbm", "vm", "cvm")
SETTING_LABELS = {
    "bm": "BM",
    "cbm": "Container on BM",
    "vm": "VM",
    "cvm": "Container on VM",
    "other": "other",
}
CONTAINER_ARMS = frozenset({"docker", "singularity", "apptainer", "k8s", "podman", "container"})
BARE_TOPOLOGIES = frozenset({"ironic-bm", "local"})
VM_TOPOLOGIES = frozenset({"nova-pci", "vsphere-gpu"})
DEFAULT_BASELINES = ("ironic-bm", "local/native")


@dataclass(frozen=True, order=True)
class Arm:
    """One comparison arm: a topology and the arm label within it."""

    topology: str
    arm: str

    @property
    def label(self) -> str:
        return f"{self.topology}/{self.arm}"


def is_container_arm(arm: str) -> bool:
    a = arm.lower()
    return a in CONTAINER_ARMS or a.startswith("container")


def _fingerprint_says_vm(fp: dict[str, Any] | None) -> bool | None:
    if not fp:
        return None
    for key in ("vm", "virtualization", "virt"):
        v = fp.get(key)
        if isinstance(v, dict):
            for sub in ("is_vm", "vm", "detected"):
                if isinstance(v.get(sub), bool):
                    return bool(v[sub])
            kind = v.get("vm") or v.get("type")
            if isinstance(kind, str):
                return kind not in ("", "none")
        if isinstance(v, bool):
            return v
        if isinstance(v, str):
            return v not in ("", "none")
    if isinstance(fp.get("is_vm"), bool):
        return bool(fp["is_vm"])
    return None


def setting_of(topology: str, arm: str, fingerprint: dict[str, Any] | None = None) -> str:
    """The paper setting (bm, cbm, vm, cvm, or other) of a topology + arm."""
    a = arm.lower()
    if topology == "magnum-k8s":
        if a.startswith("container-bm") or a in ("bm", "k8s-bm"):
            return "cbm"
        if a.startswith("container-vm") or a in ("vm", "k8s-vm"):
            return "cvm"
        said = _fingerprint_says_vm(fingerprint)
        if said is None:
            return "other"
        return "cvm" if said else "cbm"
    if topology in BARE_TOPOLOGIES:
        base = "bm"
    elif topology in VM_TOPOLOGIES:
        base = "vm"
    else:
        return "other"
    return "c" + base if is_container_arm(a) else base


def parse_baseline(spec: str) -> tuple[str, str | None]:
    spec = spec.strip()
    if not spec or spec.count("/") > 1 or spec.startswith("/") or spec.endswith("/"):
        raise InputError(f"--baseline {spec!r} is not TOPOLOGY or TOPOLOGY/ARM")
    topo, _, arm = spec.partition("/")
    return topo, (arm or None)


def resolve_baseline(spec: str | None, arms: Iterable[Arm]) -> Arm:
    """The baseline arm among ``arms`` (those with ok records).

    ``spec`` is TOPOLOGY or TOPOLOGY/ARM. TOPOLOGY alone picks that topology's only arm, or its
    arm whose setting is ``bm``/``vm`` (not a container), or ``native``. ``None`` tries
    DEFAULT_BASELINES in order (``ironic-bm``, then ``local/native`` for a single machine).
    """
    present = sorted(set(arms))
    names = ", ".join(a.label for a in present) or "none"
    if spec is None:
        for cand in DEFAULT_BASELINES:
            try:
                return resolve_baseline(cand, present)
            except InputError:
                continue
        raise InputError(
            f"no baseline: neither ironic-bm nor local/native has ok records (arms: {names}); "
            "pass --baseline TOPOLOGY[/ARM]"
        )
    topo, arm = parse_baseline(spec)
    cands = [a for a in present if a.topology == topo and (arm is None or a.arm == arm)]
    if arm is None and len(cands) > 1:
        native = [a for a in cands if a.arm == "native"] or [
            a for a in cands if not is_container_arm(a.arm)
        ]
        cands = native if len(native) == 1 else cands
    if not cands:
        raise InputError(f"baseline {spec!r} has no ok records (arms present: {names})")
    if len(cands) > 1:
        raise InputError(
            f"baseline {spec!r} is ambiguous: {', '.join(a.label for a in cands)}; "
            "name the arm as TOPOLOGY/ARM"
        )
    return cands[0]
