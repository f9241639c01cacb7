"""Grouping and normalization: records -> one row per (group, arm, metric).

A group is (suite, experiment, model, scenario, data, batch_size, variant); ``variant`` is
``params.variant`` when a record sets it, "<N> jobs" for the sharing scenario
(``params.jobs``), else "". Records
of one group and arm are repetitions: their values are summarized (stats.summarize) and the
median is divided by the baseline arm's median of the same group and metric.

Metrics per record: ``images_per_sec``, ``elapsed_s``, the runner's windows ``startup_s``,
``first_step_s`` and ``timed_s`` where a record has them, every finite number in ``metrics``
(the scenarios' names renamed by ALIASES: ``alone_elapsed_s`` -> ``elapsed_alone_s``,
``elapsed_increase`` -> ``elapsed_degradation``, ``throughput_ratio`` ->
``aggregate_throughput_ratio`` ...), and the degradations of the shared scenario, each named
for the window it measures:
``elapsed_degradation`` = elapsed_shared_s / elapsed_alone_s - 1 (each job's launch to
finish: the papers' elapsed time), ``timed_degradation`` = timed_wall_shared_s /
timed_wall_alone_s - 1 (the timed windows; the scenario itself writes this one as
``elapsed_degradation``, read here as ``timed_degradation``) and
``images_per_sec_degradation`` = 1 - images_per_sec_shared / images_per_sec_alone.
A metric named ``<shape>.<name>`` (the kernel scenario's per-shape metrics, e.g.
``rnn_gru_h512_b32_t50.time_per_call_s``) becomes metric ``<name>`` of variant ``<shape>``.
Ratios and degradations (RATIO_METRICS and names ending in ``_ratio``/``_degradation``) are
already relative, so they are not normalized to the baseline.

Units (report.units): the repetitions of one group and arm in one unit (a study repeat, or a
run) are averaged into one value per unit. A row's interval is taken over its units
(report.intervals): a normalized value is the geometric mean of the paired per-unit ratios
(the arm's unit over the baseline's unit of the same slot) with the t interval of their logs,
so the baseline's own spread is in it; a ratio or degradation is the mean over its units.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from report.intervals import LINEAR, LOG, Estimate, estimate
from report.mapping import Arm, ArmSetting, arm_settings, check_paired
from report.stats import Summary, summarize
from report.units import STUDY, slots, unit_of

RATIO_METRICS = frozenset({"aggregate_throughput_ratio", "completion_time_ratio"})
# the workload scenarios' metric names (workloads/scenarios/shared.py, sharing.py) -> the
# report's names
ALIASES = {
    "alone_elapsed_s": "elapsed_alone_s",
    "shared_elapsed_s": "elapsed_shared_s",
    "alone_images_per_sec": "images_per_sec_alone",
    "shared_images_per_sec": "images_per_sec_shared",
    "elapsed_increase": "elapsed_degradation",
    "throughput_ratio": "aggregate_throughput_ratio",
    # workloads/scenarios/shared.py: its elapsed_degradation is of the timed windows
    "elapsed_degradation": "timed_degradation",
}
# the record's top-level numbers that are metrics: throughput, the job's elapsed time and the
# runner's windows (start-up, the first (compiling) steps, the timed window), where recorded
TOP_METRICS = ("images_per_sec", "elapsed_s", "startup_s", "first_step_s", "timed_s")
HIGHER_IS_BETTER = ("images_per_sec", "per_sec", "tflops", "gbps", "throughput")


@dataclass(frozen=True, order=True)
class GroupKey:
    suite: str
    experiment: str
    model: str
    scenario: str
    data: str
    batch_size: int
    variant: str

    @property
    def base_experiment(self) -> str:
        return experiment_base(self.experiment, self.model)

    def label(self) -> str:
        parts = [self.model, f"b{self.batch_size}" if self.batch_size else ""]
        if self.variant:
            parts.append(self.variant)
        return " ".join(p for p in parts if p)


@dataclass
class Row:
    key: GroupKey
    arm: Arm
    setting: str
    metric: str
    summary: Summary
    norm: float | None = None
    norm_lo: float | None = None
    norm_hi: float | None = None
    baseline_median: float | None = None
    image_sizes: tuple[int, ...] = ()  # params.image_size of the rows' records (px)
    steps: tuple[int, ...] = ()  # timed steps of the rows' records
    units: dict[str, float] = field(default_factory=dict)  # slot -> the unit's mean value
    # slot -> the unit's value over the baseline's unit of the same slot (absolute metrics)
    norm_units: dict[str, float] = field(default_factory=dict)
    est: Estimate | None = None  # what a verdict judges: the normalized value, or the ratio
    study: bool = False  # the units are study repeats (else runs)

    def judged_units(self) -> dict[str, float]:
        """Per slot, the value a claim judges: the ratio itself for a relative metric, the
        value over the baseline's for an absolute one."""
        return self.units if is_relative(self.metric) else self.norm_units


