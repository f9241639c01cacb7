"""Grouping and normalization: records -> one row per (group, arm, metric).

A group is (suite, experiment, model, scenario, data, batch_size, variant); ``variant`` is
``params.variant`` when a record sets it, "<N> jobs" for the sharing scenario
(``params.jobs``), else "". Records
of one group and arm are repetitions: their values are summarized (stats.summarize) and the
median is divided by the baseline arm's median of the same group and metric.

Metrics per record: ``images_per_sec``, ``elapsed_s``, every finite number in ``metrics``
(the scenarios' names renamed by ALIASES: ``alone_elapsed_s`` -> ``elapsed_alone_s``,
``elapsed_increase`` -> ``elapsed_degradation``, ``throughput_ratio`` ->
``aggregate_throughput_ratio`` ...), and two derived from the shared scenario's metrics
when both halves are present:
``elapsed_degradation`` = elapsed_shared_s / elapsed_alone_s - 1 and
``images_per_sec_degradation`` = 1 - images_per_sec_shared / images_per_sec_alone.
A metric named ``<shape>.<name>`` (the kernel scenario's per-shape metrics, e.g.
``rnn_gru_h512_b32_t50.time_per_call_s``) becomes metric ``<name>`` of variant ``<shape>``.
Ratios and degradations (RATIO_METRICS and names ending in ``_ratio``/``_degradation``) are
already relative, so they are not normalized to the baseline.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from report.mapping import Arm, ArmSetting, arm_settings, check_paired
from report.stats import Summary, ratio_ci, summarize

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
}
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
    for name in ("images_per_sec", "elapsed_s"):
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
    kinds: dict[GroupKey, str] = field(default_factory=dict)
    shapes: dict[tuple[GroupKey, Arm], tuple[set[int], set[int]]] = field(default_factory=dict)
    arm_set: dict[Arm, ArmSetting] = field(default_factory=dict)
    # per arm, one record per distinct environment (all records on the Python path)
    reps: dict[Arm, list[dict[str, Any]]] = field(default_factory=dict)
    counts: dict[Arm, int] = field(default_factory=dict)  # ok records per arm
    model_counts: dict[str, int] = field(default_factory=dict)  # ok records per model

    def add(self, key: GroupKey, arm: Arm, rec: dict[str, Any]) -> None:
        """One record's metrics (the Python path, and unusual records of report.scan)."""
        for metric, v in metric_values(rec).items():
            k = key
            if "." in metric:
                shape, _, metric = metric.rpartition(".")
                k = replace(key, variant="/".join(p for p in (key.variant, shape) if p))
            self.values.setdefault((k, arm, metric), []).append(v)
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


def finish(col: Collected, baseline: Arm) -> Table:
    """Summaries, normalization and intervals of collected values."""
    settings = {a: s.setting for a, s in col.arm_set.items()}
    rows: list[Row] = []
    index: dict[tuple[GroupKey, Arm, str], Row] = {}
    # in the order of their fields: suite, experiment, ..., batch size (as a number), arm, metric
    for (key, arm, metric), vals in sorted(col.values.items()):
        seed_key = f"{key}|{arm.label}|{metric}"
        row = Row(key, arm, settings[arm], metric, summarize(vals, seed_key))
        sizes, steps = col.shapes.get((key, arm), (set(), set()))
        row.image_sizes, row.steps = tuple(sorted(sizes)), tuple(sorted(steps))
        rows.append(row)
        index[(key, arm, metric)] = row
    for row in rows:
        if is_relative(row.metric):
            continue
        base = index.get((row.key, baseline, row.metric))
        if base is None or base.summary.median == 0:
            continue
        b = base.summary.median
        row.baseline_median = b
        row.norm = row.summary.median / b
        row.norm_lo, row.norm_hi = (
            (1.0, 1.0)
            if row is base
            else ratio_ci(
                row.summary.values, base.summary.values, f"{row.key}|{row.arm.label}|{row.metric}"
            )
        )
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
