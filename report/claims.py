"""Verdicts per published claim, from the check table (report.claim_table).

Every claim of workloads/reference/published-results.yaml ("paper/id") and every numeric
figure ("paper/figN_...") gets a verdict (report.decide):
  reproduced      every check is measured and passes,
  not reproduced  a check fails, significantly over the claim's rows (Holm),
  inconclusive    nothing fails, but a check cannot be decided or was not measured,
  not measured    no check has records (or the claim has no number a lab can check),
  method check    the records ran on no GPU: the measured ratios and their intervals are
                  shown, but a CPU says nothing about the papers' GPU claims.
Values judged are normalized values (to the baseline arm) or, for ratios and degradations
(``*_ratio``, ``*_degradation``), the values themselves; tolerances are absolute on those.

Every check judges intervals over units (report.units: a study repeat, or a run, is one
unit; the repetitions inside one are averaged first): a normalized value is the geometric
mean of the per-unit ratios to the baseline's unit of the same repeat, with the t interval
of their logs (report.table); a relation check's quantity is formed per unit, then its
interval taken the same way (report.relations). A claim needs UNITS_NEEDED units (the
number benchmarks/calibration.py found a verdict needs); fewer are inconclusive and say so.

Each line of BOUNDS becomes a check of rows against a band, each figure of the published
file a check of every measured cell against the paper's value ± FIG_TOL, each of RELATIONS
a check of a per-unit relation; every elapsed check names its window (WINDOWS). Whether the
records ran on a GPU: report.device.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from report import relations as R
from report.checks import Outcome, missing, per_arm, pick, value
from report.claim_table import (
    BOUNDS,
    MIN_UNITS,
    NOT_CHECKABLE,
    RELATIONS,
    UNITS_NEEDED,
    Bound,
    units_needed,
)
from report.decide import (
    FAIL,
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_REPRODUCED,
    PASS,
    REPRODUCED,
    UNSURE,
    Item,
    judge,
    verdict_of,
)
from report.device import device_kind, on_cpu
from report.published import Published
from report.table import Row, Table, is_relative
from report.windows import NONE_RECORDED, WINDOWS, parts_note
from workloads.errors import InputError

METHOD_CHECK = "method check"  # the records ran on no GPU: numbers, no verdict word
FIG_TOL = 0.05  # published figures: each measured normalized value within the paper's ± 0.05


@dataclass(frozen=True)
class Check:
    claim: str
    what: str
    tolerance: str
    fn: Callable[[Table], R.Measured]


@dataclass
class Verdict:
    claim: str
    text: str
    verdict: str
    results: list[tuple[Check, Outcome]] = field(default_factory=list)
    records_naming: int = 0
    units_needed: int = MIN_UNITS

    @property
    def tolerance(self) -> str:
        return "; ".join(dict.fromkeys(c.tolerance for c, _ in self.results))


def verdict_data(v: Verdict) -> dict[str, Any]:
    """A verdict as plain data: the report's context and ``gpulab report --json``."""
    return {
        "claim": v.claim,
        "verdict": v.verdict,
        "text": v.text,
        "tolerance": v.tolerance,
        "units_needed": v.units_needed,
        "records_naming": v.records_naming,
        "checks": [
            {"what": c.what, "tolerance": c.tolerance, "status": o.status, "measured": o.measured}
            for c, o in v.results
        ],
    }


def _tol_text(b: Bound) -> str:
    """The tolerance and the bound it gives, e.g. "0.80 ± 0.07" or ">= 0.82 (0.85 - 0.03)"."""
    if b.lo is not None and b.hi is not None and b.lo == b.hi:
        return f"{b.lo:g} ± {b.tol:g}"
    parts = []
    if b.lo is not None:
        parts.append(f">= {b.lo - b.tol:.3g}" + (f" ({b.lo:g} - {b.tol:g})" if b.tol else ""))
    if b.hi is not None:
        parts.append(f"<= {b.hi + b.tol:.3g}" + (f" ({b.hi:g} + {b.tol:g})" if b.tol else ""))
    return ", ".join(parts)