@dataclass
class Table:
    rows: list[Row]
    baseline: Arm
    settings: dict[Arm, str]
    # per arm, its records, or one per distinct environment (report.scan)
    records_per_arm: dict[Arm, list[dict[str, Any]]] = field(default_factory=dict)
    kinds: dict[GroupKey, str] = field(default_factory=dict)  # record kind per group
    setting_flags: dict[Arm, list[str]] = field(default_factory=dict)
    counts: dict[Arm, int] = field(default_factory=dict)  # ok records per arm
    model_counts: dict[str, int] = field(default_factory=dict)  # ok records per model

    @property
    def arms(self) -> list[Arm]:
        order = {"bm": 0, "cbm": 1, "vm": 2, "cvm": 3}
        return sorted(
            self.settings,
            key=lambda a: (a != self.baseline, order.get(self.settings[a], 9), a.label),
        )

    def experiments(self) -> list[tuple[str, str]]:
        return sorted({(r.key.suite, r.key.experiment) for r in self.rows})

    def find(self, **kw: Any) -> list[Row]:
        """Rows whose GroupKey fields / arm / setting / metric equal the given values."""
        out = []
        for r in self.rows:
            ok = True
            for k, v in kw.items():
                have = getattr(r, k) if k in ("arm", "setting", "metric") else getattr(r.key, k)
                if have != v:
                    ok = False
                    break
            if ok:
                out.append(r)
        return out


def is_relative(metric: str) -> bool:
    return metric in RATIO_METRICS or metric.endswith(("_ratio", "_degradation"))


def higher_is_better(metric: str) -> bool:
    return any(h in metric for h in HIGHER_IS_BETTER) and not metric.endswith("_degradation")


def arm_of(rec: dict[str, Any]) -> Arm:
    return Arm(rec.get("topology") or "unknown", rec.get("arm") or "native")


def experiment_base(experiment: str, model: str) -> str:
    """The paper experiment of a suite entry id: ``single_synthetic-alexnet`` and
    ``shared_alexnet_b32`` name ``single_synthetic`` and ``shared``."""
    base = re.sub(r"[-_]b\d+$", "", experiment)
    for sep in ("-", "_"):
        if base.endswith(sep + model):
            return base[: -len(model) - 1]
    return base


def key_of(rec: dict[str, Any]) -> GroupKey:
    params = rec.get("params") or {}
    variant = params.get("variant", "")
    jobs = params.get("jobs")
    if not variant and rec["scenario"] == "sharing" and isinstance(jobs, int):
        variant = f"{jobs} jobs"
    return GroupKey(
        suite=rec["suite"],
        experiment=rec["experiment"],
        model=rec["model"],
        scenario=rec["scenario"],
        data=rec.get("data") or "",
        batch_size=int(rec.get("batch_size") or 0),
        variant=str(variant) if variant is not None else "",
    )


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        f = float(v)
    except OverflowError:  # an int beyond a double's range (report.load notes it)
        return None
    return f if math.isfinite(f) else None


