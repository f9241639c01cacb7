"""The VMware paper's mixed-workload claim (seed 002, "Mixing GPU-based Workloads: Graphics, ML
and Knowledge Worker"): ML training times rose 2 % to 18 % as the knowledge-worker VMs beside
them went from 32 to 96.

The numbers and the tolerance are the published entry's (workloads/reference/published-
results.yaml: ``factor: {kw_vms: [32, 96]}``, ``value: {approx: [1.02, 1.18]}``, ``tolerance``,
absolute on the ratio), read as: with 32 knowledge-worker VMs the ML training time is 1.02x the
same run without them, with 96 it is 1.18x; a count between the two lies between the two
(``[1.02 - tol, 1.18 + tol]``). A vGPU arm says its factors in its records' sharing
(workloads/vgpu_factors.py: ``vgpu:<profile>.<policy in effect>.<N>-per-gpu.kw<N>``): each arm
with N knowledge-worker VMs in that range is paired with the arm whose factors are the same
but no knowledge-worker VMs, and judged like every relation check (report.relations): the
ratio of their training times (``train_wall_s``, else ``elapsed_s``) per unit (the study
repeat: both arms of one repeat block), its t interval on the log ratio over the units, inside
the band (report.decide). Both ends of the range must be measured. The paper's 3D CAD impact
(3-9 %) and knowledge-worker latency (< 0.5 %) are not judged: this lab runs no 3D CAD VMs and
its knowledge-worker load (the kw_load role) records no latency.

The other VMware claims are about a VM with its GPU to itself: :func:`alone_on_its_gpu` keeps
the arms of this study's factors (knowledge workers beside it, several VMs on one GPU) out of
them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from report.checks import missing
from report.decide import Item
from report.intervals import LOG
from report.mapping import Arm
from report.relations import Measured, combine, word
from report.table import Row, Table
from workloads.vgpu_factors import VgpuFactors, parse

PAPER = "vmware_vgpu_containers"
CLAIM = f"{PAPER}/mixed_workloads"
TIME = ("train_wall_s", "elapsed_s")  # the training wall-clock, else the job's


@dataclass(frozen=True)
class MixedClaim:
    """The published numbers: ``at_lo`` x with ``lo`` knowledge-worker VMs, ``at_hi`` x with
    ``hi``, each ± ``tol`` (absolute, on the ratio)."""

    lo: int
    hi: int
    at_lo: float
    at_hi: float
    tol: float

    def band(self, kw: int) -> tuple[float, float] | None:
        if kw == self.lo:
            return self.at_lo - self.tol, self.at_lo + self.tol
        if kw == self.hi:
            return self.at_hi - self.tol, self.at_hi + self.tol
        if self.lo < kw < self.hi:
            return self.at_lo - self.tol, self.at_hi + self.tol
        return None

    def tolerance_text(self) -> str:
        return (
            f"{self.lo} VMs: {self.at_lo:g} ± {self.tol:g}; {self.hi} VMs: {self.at_hi:g} ± "
            f"{self.tol:g}; between: {self.at_lo - self.tol:.3g} - {self.at_hi + self.tol:.3g}"
        )


def claim_numbers(papers: dict[str, Any]) -> MixedClaim:
    """The claim's numbers from the published data (report.published's ``papers``); a
    ValueError naming what is missing when the entry does not carry them."""
    from report.published import parse_value

    claims = (papers.get(PAPER) or {}).get("claims") or []
    entry = next((c for c in claims if isinstance(c, dict) and c.get("id") == "mixed_workloads"),
                 None)  # fmt: skip
    if entry is None:
        raise ValueError(f"published results: no claim {CLAIM}")
    kw = (entry.get("factor") or {}).get("kw_vms")
    tol = entry.get("tolerance")
    if not (isinstance(kw, list) and len(kw) == 2 and all(isinstance(k, int) for k in kw)):
        raise ValueError(f"published results: {CLAIM} has no factor kw_vms: [lo, hi]")
    if isinstance(tol, bool) or not isinstance(tol, int | float):
        raise ValueError(f"published results: {CLAIM} has no numeric tolerance")
    at_lo, at_hi = parse_value(entry.get("value"), CLAIM)
    return MixedClaim(int(kw[0]), int(kw[1]), at_lo, at_hi, float(tol))


def arm_factors(t: Table, arm: Arm) -> VgpuFactors | None:
    """The vGPU factors the arm's records state (one set for all of them), else None."""
    found = {parse(rec.get("sharing")) for rec in t.records_per_arm.get(arm, [])}
    return found.pop() if len(found) == 1 else None


def alone_on_its_gpu(t: Table, arm: Arm) -> bool:
    """No knowledge-worker VMs beside it and no other VM on its GPU (as its records say)."""
    f = arm_factors(t, arm)
    return f is None or (f.kw_vms == 0 and (f.vms_per_gpu or 1) == 1)


def check(c: MixedClaim) -> Callable[[Table], Measured]:
    """The relation check of the claim (see the module docstring)."""

    def fn(t: Table) -> Measured:
        factors = {arm: arm_factors(t, arm) for arm in t.settings}
        reference = {f: arm for arm, f in factors.items() if f is not None and f.kw_vms == 0}
        pairs = [
            (arm, reference[f.without_kw()], f.kw_vms)
            for arm, f in sorted(factors.items())
            if f is not None and f.kw_vms and f.without_kw() in reference
        ]
        judged = [(a, b, kw) for a, b, kw in pairs if c.band(kw) is not None]
        counts = sorted({kw for _, _, kw in judged})
        if c.lo not in counts or c.hi not in counts:
            return missing(
                f"needs vGPU arms with {c.lo} and with {c.hi} knowledge-worker VMs and the same "
                "arm without them (records' sharing vgpu:<profile>...kw<N>); measured: "
                + (", ".join(map(str, counts)) if counts else "none")
            )
        items: list[Item] = []
        for a, b, kw in judged:
            lo, hi = c.band(kw) or (0.0, 0.0)
            for num, den in _pairs(t, a, b):
                items.append(
                    Item(
                        f"{kw} KW VMs: {a.label} / {b.label} {num.key.model} ({num.metric})",
                        combine([num, den], lambda v: v[0] / v[1], LOG, raw=True),
                        lo=lo,
                        hi=hi,
                        times=True,
                        word=word([num, den]),
                    )
                )
        if not items:
            return missing(f"no {' or '.join(TIME)} records of both arms of a pair")
        return items

    return fn


def _pairs(t: Table, a: Arm, b: Arm) -> list[tuple[Row, Row]]:
    """(row of ``a``, row of ``b``) of each group both measured, in the first metric of TIME
    both have."""
    for metric in TIME:
        mine = {r.key: r for r in t.rows if r.metric == metric and r.arm == a}
        theirs = {r.key: r for r in t.rows if r.metric == metric and r.arm == b}
        both = sorted(set(mine) & set(theirs))
        if both:
            return [(mine[k], theirs[k]) for k in both]
    return []
