"""Two sets of records side by side: what changed in the environment, and in throughput.

``gpulab compare RUN_A RUN_B``: each side is a run id (found among the records of the results
root), a record file, a results directory or a summary; or, by date, the records started
before ``since`` (A) against those started in ``[since, until)`` (B).

* Fingerprint: every environment row of report.environment (driver, CUDA, GPU, CPU, OS,
  kernel, framework, Python, container runtime, VM, setting ...) whose values differ.
* Throughput: per paired group (suite, experiment, model, scenario, data, batch, variant),
  arm and metric present on both sides, the medians, their ratio B / A and its 95 %
  percentile-bootstrap interval (report.stats.ratio_ci: both sides' repetitions resampled
  independently, 2000 rounds, seeded from the group). A change is *significant* when both
  sides have at least 3 repetitions and the interval excludes 1. Where a value of either side
  is zero or negative (a degradation, a failed repetition recorded as 0) the ratio of the
  medians is given without an interval, never significant. Groups whose settings differ
  between the sides (model, batch, image size, steps, precision, backend, framework version,
  GPU model, data kind) are listed with the field, not compared.
* Repetitions of one side key on run_id: records of several runs in one group and arm are
  refused unless ``pool``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from report.environment import compare as env_compare
from report.exclusions import split
from report.load import load_records
from report.mapping import PAIRED_FIELDS, Arm, _differs, check_pairs, paired_settings
from report.stats import MIN_N, ratio_ci
from report.table import GroupKey, arm_of, collect, key_of
from workloads.errors import InputError

METHOD = (
    "ratio of medians B / A with a 95 % percentile-bootstrap interval (2000 resamples of "
    "each side, seeded); significant when n >= 3 on both sides and the interval excludes 1; "
    "no interval where a value is zero or negative"
)


@dataclass
class Change:
    key: GroupKey
    arm: Arm
    metric: str
    n_a: int
    n_b: int
    median_a: float | None
    median_b: float | None
    ratio: float | None = None
    lo: float | None = None
    hi: float | None = None
    significant: bool = False
    note: str = ""


@dataclass
class Comparison:
    a_label: str
    b_label: str
    a_runs: list[str]
    b_runs: list[str]
    a_records: int
    b_records: int
    fingerprint: list[tuple[str, str, str]]  # (field, A, B) where they differ
    changes: list[Change] = field(default_factory=list)
    method: str = METHOD
    unpaired: str = ""  # why no group has a ratio B / A ("" when one has)

    def as_json(self) -> dict[str, Any]:
        return {
            "a": {"label": self.a_label, "runs": self.a_runs, "records": self.a_records},
            "b": {"label": self.b_label, "runs": self.b_runs, "records": self.b_records},
            "method": self.method,
            "unpaired": self.unpaired or None,
            "fingerprint": [{"field": f, "a": a, "b": b} for f, a, b in self.fingerprint],
            "groups": [
                {
                    "suite": c.key.suite,
                    "experiment": c.key.experiment,
                    "model": c.key.model,
                    "scenario": c.key.scenario,
                    "data": c.key.data,
                    "batch_size": c.key.batch_size,
                    "variant": c.key.variant,
                    "arm": c.arm.label,
                    "metric": c.metric,
                    "n_a": c.n_a,
                    "n_b": c.n_b,
                    "median_a": c.median_a,
                    "median_b": c.median_b,
                    "ratio": c.ratio,
                    "ci95": [c.lo, c.hi] if c.lo is not None else None,
                    "significant": c.significant,
                    "note": c.note,
                }
                for c in self.changes
            ],
        }


def _when(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=datetime.now().astimezone().tzinfo)


def parse_date(flag: str, text: str) -> datetime:
    t = _when(text)
    if t is None:
        raise InputError(f"{flag} {text!r} is not a date (YYYY-MM-DD or ISO-8601)")
    return t


def load_side(spec: str, root: Path) -> tuple[str, list[dict[str, Any]]]:
    """The records of one side: a path, else the records of the run whose id is ``spec``."""
    if Path(spec).exists():
        return spec, load_records([spec], [])
    if not root.is_dir():
        raise InputError(
            f"{spec!r} is neither a record file, a directory nor a run id under {root}"
        )
    recs = [r for r in load_records([root], []) if r.get("run_id") == spec]
    if not recs:
        raise InputError(f"run {spec!r}: no records with this run_id under {root}")
    return f"run {spec}", recs


def by_date(
    inputs: list[str | os.PathLike[str]], since: datetime, until: datetime | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(records started before ``since``, records started in ``[since, until)``)."""
    a: list[dict[str, Any]] = []
    b: list[dict[str, Any]] = []
    for r in load_records(inputs, []):
        t = _when(r.get("started_at"))
        if t is None:
            continue
        if t < since:
            a.append(r)
        elif until is None or t < until:
            b.append(r)
    return a, b


def _runs(recs: list[dict[str, Any]]) -> list[str]:
    return sorted({str(r.get("run_id")) for r in recs})


