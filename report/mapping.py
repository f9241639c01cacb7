"""Where a record ran, in the papers' words: the one place that maps records to settings.

A record's setting is what the lab stated when it ran (workloads.setting: ``gpu_path``,
``exec_env``, ``virtualization``, ``sharing``); the report reads ``virtualization`` and guesses
nothing, neither from the topology or arm label nor from the fingerprint:

  ===============  =========  ==================
  virtualization   setting    label
  ===============  =========  ==================
  none             bm         BM
  container        cbm        Container on BM
  vm               vm         VM
  container-in-vm  cvm        Container on VM
  (absent)         unknown    unknown setting
  ===============  =========  ==================

A record without the setting (schema 1, or a run given no gpu_path) is "unknown setting":
tabulated and plotted, never compared with a published number. An arm whose records state
different settings is "mixed" (and flagged). The fingerprint's cross-check travels in the
record's ``setting_flags`` and is shown beside the arm.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workloads.errors import InputError

SETTINGS = ("bm", "cbm", "vm", "cvm")
SETTING_OF_VIRTUALIZATION = {"none": "bm", "container": "cbm", "vm": "vm", "container-in-vm": "cvm"}
SETTING_LABELS = {
    "bm": "BM",
    "cbm": "Container on BM",
    "vm": "VM",
    "cvm": "Container on VM",
    "unknown": "unknown setting",
    "mixed": "mixed settings",
}
DEFAULT_BASELINES = ("ironic-bm", "local/native")


@dataclass(frozen=True, order=True)
class Arm:
    """One comparison arm: a topology and the arm label within it."""

    topology: str
    arm: str

    @property
    def label(self) -> str:
        return f"{self.topology}/{self.arm}"


def setting_of(rec: Mapping[str, Any]) -> str:
    """The paper setting (bm, cbm, vm, cvm) a record states, or ``unknown``."""
    virt = rec.get("virtualization")
    return SETTING_OF_VIRTUALIZATION.get(virt, "unknown") if isinstance(virt, str) else "unknown"


@dataclass
class ArmSetting:
    """The setting of one arm over its records, and the flags to show beside it."""

    setting: str
    flags: list[str]


def arm_settings(records: Iterable[Mapping[str, Any]], arm_of: Any) -> dict[Arm, ArmSetting]:
    """Per arm: the one setting its records state (else ``mixed``) and their distinct flags."""
    seen: dict[Arm, dict[str, int]] = {}
    flags: dict[Arm, list[str]] = {}
    for rec in records:
        arm = arm_of(rec)
        counts = seen.setdefault(arm, {})
        s = setting_of(rec)
        counts[s] = counts.get(s, 0) + 1
        fl = flags.setdefault(arm, [])
        for f in rec.get("setting_flags") or []:
            if str(f) not in fl:
                fl.append(str(f))
    out: dict[Arm, ArmSetting] = {}
    for arm, counts in seen.items():
        if len(counts) == 1:
            (only,) = counts
            out[arm] = ArmSetting(only, flags[arm])
        else:
            parts = ", ".join(f"{s} ({n} records)" for s, n in sorted(counts.items()))
            out[arm] = ArmSetting(
                "mixed", [f"records of this arm state different settings: {parts}", *flags[arm]]
            )
    return out


def parse_baseline(spec: str) -> tuple[str, str | None]:
    spec = spec.strip()
    if not spec or spec.count("/") > 1 or spec.startswith("/") or spec.endswith("/"):
        raise InputError(f"--baseline {spec!r} is not TOPOLOGY or TOPOLOGY/ARM")
    topo, _, arm = spec.partition("/")
    return topo, (arm or None)


def resolve_baseline(
    spec: str | None, arms: Iterable[Arm], settings: Mapping[Arm, str] | None = None
) -> Arm:
    """The baseline arm among ``arms`` (those with ok records).

    ``spec`` is TOPOLOGY or TOPOLOGY/ARM. TOPOLOGY alone picks that topology's only arm, or
    its arm labelled ``native``, or its one arm whose recorded setting (``settings``) is
    ``bm``/``vm`` (not a container). ``None`` tries DEFAULT_BASELINES in order (``ironic-bm``,
    then ``local/native`` for a single machine).
    """
    present = sorted(set(arms))
    settings = settings or {}
    names = ", ".join(a.label for a in present) or "none"
    if spec is None:
        for cand in DEFAULT_BASELINES:
            try:
                return resolve_baseline(cand, present, settings)
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
            a for a in cands if settings.get(a) in ("bm", "vm")
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