def interval(row: Row) -> tuple[float, float] | None:
    """The row's 95 % interval over units of the judged value (None: fewer than 2 units,
    or no unit pairs with the baseline's)."""
    if row.est is None:
        return None
    return row.est.interval()


def row_name(row: Row) -> str:
    return f"{row.arm.label} {row.key.model}" + (f" [{row.key.variant}]" if row.key.variant else "")


def row_item(row: Row, lo: float, hi: float, note: str = "") -> Item:
    """A table row as a measured item with the band [lo, hi]."""
    return Item(
        row_name(row),
        row.est,
        lo,
        hi,
        note=note,
        times=not is_relative(row.metric),
        word="units" if row.study else "runs",
    )


def with_windows(t: Table, items: list[tuple[Row, Item]]) -> list[Item]:
    """The items, each ``elapsed_s`` one noting how much of it the runner's windows were
    (report.windows); where none of them has windows, the first says so."""
    out, noted = [], False
    for r, it in items:
        note = parts_note(t, r) if r.metric == "elapsed_s" else None
        noted |= note is not None
        out.append(replace(it, note=f"{it.note} {note}".strip()) if note else it)
    if out and not noted and items[0][0].metric == "elapsed_s":
        out[0] = replace(out[0], note=f"{out[0].note} {NONE_RECORDED}".strip())
    return out


def bound_check(b: Bound) -> Check:
    metrics = (b.metric,) if isinstance(b.metric, str) else b.metric

    def rows_for(t: Table, metric: str) -> list[Row]:
        rows = pick(
            t,
            metric,
            experiment=b.experiment,
            models=b.models,
            model_match=b.match,
            settings=b.settings,
            batch=b.batch,
            include_baseline=b.with_baseline,
            suite_pref=b.suite or (b.claim.split("/")[0]),
        )
        if b.variant is not None:
            rows = [r for r in rows if b.variant(r.key.variant)]
        if b.arm_ok is not None:
            rows = [r for r in rows if b.arm_ok(t, r.arm)]
        if b.suite is not None:
            rows = [r for r in rows if r.key.suite == b.suite or b.suite in r.key.experiment]
        return rows

    def fn(t: Table) -> R.Measured:
        rows: list[Row] = []
        for m in metrics:
            rows = rows_for(t, m)
            if rows:
                break
        if not rows:
            return missing(
                f"no records of {' or '.join(metrics)}"
                + (f" in {b.experiment}" if b.experiment else "")
                + (f" for {'/'.join(b.settings)}" if b.settings else "")
                + " (with a baseline)"
            )
        if b.agg:
            pick_ = max if b.agg == "max" else min
            rows = [pick_(rs, key=lambda r: value(r) or 0.0) for rs in per_arm(rows).values()]
        lo = -math.inf if b.lo is None else b.lo - b.tol
        hi = math.inf if b.hi is None else b.hi + b.tol
        return with_windows(t, [(r, row_item(r, lo, hi)) for r in rows])

    window = "; else ".join(WINDOWS[m] for m in metrics if m in WINDOWS)
    what = f"{b.what} ({window})" if window else b.what
    return Check(b.claim, what, _tol_text(b), fn)


def figure_checks(pub: Published) -> list[Check]:
    """One check per numeric published figure: every measured cell within its value ± FIG_TOL."""
    out = []
    for fig in pub.figures:
        norm = fig.normalized()

        def fn(t: Table, fig: Any = fig, norm: Any = norm) -> R.Measured:
            rows = [
                r
                for r in pick(t, fig.metric, experiment=fig.experiment, suite_pref=fig.paper)
                if r.key.model in norm.get(r.setting, {})
            ]
            if not rows:
                return missing(f"no {fig.experiment} {fig.metric} records with a baseline")
            items = []
            for r in rows:
                lo, hi = norm[r.setting][r.key.model]
                paper = f"{lo:.2f}" if lo == hi else f"{lo:.2f}-{hi:.2f}"
                items.append((r, row_item(r, lo - FIG_TOL, hi + FIG_TOL, f"(paper {paper})")))
            return with_windows(t, items)

        what = f"Figure {fig.number}: each measured setting/model within the paper's value"
        if fig.metric in WINDOWS:
            what += f" ({WINDOWS[fig.metric]})"
        out.append(Check(f"{fig.paper}/{fig.key}", what, f"paper ± {FIG_TOL}", fn))
    return out