def compare(
    a_label: str,
    a_recs: list[dict[str, Any]],
    b_label: str,
    b_recs: list[dict[str, Any]],
    pool: bool = False,
) -> Comparison:
    ka, kb = split(a_recs)[0], split(b_recs)[0]
    for label, kept in ((a_label, ka), (b_label, kb)):
        if not kept:
            raise InputError(f"{label}: no ok records to compare")
        items = [
            (key_of(r), arm_of(r), {**paired_settings(r), "run": r.get("run_id")}) for r in kept
        ]
        check_pairs(items, Arm("", ""), pool)
    sides = [Arm("A", a_label), Arm("B", b_label)]
    env = env_compare(sides, {sides[0]: ka, sides[1]: kb})
    out = Comparison(
        a_label,
        b_label,
        _runs(a_recs),
        _runs(b_recs),
        len(a_recs),
        len(b_recs),
        [(e.field, e.values[0], e.values[1]) for e in env if e.differs],
    )
    ca, cb = collect(ka), collect(kb)
    first_a = {(key_of(r), arm_of(r)): paired_settings(r) for r in reversed(ka)}
    first_b = {(key_of(r), arm_of(r)): paired_settings(r) for r in reversed(kb)}
    for (key, arm, metric), va in sorted(ca.values.items(), key=lambda kv: str(kv[0])):
        vb = cb.values.get((key, arm, metric))
        if vb is None:
            continue
        ch = Change(key, arm, metric, len(va), len(vb), _median(va), _median(vb))
        base_key = next((g for g in first_a if g[1] == arm and _same(g[0], key)), None)
        sa, sb = first_a.get(base_key) if base_key else None, None
        for g, s in first_b.items():
            if g[1] == arm and _same(g[0], key):
                sb = s
        differs = _differs(sa, sb) if sa is not None and sb is not None else None
        if differs is not None:
            ch.note = f"not paired: {differs} differs ({sa[differs]!r} vs {sb[differs]!r})"  # type: ignore[index]
        elif ch.median_a:
            ch.ratio = (ch.median_b or 0.0) / ch.median_a
            if not all(v > 0 for v in (*va, *vb)):
                # a resample of A whose median is 0 has no ratio, and a ratio of values of
                # either sign says nothing: the ratio of the medians alone
                ch.note = "values not all positive: no interval"
            else:
                ch.lo, ch.hi = ratio_ci(vb, va, f"compare|{key}|{arm.label}|{metric}")
                few = min(ch.n_a, ch.n_b) < MIN_N
                ch.significant = not few and (ch.lo > 1.0 or ch.hi < 1.0)
                ch.note = f"n < {MIN_N}: not testable" if few else ""
        out.changes.append(ch)
    out.unpaired = nothing_pairs(ca.values, cb.values, out.changes)
    return out


def _listed(items: set[str]) -> str:
    shown = sorted(items)
    return ", ".join(shown[:6]) + (f" and {len(shown) - 6} more" if len(shown) > 6 else "")


def nothing_pairs(a: dict[Any, Any], b: dict[Any, Any], changes: list[Change]) -> str:
    """Why no group of ``a`` and ``b`` (``collect().values``: (group, arm, metric) -> values)
    has a ratio, or "" when one has: the arms differ, the groups differ, or the settings of
    every common group differ (the changes' notes)."""
    if any(c.ratio is not None for c in changes):
        return ""
    arms_a, arms_b = {k[1].label for k in a}, {k[1].label for k in b}
    if not arms_a & arms_b:
        return (
            f"nothing pairs: the sides have no arm in common (A: {_listed(arms_a)}; B: "
            f"{_listed(arms_b)}); compare two runs of one arm, or normalize arms to a "
            "baseline with `gpulab report A B`"
        )
    if not changes:
        common = arms_a & arms_b
        groups_a = {k[0].label() for k in a if k[1].label in common}
        groups_b = {k[0].label() for k in b if k[1].label in common}
        return (
            f"nothing pairs: arm {_listed(common)} ran no group (model, batch, variant) on both "
            f"sides (A: {_listed(groups_a)}; B: {_listed(groups_b)})"
        )
    notes = {c.note for c in changes if c.note} or {"no median on side A"}
    return "nothing pairs: " + "; ".join(sorted(notes)[:3])


def _same(a: GroupKey, b: GroupKey) -> bool:
    """``b`` is ``a`` or a kernel-shape variant of it."""
    return a == b or (
        (a.suite, a.experiment, a.model, a.scenario, a.data, a.batch_size)
        == (b.suite, b.experiment, b.model, b.scenario, b.data, b.batch_size)
        and (b.variant.startswith(a.variant + "/") or not a.variant)
    )


def _median(values: list[float]) -> float | None:
    import statistics

    return float(statistics.median(values)) if values else None


__all__ = [
    "PAIRED_FIELDS", "Comparison", "by_date", "compare", "load_side", "nothing_pairs", "parse_date",
]  # fmt: skip
