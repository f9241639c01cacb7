"""Building blocks for claim checks: choosing rows of the table and judging numbers.

A check returns an Outcome: ``pass``, ``fail`` or ``missing`` (no records for it), with the
measured numbers in words. ``value`` is what a check judges: the normalized value for
absolute metrics (images/sec, elapsed, time per call ...), the ratio or degradation itself
for relative metrics; over units where the row has them (report.table: ``Row.est``), else
the medians.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from report.table import Row, Table, is_relative

PAPER_BATCH = {"alexnet": 512, "inception_v3": 32, "resnet50": 32}


@dataclass(frozen=True)
class Outcome:
    status: str  # "pass" | "fail" | "missing"
    measured: str


MISSING = "missing"


def missing(why: str) -> Outcome:
    return Outcome(MISSING, why)


def value(row: Row) -> float | None:
    if row.est is not None:
        return row.est.value
    return row.summary.median if is_relative(row.metric) else row.norm


def pick(
    table: Table,
    metric: str,
    *,
    experiment: str | Iterable[str] | None = None,
    models: Iterable[str] | None = None,
    model_match: Callable[[str], bool] | None = None,  # gets "model variant"
    settings: Iterable[str] | None = None,
    suite_pref: str | None = None,
    batch: int | None = None,
    include_baseline: bool = False,
) -> list[Row]:
    """Usable rows (with a value), one per (arm, model, batch when given, variant).

    Where several suites or batch sizes give the same (arm, model, variant), the row of
    ``suite_pref`` wins, then the paper's batch size (PAPER_BATCH), then the most repetitions.
    """
    exps = {experiment} if isinstance(experiment, str) else set(experiment or ())
    mods = set(models) if models is not None else None
    sets = set(settings) if settings is not None else None
    rows = [
        r
        for r in table.rows
        if r.metric == metric
        and (not exps or r.key.base_experiment in exps)
        and (mods is None or r.key.model in mods)
        and (model_match is None or model_match(f"{r.key.model} {r.key.variant}"))
        and (sets is None or r.setting in sets)
        and (batch is None or r.key.batch_size == batch)
        and (include_baseline or r.arm != table.baseline)
        and value(r) is not None
    ]
    groups: dict[tuple[object, ...], list[Row]] = defaultdict(list)
    for r in rows:
        groups[(r.arm, r.key.model, r.key.variant, r.key.experiment)].append(r)
    out = []
    for _, rs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        rs.sort(
            key=lambda r: (
                r.key.suite != suite_pref,
                r.key.batch_size != PAPER_BATCH.get(r.key.model, r.key.batch_size),
                -r.summary.n,
            )
        )
        out.append(rs[0])
    return out


def fmt(row: Row) -> str:
    v = value(row)
    name = f"{row.arm.label} {row.key.model}"
    if row.key.variant:
        name += f" [{row.key.variant}]"
    if is_relative(row.metric):
        return f"{name} {v:.3f}"
    return f"{name} {v:.3f}x ({row.summary.median:.4g} vs {row.baseline_median:.4g})"


def within(
    rows: list[Row], lo: float | None, hi: float | None, tol: float, none_why: str
) -> Outcome:
    """Every row's value inside [lo - tol, hi + tol] (a side that is None is open)."""
    if not rows:
        return missing(none_why)
    bad = [
        r
        for r in rows
        if (lo is not None and value(r) < lo - tol) or (hi is not None and value(r) > hi + tol)  # type: ignore[operator]
    ]
    shown = bad or rows
    text = "; ".join(fmt(r) for r in shown[:8]) + (" ..." if len(shown) > 8 else "")
    return Outcome("fail" if bad else "pass", ("outside: " if bad else "") + text)


def per_arm(rows: list[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        out[r.arm.label].append(r)
    return dict(out)


def extreme_within(
    rows: list[Row], use_max: bool, lo: float, hi: float, tol: float, none_why: str
) -> Outcome:
    """Per arm, the max (or min) value over models inside [lo - tol, hi + tol]."""
    if not rows:
        return missing(none_why)
    picked = [
        (max if use_max else min)(rs, key=lambda r: value(r))  # type: ignore[arg-type, return-value]
        for rs in per_arm(rows).values()
    ]
    return within(picked, lo, hi, tol, none_why)
