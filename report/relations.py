"""Claim checks that compare arms or models with each other (not a value against a bound).

Each relation is measured per unit, like every other check (report.decide): for each slot
(a study repeat, report.units) the rows' per-unit values are combined into the quantity the
claim speaks of (a difference of means, a contrast, a ratio of two arms), and that quantity
gets its estimate and t interval over the units (report.intervals) and the band the claim
allows. A slot counts where every row of the relation has a value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from report.checks import Outcome, missing, per_arm, pick
from report.decide import Item
from report.intervals import LINEAR, LOG, Estimate, estimate
from report.mapping import Arm
from report.table import Row, Table

CLOSER = "closer2018"
BIG = ("inception_v3", "resnet50")
CNNS = ("inception_v3", "resnet50", "alexnet")
NON_BM = ("cbm", "vm", "cvm")
Measured = list[Item] | Outcome


def combine(
    rows: Sequence[Row],
    fn: Callable[[list[float]], float],
    scale: str = LINEAR,
    raw: bool = False,
) -> Estimate | None:
    """The estimate over units of ``fn`` (the rows' values of one slot, in ``rows``' order):
    the judged per-unit values (normalized, or the ratio itself), or the rows' own per-unit
    means where ``raw``. None where the rows share no slot."""
    units = [r.units if raw else r.judged_units() for r in rows]
    if not units:
        return None
    common = sorted(set.intersection(*(set(u) for u in units)))
    if not common:
        return None
    return estimate([fn([u[s] for u in units]) for s in common], scale)


def word(rows: Sequence[Row]) -> str:
    """What n counts for these rows: study repeats ("units") or runs."""
    return "units" if rows and all(r.study for r in rows) else "runs"


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def _split_mean(k: int) -> Callable[[list[float]], float]:
    """mean of the first ``k`` values - mean of the others."""
    return lambda v: _mean(v[:k]) - _mean(v[k:])


def cvm_worst(t: Table) -> Measured:
    """single_synthetic: container on VM has the lowest mean normalized imgs/s (tol 0.02):
    per other non-baseline arm, cvm's mean over the models both ran minus that arm's <= 0.02."""
    rows = pick(
        t,
        "images_per_sec",
        experiment="single_synthetic",
        models=CNNS,
        settings=NON_BM,
        suite_pref=CLOSER,
    )
    by_arm = per_arm(rows)
    cvm = [a for a, rs in by_arm.items() if rs[0].setting == "cvm"]
    others = [a for a in by_arm if a not in cvm]
    if not cvm or not others:
        return missing("needs a container-on-VM arm and another non-baseline arm")
    items = []
    for c in sorted(cvm):
        for o in sorted(others):
            models = {r.key.model for r in by_arm[c]} & {r.key.model for r in by_arm[o]}
            mine = [r for r in by_arm[c] if r.key.model in models]
            theirs = [r for r in by_arm[o] if r.key.model in models]
            est = combine(mine + theirs, _split_mean(len(mine)))
            items.append(
                Item(
                    f"{c} - {o}: mean normalized imgs/s",
                    est,
                    hi=0.02,
                    word=word(mine + theirs),
                )
            )
    return items


def elapsed_more(t: Table) -> Measured:
    """single_synthetic: per arm, mean elapsed increase - mean imgs/s decrease >= -0.02."""
    kw = {"experiment": "single_synthetic", "settings": NON_BM, "suite_pref": CLOSER}
    ips = per_arm(pick(t, "images_per_sec", **kw))  # type: ignore[arg-type]
    ela = per_arm(pick(t, "elapsed_s", **kw))  # type: ignore[arg-type]
    arms = sorted(set(ips) & set(ela))
    if not arms:
        return missing("no single_synthetic images/sec and elapsed records with a baseline")
    items = []
    for a in arms:
        k = len(ela[a])
        rows = ela[a] + ips[a]

        def contrast(v: list[float], k: int = k) -> float:
            return _mean([x - 1.0 for x in v[:k]]) - _mean([1.0 - x for x in v[k:]])

        items.append(
            Item(
                f"{a}: elapsed increase - imgs/s decrease",
                combine(rows, contrast),
                lo=-0.02,
                word=word(rows),
            )
        )
    return items


def alexnet_less(t: Table) -> Measured:
    """distributed_synthetic: AlexNet's degradation - half of InceptionV3/ResNet-50's <= 0.02."""
    rows = per_arm(
        pick(
            t,
            "images_per_sec",
            experiment="distributed_synthetic",
            models=CNNS,
            settings=NON_BM,
            suite_pref=CLOSER,
        )
    )
    items = []
    for a, rs in sorted(rows.items()):
        alex = [r for r in rs if r.key.model == "alexnet"][:1]
        big = [r for r in rs if r.key.model in BIG]
        if not alex or not big:
            continue

        def contrast(v: list[float]) -> float:
            return (1.0 - v[0]) - 0.5 * _mean([1.0 - x for x in v[1:]])

        items.append(
            Item(
                f"{a}: AlexNet's degradation - half of InceptionV3/ResNet-50's",
                combine(alex + big, contrast),
                hi=0.02,
                word=word(alex + big),
            )
        )
    if not items:
        return missing("needs AlexNet and InceptionV3 or ResNet-50 in distributed_synthetic")
    return items


def real_like_synthetic(t: Table) -> Measured:
    """distributed_real vs distributed_synthetic: normalized imgs/s differ by <= 0.10.

    (The paper's own figures 6 and 8 differ by up to 0.09, and the paper calls them similar.)
    """
    syn = {
        (r.arm, r.key.model): r
        for r in pick(t, "images_per_sec", experiment="distributed_synthetic", suite_pref=CLOSER)
    }
    real = pick(t, "images_per_sec", experiment="distributed_real", suite_pref=CLOSER)
    pairs = [(r, syn[(r.arm, r.key.model)]) for r in real if (r.arm, r.key.model) in syn]
    if not pairs:
        return missing("needs distributed_real and distributed_synthetic for the same arm/model")
    return [
        Item(
            f"{r.arm.label} {r.key.model}: real - synthetic",
            combine([r, s], lambda v: v[0] - v[1]),
            lo=-0.10,
            hi=0.10,
            word=word([r, s]),
        )
        for r, s in pairs
    ]


def shared_order(t: Table) -> Measured:
    """shared: per model and batch, bm degrades most and vm least (elapsed, tol 0.02): bm's
    degradation - each other setting's >= -0.02, vm's - each other's <= 0.02."""
    rows = pick(
        t, "elapsed_degradation", experiment="shared", include_baseline=True, suite_pref=CLOSER
    )
    by_model: dict[tuple[str, int], dict[str, Row]] = {}
    for r in rows:
        by_model.setdefault((r.key.model, r.key.batch_size), {}).setdefault(r.setting, r)
    items = []
    for (model, batch), d in sorted(by_model.items()):
        if "bm" not in d or "vm" not in d:
            continue
        for s, r in d.items():
            if s != "bm":
                items.append(
                    Item(
                        f"{model} b{batch}: bm - {s}",
                        combine([d["bm"], r], lambda v: v[0] - v[1]),
                        lo=-0.02,
                        word=word([d["bm"], r]),
                    )
                )
            if s not in ("bm", "vm"):
                items.append(
                    Item(
                        f"{model} b{batch}: vm - {s}",
                        combine([d["vm"], r], lambda v: v[0] - v[1]),
                        hi=0.02,
                        word=word([d["vm"], r]),
                    )
                )
    if not items:
        return missing("needs shared-scenario records for bare metal and VM")
    return items


def ratio_within(
    metrics: tuple[str, ...],
    model: str,
    num: str,
    den: str,
    lo: float,
    hi: float,
    keep: Callable[[Table, Arm], bool] | None = None,
) -> Callable[[Table], Measured]:
    """Each ``num``-setting arm over each ``den``-setting arm (one model, the first of
    ``metrics`` that both have; only arms ``keep`` accepts), paired per unit, inside [lo, hi]:
    with lo < 1 < hi an equivalence test (two one-sided tests) against that margin."""

    def fn(t: Table) -> Measured:
        nums: list[Row] = []
        dens: list[Row] = []
        for metric in metrics:
            rows = [
                r
                for r in t.rows
                if r.metric == metric and r.key.model == model and (keep is None or keep(t, r.arm))
            ]
            nums = [r for r in rows if r.setting == num]
            dens = [r for r in rows if r.setting == den]
            if nums and dens:
                break
        if not nums or not dens:
            return missing(f"needs {model} {' or '.join(metrics)} for both {num} and {den} arms")
        return [
            Item(
                f"{n.arm.label} / {d.arm.label} ({n.metric})",
                combine([n, d], lambda v: v[0] / v[1], LOG, raw=True),
                lo=lo,
                hi=hi,
                times=True,
                word=word([n, d]),
            )
            for n in nums
            for d in dens
            if n.key.variant == d.key.variant
        ]

    return fn


def is_local(variant: str) -> bool:
    """A bandwidth variant pinned to the GPU's NUMA node (``bandwidth_h2d_local_<bytes>``)."""
    return "_local_" in f"_{variant.lower()}_"


def is_remote(variant: str) -> bool:
    """A bandwidth variant pinned to a node away from the GPU (``bandwidth_h2d_remote_<b>``)."""
    return "_remote_" in f"_{variant.lower()}_"


def numa_remote_lower(t: Table) -> Measured:
    """bandwidth_numa: in a container arm, GB/s pinned away from the GPU's node < 0.90x of
    GB/s pinned to it (same direction and size, same record set), paired per unit."""
    rows = [
        r
        for r in t.rows
        if r.metric == "gbps" and r.setting in ("cbm", "cvm") and r.key.model == "bandwidth"
    ]
    local = {
        (r.arm, r.key.variant.replace("_local_", "_X_")): r for r in rows if is_local(r.key.variant)
    }
    pairs = [
        (r, local.get((r.arm, r.key.variant.replace("_remote_", "_X_"))))
        for r in rows
        if is_remote(r.key.variant)
    ]
    found = [(r, lo) for r, lo in pairs if lo is not None]
    if not found:
        return missing(
            "no container bandwidth records pinned both local and remote "
            "(a single-NUMA-node host has no remote node)"
        )
    return [
        Item(
            f"{r.arm.label} {r.key.variant}: remote/local",
            combine([r, lo], lambda v: v[0] / v[1], LOG, raw=True),
            hi=0.90,
            times=True,
            word=word([r, lo]),
        )
        for r, lo in found
    ]
