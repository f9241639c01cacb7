"""Verdicts per published claim: one explicit check table, tolerances included.

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

BOUNDS below reads as: claim, what is checked, which rows (metric, experiment, models,
settings, batch, a model-name test), the bound [lo, hi] and the tolerance added to it, and
``agg`` ("max": the bound applies to each arm's largest value over models). RELATIONS holds
the checks that compare arms or models with each other (report.relations).

Windows (what an elapsed time measures; records and docs name them the same way): the
papers' elapsed times are a whole job's, launch to finish (CLOSER 2018: "job launch to
finish, includes data loading"), so the elapsed checks read ``elapsed_s`` and the shared
scenario's ``elapsed_degradation`` is that of the two jobs' elapsed_s (report.table); the
VMware claims are about training wall-clock (``train_wall_s`` of the mnist_epochs scenario);
the Bitfusion completion time is the jobs' timed windows (``completion_time_ratio``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from report import relations as R
from report.checks import Outcome, missing, per_arm, pick, value
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
from report.published import Published
from report.table import Row, Table, is_relative

METHOD_CHECK = "method check"  # the records ran on no GPU: numbers, no verdict word
FIG_TOL = 0.05  # published figures: each measured normalized value within the paper's ± 0.05
CL, VW, IBM = "closer2018", "vmware_vgpu_containers", "ibm_containers"
BF = "vmware_bitfusion_singularity"
CONTAINERS = ("cbm", "cvm")
# the VMware claims are about training wall-clock: the mnist_epochs scenario's train_wall_s,
# else the job's elapsed_s
MNIST_TIME = ("train_wall_s", "elapsed_s")
# what each elapsed metric a check reads measures (the "window"), shown with the check
WINDOWS = {
    "elapsed_s": "elapsed = job launch to finish, start-up included, as the paper's",
    "elapsed_degradation": "elapsed = each job's launch to finish, as the paper's",
    "train_wall_s": "training wall-clock (the epochs), as the paper's run time",
    "completion_time_ratio": "the jobs' timed windows",
}
MIN_UNITS = 3  # no verdict on fewer units, whatever the calibration says
# units a verdict needs, per claim (benchmarks/calibration.py, 1 % run-to-run noise): the
# smallest number at which the paper's own numbers come out reproduced and a truth outside
# the band by its width not reproduced, each 80 % of the time or more
UNITS_NEEDED: dict[str, int] = {}


def units_needed(claim: str) -> int:
    return max(MIN_UNITS, UNITS_NEEDED.get(claim, MIN_UNITS))


@dataclass(frozen=True)
class Bound:
    claim: str
    what: str
    metric: str | tuple[str, ...]  # a tuple: the first metric that has rows is judged
    lo: float | None
    hi: float | None
    tol: float
    experiment: str | None = None
    models: tuple[str, ...] | None = None
    settings: tuple[str, ...] | None = None
    batch: int | None = None
    match: Callable[[str], bool] | None = None  # model-name test (kernels)
    variant: Callable[[str], bool] | None = None  # variant test (NUMA affinity)
    suite: str | None = None  # only rows of this suite (or an experiment naming it)
    agg: str | None = None  # "max": per arm, the largest value over models
    with_baseline: bool = False  # judge the baseline arm too (ratios, degradations)


def _conv_gemm(m: str) -> bool:
    return "conv" in m or "gemm" in m


def _rnn_lstm(m: str) -> bool:
    return ("rnn" in m or "lstm" in m or "vanilla" in m) and "gru" not in m


def _gru(m: str) -> bool:
    return "gru" in m


def _four_jobs(v: str) -> bool:
    return v in ("", "4 jobs")  # the study ran 4 concurrent jobs; other N are not comparable


def _bandwidth(m: str) -> bool:
    return "bandwidth" in m


BIG, CNNS = R.BIG, R.CNNS
SS, SR, DS, DR = "single_synthetic", "single_real", "distributed_synthetic", "distributed_real"

BOUNDS: list[Bound] = [
    Bound(
        f"{CL}/{SS}",
        "every non-BM arm within 15 %: imgs/s >= 0.85x",
        "images_per_sec",
        0.85,
        None,
        0.03,
        SS,
    ),
    Bound(
        f"{CL}/{SS}",
        "every non-BM arm within 15 %: elapsed <= 1.15x",
        "elapsed_s",
        None,
        1.15,
        0.03,
        SS,
    ),
    Bound(
        f"{CL}/{SR}",
        "container on BM almost the same as BM: imgs/s within 5 %",
        "images_per_sec",
        1.0,
        1.0,
        0.05,
        SR,
        settings=("cbm",),
    ),
    Bound(
        f"{CL}/{SR}",
        "container on BM almost the same as BM: elapsed within 5 %",
        "elapsed_s",
        1.0,
        1.0,
        0.05,
        SR,
        settings=("cbm",),
    ),
    Bound(
        f"{CL}/{SR}",
        "container on VM elapsed almost 30 % longer (max over models 1.30x)",
        "elapsed_s",
        1.30,
        1.30,
        0.10,
        SR,
        settings=("cvm",),
        agg="max",
    ),
    Bound(
        f"{CL}/{SR}",
        "synthetic data: container on VM elapsed under 20 % longer (max < 1.20x)",
        "elapsed_s",
        None,
        1.20,
        0.02,
        SS,
        settings=("cvm",),
        agg="max",
    ),
    Bound(
        f"{CL}/{DS}",
        "InceptionV3/ResNet-50 imgs/s, container on BM: about 20 % lower (0.80x)",
        "images_per_sec",
        0.80,
        0.80,
        0.07,
        DS,
        models=BIG,
        settings=("cbm",),
    ),
    Bound(
        f"{CL}/{DS}",
        "InceptionV3/ResNet-50 imgs/s, VM: about 25 % lower (0.75x)",
        "images_per_sec",
        0.75,
        0.75,
        0.07,
        DS,
        models=BIG,
        settings=("vm",),
    ),
    Bound(
        f"{CL}/{DS}",
        "InceptionV3/ResNet-50 imgs/s, container on VM: about 35 % lower (0.65x)",
        "images_per_sec",
        0.65,
        0.65,
        0.07,
        DS,
        models=BIG,
        settings=("cvm",),
    ),
    Bound(
        f"{CL}/{DR}",
        "container on VM elapsed up to 1.5x BM (max over models)",
        "elapsed_s",
        1.5,
        1.5,
        0.10,
        DR,
        settings=("cvm",),
        agg="max",
    ),
    Bound(
        f"{CL}/shared",
        "batch-32 models: elapsed degradation within 20 %",
        "elapsed_degradation",
        None,
        0.20,
        0.02,
        "shared",
        models=CNNS,
        batch=32,
        with_baseline=True,
    ),
    Bound(
        f"{CL}/shared",
        "AlexNet batch 512: elapsed degradation over 30 %",
        "elapsed_degradation",
        0.30,
        None,
        0.03,
        "shared",
        models=("alexnet",),
        batch=512,
        with_baseline=True,
    ),
    Bound(
        f"{CL}/shared",
        "AlexNet batch 32: elapsed degradation under 10 % for container and VM",
        "elapsed_degradation",
        None,
        0.10,
        0.02,
        "shared",
        models=("alexnet",),
        batch=32,
        settings=("cbm", "vm", "cvm"),
    ),
    Bound(
        f"{VW}/virtualization_overhead",
        "MNIST CNN elapsed in a VM (passthrough or vGPU) about 4 % over bare metal (<= 1.04x)",
        MNIST_TIME,
        None,
        1.04,
        0.04,
        models=("mnist_cnn",),
        settings=("vm",),
    ),
    Bound(
        f"{IBM}/conv_gemm_parity",
        "conv and GEMM kernels: container time per call within 5 %",
        "time_per_call_s",
        1.0,
        1.0,
        0.05,
        settings=CONTAINERS,
        match=_conv_gemm,
    ),
    Bound(
        f"{IBM}/rnn",
        "vanilla RNN and LSTM kernels: container time per call within 5 %",
        "time_per_call_s",
        1.0,
        1.0,
        0.05,
        settings=CONTAINERS,
        match=_rnn_lstm,
    ),
    Bound(
        f"{IBM}/rnn",
        "GRU kernels consistently slower in the container (> 1.0x)",
        "time_per_call_s",
        1.0 + 1e-9,
        None,
        0.0,
        settings=CONTAINERS,
        match=_gru,
    ),
    Bound(
        f"{IBM}/bandwidth_numa",
        "container affinitized to the GPU's node: GB/s restored "
        "(>= 0.95x of the baseline pinned the same way)",
        "gbps",
        0.95,
        None,
        0.0,
        settings=CONTAINERS,
        match=_bandwidth,
        variant=R.is_local,
    ),
    Bound(
        f"{IBM}/fathom_parity",
        "Fathom convolution models: container imgs/s within 5 %",
        "images_per_sec",
        1.0,
        1.0,
        0.05,
        models=("alexnet", "vgg", "residual", "deepq"),
        settings=CONTAINERS,
        suite="ibm-containers",
    ),
    Bound(
        f"{BF}/sharing_throughput",
        "4 jobs at 25 % of a GPU: aggregate throughput about 3x one full-GPU job",
        "aggregate_throughput_ratio",
        3.0,
        3.0,
        0.5,
        with_baseline=True,
        variant=_four_jobs,
    ),
    Bound(
        f"{BF}/sharing_completion",
        "4 jobs take about 17 % longer than one (completion-time ratio 1.17)",
        "completion_time_ratio",
        1.17,
        1.17,
        0.10,
        with_baseline=True,
        variant=_four_jobs,
    ),
]

# (claim, what, tolerance, check)
RELATIONS: list[tuple[str, str, str, Callable[[Table], R.Measured]]] = [
    (
        f"{CL}/{SS}",
        "container on VM has the lowest mean normalized imgs/s",
        "<= others + 0.02",
        R.cvm_worst,
    ),
    (
        f"{CL}/{SS}",
        "elapsed degrades more than throughput (per arm, mean over models; "
        + WINDOWS["elapsed_s"]
        + ")",
        "elapsed increase >= imgs/s decrease - 0.02",
        R.elapsed_more,
    ),
    (
        f"{CL}/{DS}",
        "AlexNet much less affected: degradation at most half of InceptionV3/ResNet-50's",
        "<= half of theirs + 0.02",
        R.alexnet_less,
    ),
    (
        f"{CL}/{DR}",
        "real data like synthetic: normalized imgs/s differ by at most 0.10",
        "|diff| <= 0.10",
        R.real_like_synthetic,
    ),
    (
        f"{CL}/shared",
        "bare metal degrades most, VM least (elapsed degradation per model and batch; "
        + WINDOWS["elapsed_degradation"]
        + ")",
        "bm >= others - 0.02, vm <= others + 0.02",
        R.shared_order,
    ),
    (
        f"{IBM}/bandwidth_numa",
        "container pinned away from the GPU's NUMA node: host-device "
        "GB/s considerably lower than pinned to it (< 0.90x)",
        "< 0.90 (none)",
        R.numa_remote_lower,
    ),
    (
        f"{VW}/mnist_container_vm",
        "MNIST CNN training time, docker in a VM over docker natively: no measurable penalty "
        "(equivalence: two one-sided tests against the 3 % margin; "
        + WINDOWS["train_wall_s"]
        + ")",
        "0.97 - 1.03 (1.0 ± 0.03)",
        R.ratio_within(MNIST_TIME, "mnist_cnn", "cvm", "cbm", 0.97, 1.03),
    ),
]

NOT_CHECKABLE = {
    f"{VW}/mixed_workloads": "this lab runs no knowledge-worker or 3D CAD VMs",
    f"{VW}/vgpu_scheduling": "descriptive claim: no number to check",
}


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
        return [row_item(r, lo, hi) for r in rows]

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
                items.append(row_item(r, lo - FIG_TOL, hi + FIG_TOL, f"(paper {paper})"))
            return items

        what = f"Figure {fig.number}: each measured setting/model within the paper's value"
        if fig.metric in WINDOWS:
            what += f" ({WINDOWS[fig.metric]})"
        out.append(Check(f"{fig.paper}/{fig.key}", what, f"paper ± {FIG_TOL}", fn))
    return out


def _not_checkable(why: str) -> Callable[[Table], R.Measured]:
    def fn(t: Table) -> R.Measured:
        return missing(why)

    return fn


def all_checks(pub: Published) -> list[Check]:
    checks = [bound_check(b) for b in BOUNDS]
    checks += [Check(c, w, tol, fn) for c, w, tol, fn in RELATIONS]
    checks += [
        Check(c, "not checkable", "n/a", _not_checkable(w)) for c, w in NOT_CHECKABLE.items()
    ]
    return checks + figure_checks(pub)


def device_kind(rec: dict[str, Any]) -> str:
    """``gpu``, ``cpu`` or ``unknown``: what a record ran on, from its fingerprint's GPUs and
    the device the framework says it used (``params.device.used``)."""
    fp = rec.get("fingerprint") if isinstance(rec.get("fingerprint"), dict) else {}
    gpu = fp.get("gpu") if isinstance(fp, dict) else None
    gpus = gpu.get("gpus") if isinstance(gpu, dict) else None
    params = rec.get("params") if isinstance(rec.get("params"), dict) else {}
    device = params.get("device") if isinstance(params, dict) else None
    used = device.get("used") if isinstance(device, dict) else None
    if used == "cpu":
        return "cpu"
    if isinstance(gpus, list) and gpus:
        return "gpu"
    if isinstance(gpu, dict) and (gpu.get("present") is False or gpus == []):
        return "cpu"
    return "unknown"


def on_cpu(records: Iterable[dict[str, Any]]) -> bool:
    """The records ran on no GPU: some say CPU, none says GPU."""
    kinds = {device_kind(r) for r in records}
    return "cpu" in kinds and "gpu" not in kinds


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
    "FAIL",
    "INCONCLUSIVE",
    "METHOD_CHECK",
    "NOT_MEASURED",
    "NOT_REPRODUCED",
    "PASS",
    "REPRODUCED",
    "UNSURE",
    "Verdict",
    "all_checks",
    "verdicts",
]