def metric_values(rec: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in TOP_METRICS:
        v = _num(rec.get(name))
        if v is not None:
            out[name] = v
    for name, v in (rec.get("metrics") or {}).items():
        f = _num(v)
        if f is not None:
            out[ALIASES.get(str(name), str(name))] = f
    ea, es = out.get("elapsed_alone_s"), out.get("elapsed_shared_s")
    if ea and es is not None and "elapsed_degradation" not in out:
        out["elapsed_degradation"] = es / ea - 1.0
    ta, ts = out.get("timed_wall_alone_s"), out.get("timed_wall_shared_s")
    if ta and ts is not None and "timed_degradation" not in out:
        out["timed_degradation"] = ts / ta - 1.0
    ia, ish = out.get("images_per_sec_alone"), out.get("images_per_sec_shared")
    if ia and ish is not None and "images_per_sec_degradation" not in out:
        out["images_per_sec_degradation"] = 1.0 - ish / ia
    return out


def image_size(rec: dict[str, Any]) -> int | None:
    """The square input size a record ran at (``params.image_size``, else ``input_shape``)."""
    params = rec.get("params") or {}
    size = params.get("image_size") if isinstance(params, dict) else None
    if isinstance(size, int) and not isinstance(size, bool):
        return size
    shape = params.get("input_shape") if isinstance(params, dict) else None
    if isinstance(shape, list) and shape and isinstance(shape[0], int):
        return int(shape[0])
    return None


@dataclass
class Collected:
    """What a table is made of, from the records (report.scan or :func:`collect`)."""

    values: dict[tuple[GroupKey, Arm, str], list[float]] = field(default_factory=dict)
    # per (group, arm, metric): unit key (report.units) -> its values
    units: dict[tuple[GroupKey, Arm, str], dict[str, list[float]]] = field(default_factory=dict)
    kinds: dict[GroupKey, str] = field(default_factory=dict)
    shapes: dict[tuple[GroupKey, Arm], tuple[set[int], set[int]]] = field(default_factory=dict)
    arm_set: dict[Arm, ArmSetting] = field(default_factory=dict)
    # per arm, one record per distinct environment (all records on the Python path)
    reps: dict[Arm, list[dict[str, Any]]] = field(default_factory=dict)
    counts: dict[Arm, int] = field(default_factory=dict)  # ok records per arm
    model_counts: dict[str, int] = field(default_factory=dict)  # ok records per model

    def add(self, key: GroupKey, arm: Arm, rec: dict[str, Any], unit: str | None = None) -> None:
        """One record's metrics (the Python path, and unusual records of report.scan, which
        give the record's ``unit`` key as report.scan_sql computed it)."""
        unit = unit_of(rec) if unit is None else unit
        for metric, v in metric_values(rec).items():
            k = key
            if "." in metric:
                shape, _, metric = metric.rpartition(".")
                k = replace(key, variant="/".join(p for p in (key.variant, shape) if p))
            self.values.setdefault((k, arm, metric), []).append(v)
            self.units.setdefault((k, arm, metric), {}).setdefault(unit, []).append(v)
            self.kinds[k] = rec["kind"]
            sizes, steps = self.shapes.setdefault((k, arm), (set(), set()))
            size, n_steps = image_size(rec), rec.get("steps")
            if size is not None:
                sizes.add(size)
            if isinstance(n_steps, int) and not isinstance(n_steps, bool):
                steps.add(n_steps)


def collect(records: list[dict[str, Any]]) -> Collected:
    out = Collected(arm_set=arm_settings(records, arm_of))
    per_arm: dict[Arm, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        arm = arm_of(rec)
        per_arm[arm].append(rec)
        out.model_counts[str(rec.get("model"))] = out.model_counts.get(str(rec.get("model")), 0) + 1
        out.add(key_of(rec), arm, rec)
    out.reps = dict(per_arm)
    out.counts = {a: len(r) for a, r in per_arm.items()}
    return out


def build_table(records: Iterable[dict[str, Any]], baseline: Arm, pool: bool = True) -> Table:
    """Summarize ok, unthrottled ``records`` per group/arm/metric and normalize to ``baseline``.

    Each arm's setting is the one its records state (mapping.arm_settings), never guessed.
    Repetitions of one group and arm must come from one run unless ``pool``.
    """
    records = list(records)
    check_paired(records, key_of, arm_of, baseline, pool=pool)  # only like with like
    return finish(collect(records), baseline)


def _slots(col: Collected) -> dict[Arm, dict[str, str]]:
    """Per arm, each unit key -> its slot (report.units.slots over all the arm's units)."""
    per_arm: dict[Arm, set[str]] = defaultdict(set)
    for (_, arm, _), sums in col.units.items():
        per_arm[arm].update(sums)
    for _, arm, _ in col.values:
        per_arm.setdefault(arm, set())
    return {arm: slots(keys) for arm, keys in per_arm.items()}


def _normalize(row: Row, base: Row) -> None:
    """The row over the baseline row, paired per slot (see the module docstring). Without a
    slot in common (or a value that is not positive) the ratio of the medians, no interval."""
    paired = {s: v / base.units[s] for s, v in row.units.items() if base.units.get(s)}
    row.norm_units = paired
    row.est = estimate(paired.values(), LOG) if paired else None
    if row.est is None:
        row.norm_units = {}
        assert row.baseline_median is not None
        row.norm = row.summary.median / row.baseline_median
        return
    row.norm = row.est.value
    row.norm_lo, row.norm_hi = row.est.interval() or (None, None)


def finish(col: Collected, baseline: Arm) -> Table:
    """Summaries, normalization and intervals of collected values."""
    settings = {a: s.setting for a, s in col.arm_set.items()}
    rows: list[Row] = []
    index: dict[tuple[GroupKey, Arm, str], Row] = {}
    slot_of = _slots(col)
    # in the order of their fields: suite, experiment, ..., batch size (as a number), arm, metric
    for (key, arm, metric), vals in sorted(col.values.items()):
        seed_key = f"{key}|{arm.label}|{metric}"
        per_unit = col.units.get((key, arm, metric)) or {"": list(vals)}
        # math.fsum: exactly rounded, so the order the values came in does not show
        units = {slot_of[arm].get(u, u): math.fsum(v) / len(v) for u, v in sorted(per_unit.items())}
        row = Row(key, arm, settings[arm], metric, summarize(vals, seed_key, list(units.values())))
        row.units = units
        row.study = all(u.startswith(STUDY) for u in per_unit)
        sizes, steps = col.shapes.get((key, arm), (set(), set()))
        row.image_sizes, row.steps = tuple(sorted(sizes)), tuple(sorted(steps))
        if is_relative(metric):
            row.est = estimate(units.values(), LINEAR)
        rows.append(row)
        index[(key, arm, metric)] = row
    for row in rows:
        if is_relative(row.metric):
            continue
        base = index.get((row.key, baseline, row.metric))
        if base is None or base.summary.median == 0:
            continue
        row.baseline_median = base.summary.median
        if row is base:
            row.norm, row.norm_lo, row.norm_hi = 1.0, 1.0, 1.0
            row.norm_units = {s: 1.0 for s in row.units}
            continue
        _normalize(row, base)
    return Table(
        rows=rows,
        baseline=baseline,
        settings=settings,
        records_per_arm=col.reps,
        kinds=col.kinds,
        setting_flags={a: s.flags for a, s in col.arm_set.items() if s.flags},
        counts=col.counts,
        model_counts=col.model_counts,
    )