def _not_checkable(why: str) -> Callable[[Table], R.Measured]:
    def fn(t: Table) -> R.Measured:
        return missing(why)

    return fn


def mixed_workloads_checks(pub: Published) -> list[Check]:
    """The mixed-workload claim's check, with the published entry's numbers
    (report.mixed_workloads); an entry without them is a check that says so."""
    from report import mixed_workloads as mw

    what = (
        "ML training time with N knowledge-worker VMs beside it over the same vGPU arm "
        f"without them, paired per unit ({WINDOWS['train_wall_s']}; the paper's 3D CAD "
        "impact and knowledge-worker latency are not judged: no 3D CAD VMs here, and the "
        "knowledge-worker load records no latency)"
    )
    try:
        numbers = mw.claim_numbers(pub.papers)
    except (ValueError, InputError) as exc:
        return [Check(mw.CLAIM, what, "n/a", _not_checkable(str(exc)))]
    return [Check(mw.CLAIM, what, numbers.tolerance_text(), mw.check(numbers))]


def all_checks(pub: Published) -> list[Check]:
    checks = [bound_check(b) for b in BOUNDS]
    checks += [Check(c, w, tol, fn) for c, w, tol, fn in RELATIONS]
    checks += mixed_workloads_checks(pub)
    checks += [
        Check(c, "not checkable", "n/a", _not_checkable(w)) for c, w in NOT_CHECKABLE.items()
    ]
    return checks + figure_checks(pub)


def verdicts(
    table: Table | None,
    pub: Published,
    records: list[dict[str, Any]] | list[tuple[list[Any], int]],
) -> list[Verdict]:
    """A verdict for every claim and numeric figure of ``pub``, in the file's order.

    ``records``: the records, or (a record's ``claims``, how many records name them) pairs.
    On records that ran on no GPU (:func:`on_cpu`, read from the table's records) a claim
    with measured checks gets METHOD_CHECK instead of a verdict word.
    """
    lists = [
        (r.get("claims") or [], 1) if isinstance(r, dict) else (r[0] or [], r[1]) for r in records
    ]
    checks = all_checks(pub)
    cpu = table is not None and on_cpu(
        rec for recs in table.records_per_arm.values() for rec in recs
    )
    out: list[Verdict] = []
    for claim, text in pub.claim_texts.items():
        short = claim.split("/", 1)[1]
        naming = sum(n for c, n in lists if {claim, short} & set(c))
        need = units_needed(claim)
        v = Verdict(claim, text, NOT_MEASURED, records_naming=naming, units_needed=need)
        mine = [c for c in checks if c.claim == claim] or [
            Check(claim, "no check defined", "n/a", lambda t: missing("no check defined"))
        ]
        measured = [c.fn(table) if table is not None else missing("no ok records") for c in mine]
        v.results = list(zip(mine, judge(measured, need), strict=True))
        v.verdict = verdict_of([o for _, o in v.results])
        if cpu and v.verdict != NOT_MEASURED:
            v.verdict = METHOD_CHECK
        out.append(v)
    return out


__all__ = [
    "BOUNDS",
    "FAIL",
    "INCONCLUSIVE",
    "METHOD_CHECK",
    "NOT_MEASURED",
    "NOT_REPRODUCED",
    "PASS",
    "REPRODUCED",
    "UNITS_NEEDED",
    "UNSURE",
    "Verdict",
    "all_checks",
    "device_kind",
    "on_cpu",
    "units_needed",
    "verdict_data",
    "verdicts",
]
