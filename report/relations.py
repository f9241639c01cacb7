"""Claim checks that compare arms or models with each other (not a value against a bound)."""

from __future__ import annotations

from collections.abc import Callable

from report.checks import Outcome, missing, per_arm, pick, value
from report.table import Row, Table

CLOSER = "closer2018"
BIG = ("inception_v3", "resnet50")
CNNS = ("inception_v3", "resnet50", "alexnet")
NON_BM = ("cbm", "vm", "cvm")


def _v(r: Row) -> float:
    v = value(r)
    assert v is not None  # pick() returns only rows with a value
    return v


def cvm_worst(t: Table) -> Outcome:
    """single_synthetic: container on VM has the lowest mean normalized imgs/s (tol 0.02)."""
    rows = pick(
        t,
        "images_per_sec",
        experiment="single_synthetic",
        models=CNNS,
        settings=NON_BM,
        suite_pref=CLOSER,
    )
    by_arm = per_arm(rows)
    means = {a: sum(_v(r) for r in rs) / len(rs) for a, rs in by_arm.items()}
    cvm = [a for a, rs in by_arm.items() if rs[0].setting == "cvm"]
    if not cvm or len(means) < 2:
        return missing("needs a container-on-VM arm and another non-baseline arm")
    others = min(v for a, v in means.items() if a not in cvm)
    worst = max(means[a] for a in cvm)
    text = ", ".join(f"{a} {v:.3f}" for a, v in sorted(means.items()))
    return Outcome("pass" if worst <= others + 0.02 else "fail", f"mean normalized imgs/s: {text}")


def elapsed_more(t: Table) -> Outcome:
    """single_synthetic: per arm, mean elapsed increase >= mean imgs/s decrease - 0.02."""
    kw = {"experiment": "single_synthetic", "settings": NON_BM, "suite_pref": CLOSER}
    ips = per_arm(pick(t, "images_per_sec", **kw))  # type: ignore[arg-type]
    ela = per_arm(pick(t, "elapsed_s", **kw))  # type: ignore[arg-type]
    arms = sorted(set(ips) & set(ela))
    if not arms:
        return missing("no single_synthetic images/sec and elapsed records with a baseline")
    parts, ok = [], True
    for a in arms:
        d_ips = sum(1 - _v(r) for r in ips[a]) / len(ips[a])
        d_ela = sum(_v(r) - 1 for r in ela[a]) / len(ela[a])
        ok &= d_ela >= d_ips - 0.02
        parts.append(f"{a}: elapsed {d_ela:+.1%} vs imgs/s {-d_ips:+.1%}")
    return Outcome("pass" if ok else "fail", "; ".join(parts))


def alexnet_less(t: Table) -> Outcome:
    """distributed_synthetic: AlexNet's degradation <= half of InceptionV3/ResNet-50's + 0.02."""
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
    parts, ok, seen = [], True, False
    for a, rs in sorted(rows.items()):
        alex = [1 - _v(r) for r in rs if r.key.model == "alexnet"]
        big = [1 - _v(r) for r in rs if r.key.model in BIG]
        if not alex or not big:
            continue
        seen = True
        ref = sum(big) / len(big)
        ok &= alex[0] <= 0.5 * ref + 0.02
        parts.append(f"{a}: AlexNet {-alex[0]:+.1%} vs InceptionV3/ResNet-50 {-ref:+.1%}")
    if not seen:
        return missing("needs AlexNet and InceptionV3 or ResNet-50 in distributed_synthetic")
    return Outcome("pass" if ok else "fail", "; ".join(parts))


def real_like_synthetic(t: Table) -> Outcome:
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
    bad = [(r, s) for r, s in pairs if abs(_v(r) - _v(s)) > 0.10]
    shown = bad or pairs
    text = "; ".join(
        f"{r.arm.label} {r.key.model}: real {_v(r):.3f} vs synthetic {_v(s):.3f}"
        for r, s in shown[:6]
    )
    return Outcome("fail" if bad else "pass", text)


def shared_order(t: Table) -> Outcome:
    """shared: per model and batch, bm degrades most and vm least (elapsed, tol 0.02)."""
    rows = pick(
        t, "elapsed_degradation", experiment="shared", include_baseline=True, suite_pref=CLOSER
    )
    by_model: dict[tuple[str, int], dict[str, float]] = {}
    for r in rows:
        by_model.setdefault((r.key.model, r.key.batch_size), {}).setdefault(r.setting, _v(r))
    parts, ok, seen = [], True, False
    for (model, batch), d in sorted(by_model.items()):
        if "bm" not in d or "vm" not in d:
            continue
        seen = True
        ok &= d["bm"] >= max(d.values()) - 0.02 and d["vm"] <= min(d.values()) + 0.02
        parts.append(f"{model} b{batch}: " + ", ".join(f"{s} {v:+.1%}" for s, v in d.items()))
    if not seen:
        return missing("needs shared-scenario records for bare metal and VM")
    return Outcome("pass" if ok else "fail", "; ".join(parts))


def ratio_at_most(
    metrics: tuple[str, ...], model: str, num: str, den: str, hi: float
) -> Callable[[Table], Outcome]:
    """Median of each ``num``-setting arm over each ``den``-setting arm (one model, the first
    of ``metrics`` that both have, same variant) <= ``hi``."""

    def fn(t: Table) -> Outcome:
        nums: list[Row] = []
        dens: list[Row] = []
        for metric in metrics:
            rows = [r for r in t.rows if r.metric == metric and r.key.model == model]
            nums = [r for r in rows if r.setting == num]
            dens = [r for r in rows if r.setting == den]
            if nums and dens:
                break
        if not nums or not dens:
            return missing(f"needs {model} {' or '.join(metrics)} for both {num} and {den} arms")
        parts, ok = [], True
        for n in nums:
            for d in dens:
                q = n.summary.median / d.summary.median
                ok &= q <= hi
                parts.append(f"{n.arm.label} / {d.arm.label} = {q:.3f}")
        return Outcome("pass" if ok else "fail", "; ".join(parts))

    return fn


def is_local(variant: str) -> bool:
    """A bandwidth variant pinned to the GPU's NUMA node (``bandwidth_h2d_local_<bytes>``)."""
    return "_local_" in f"_{variant.lower()}_"


def is_remote(variant: str) -> bool:
    """A bandwidth variant pinned to a node away from the GPU (``bandwidth_h2d_remote_<b>``)."""
    return "_remote_" in f"_{variant.lower()}_"


def numa_remote_lower(t: Table) -> Outcome:
    """bandwidth_numa: in a container arm, GB/s pinned away from the GPU's node < 0.90x of
    GB/s pinned to it (same direction and size, same record set)."""
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
    pairs = [(r, lo) for r, lo in pairs if lo is not None]
    if not pairs:
        return missing(
            "no container bandwidth records pinned both local and remote "
            "(a single-NUMA-node host has no remote node)"
        )
    parts, ok = [], True
    for r, lo in pairs:
        assert lo is not None
        q = r.summary.median / lo.summary.median
        ok &= q < 0.90
        parts.append(f"{r.arm.label} {r.key.variant}: remote/local {q:.3f}")
    return Outcome("pass" if ok else "fail", "; ".join(parts[:8]))
