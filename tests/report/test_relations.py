"""The checks that relate arms or models to each other (report.relations), on rows built per
case (tests/report/claim_rows.py): the per-unit quantity each forms, the band, and that each
reads only its own experiment, models, settings and the paper's suite."""

from __future__ import annotations

import math
from typing import Any

import pytest

from report import relations as R
from report.checks import MISSING, Outcome
from report.intervals import LINEAR, LOG
from tests.report.claim_rows import (
    BM,
    CBM,
    CVM,
    VM,
    VM2,
    decoys,
    judged,
    row,
    table,
)

# --- report.relations: per-unit quantities between rows -----------------------------------


def test_combine_pairs_the_rows_slots_in_order_and_reads_judged_or_raw_units() -> None:
    a = row(VM, {"0": 1.0, "1": 2.0, "2": 4.0}, raw={"0": 10.0, "1": 20.0, "2": 40.0})
    b = row(CVM, {"1": 1.0, "2": 3.0, "3": 9.0}, raw={"1": 5.0, "2": 8.0, "3": 1.0})
    e = R.combine([a, b], lambda v: v[0] - v[1])
    assert e is not None and (e.n, e.scale) == (2, LINEAR) and e.mean == pytest.approx(1.0)
    assert e.se == pytest.approx(0.0)
    raw = R.combine([a, b], lambda v: v[0] / v[1], LOG, raw=True)
    assert raw is not None and raw.n == 2 and raw.scale == LOG
    assert raw.value == pytest.approx(math.sqrt(4.0 * 5.0))
    assert R.combine([], lambda v: 0.0) is None
    c = row(CBM, {"7": 1.0})
    assert R.combine([a, c], lambda v: v[0]) is None


def test_the_word_for_n_is_units_only_when_every_row_is_a_study_repeat() -> None:
    s, r = row(VM, [1.0]), row(VM, [1.0], study=False)
    assert R.word([s, s]) == "units"
    assert R.word([s, r]) == "runs" and R.word([r]) == "runs" and R.word([]) == "runs"


def _slots(*values: float) -> list[float]:
    return [v * f for v in values for f in (0.999, 1.001)][: len(values) * 2]


def test_cvm_worst_compares_container_on_vm_with_each_other_arm_over_shared_models() -> None:
    t = table(
        row(CVM, [0.80] * 4, model="resnet50"),
        row(CVM, [0.70] * 4, model="alexnet"),
        row(VM, [0.90] * 4, model="resnet50"),
        row(VM2, [0.85] * 4, model="inception_v3"),
        row(VM2, [0.60] * 4, model="alexnet"),
    )
    got = R.cvm_worst(t)
    assert isinstance(got, list)
    assert [i.name for i in got] == [
        "nova-pci/docker - nova-pci/native: mean normalized imgs/s",
        "nova-pci/docker - nova-pci/other: mean normalized imgs/s",
    ]
    assert [round(i.est.value, 6) for i in got] == [-0.1, 0.1]  # type: ignore[union-attr]
    assert all(i.hi == 0.02 and i.lo == -math.inf and i.word == "units" for i in got)
    assert R.cvm_worst(table(row(VM, [0.9]))) == Outcome(
        MISSING, "needs a container-on-VM arm and another non-baseline arm"
    )
    assert isinstance(R.cvm_worst(table(row(CVM, [0.9]))), Outcome)


def test_elapsed_more_contrasts_elapsed_increase_with_imgs_decrease_per_arm() -> None:
    t = table(
        row(VM, [1.2, 1.2, 1.2], metric="elapsed_s"),
        row(VM, [0.9, 0.9, 0.9]),
        row(VM, [0.7, 0.7, 0.7], model="alexnet"),
        row(CVM, [0.9, 0.9, 0.9]),  # no elapsed: not judged
    )
    got = R.elapsed_more(t)
    assert isinstance(got, list) and len(got) == 1
    (i,) = got
    assert i.name == "nova-pci/native: elapsed increase - imgs/s decrease"
    assert i.est is not None and i.est.value == pytest.approx(0.2 - 0.2)  # 0.2 - mean(0.1, 0.3)
    assert (i.lo, i.hi) == (-0.02, math.inf)
    assert R.elapsed_more(table(row(VM, [0.9]))) == Outcome(
        MISSING, "no single_synthetic images/sec and elapsed records with a baseline"
    )


def test_alexnet_less_contrasts_alexnets_degradation_with_half_the_big_models() -> None:
    d = "distributed_synthetic"
    t = table(
        row(VM, [0.9] * 3, model="alexnet", experiment=d),
        row(VM, [0.8] * 3, model="resnet50", experiment=d),
        row(VM, [0.6] * 3, model="inception_v3", experiment=d),
        row(CVM, [0.9] * 3, model="alexnet", experiment=d),  # no big model: skipped
    )
    got = R.alexnet_less(t)
    assert isinstance(got, list) and len(got) == 1
    assert got[0].name == "nova-pci/native: AlexNet's degradation - half of InceptionV3/ResNet-50's"
    assert got[0].est is not None and got[0].est.value == pytest.approx(0.1 - 0.5 * 0.3)
    assert got[0].hi == 0.02 and got[0].lo == -math.inf
    assert R.alexnet_less(table(row(CVM, [0.9] * 3, model="alexnet", experiment=d))) == Outcome(
        MISSING, "needs AlexNet and InceptionV3 or ResNet-50 in distributed_synthetic"
    )


def test_real_like_synthetic_pairs_the_same_arm_and_model() -> None:
    t = table(
        row(VM, [0.9] * 3, experiment="distributed_real"),
        row(VM, [0.85] * 3, experiment="distributed_synthetic"),
        row(CVM, [0.7] * 3, experiment="distributed_real"),  # no synthetic twin
        row(VM, [0.5] * 3, experiment="distributed_real", model="alexnet"),
    )
    got = R.real_like_synthetic(t)
    assert isinstance(got, list) and len(got) == 1
    assert got[0].name == "nova-pci/native resnet50: real - synthetic"
    assert got[0].est is not None and got[0].est.value == pytest.approx(0.05)
    assert (got[0].lo, got[0].hi) == (-0.10, 0.10)
    assert R.real_like_synthetic(table(row(VM, [0.9], experiment="distributed_real"))) == Outcome(
        MISSING, "needs distributed_real and distributed_synthetic for the same arm/model"
    )


def test_shared_order_bm_degrades_most_and_vm_least() -> None:
    kw: dict[str, Any] = {"metric": "elapsed_degradation", "experiment": "shared"}
    t = table(
        row(BM, [0.5] * 3, **kw),
        row(VM, [0.1] * 3, **kw),
        row(CVM, [0.3] * 3, **kw),
        row(BM, [0.5] * 3, model="alexnet", **kw),  # no vm for alexnet: skipped
    )
    got = R.shared_order(t)
    assert isinstance(got, list)
    named = {i.name: (round(i.est.value, 6), i.lo, i.hi) for i in got}  # type: ignore[union-attr]
    assert named == {
        "resnet50 b32: bm - vm": (0.4, -0.02, math.inf),
        "resnet50 b32: bm - cvm": (0.2, -0.02, math.inf),
        "resnet50 b32: vm - cvm": (-0.2, -math.inf, 0.02),
    }
    assert R.shared_order(table(row(BM, [0.5] * 3, **kw))) == Outcome(
        MISSING, "needs shared-scenario records for bare metal and VM"
    )


def test_ratio_within_pairs_each_num_arm_with_each_den_arm_of_the_same_variant() -> None:
    fn = R.ratio_within(("train_wall_s", "elapsed_s"), "mnist", "cvm", "cbm", 0.97, 1.03)
    kw: dict[str, Any] = {"metric": "elapsed_s", "model": "mnist"}
    t = table(
        row(CVM, [1.0] * 3, raw=[110.0, 121.0, 99.0], **kw),
        row(CBM, [1.0] * 3, raw=[100.0, 110.0, 90.0], **kw),
        row(CBM, [1.0] * 3, raw=[1.0, 1.0, 1.0], variant="other", **kw),
    )
    got = fn(t)
    assert isinstance(got, list) and len(got) == 1
    (i,) = got
    assert i.name == "nova-pci/docker / magnum-k8s/container-bm (elapsed_s)"
    assert i.est is not None and i.est.scale == LOG and i.est.value == pytest.approx(1.1)
    assert (i.lo, i.hi, i.times) == (0.97, 1.03, True)
    first = fn(
        table(
            *t.rows,
            row(CVM, [1.0] * 3, raw=[50.0] * 3, metric="train_wall_s", model="mnist"),
            row(CBM, [1.0] * 3, raw=[100.0] * 3, metric="train_wall_s", model="mnist"),
        )
    )
    assert isinstance(first, list) and [x.est.value for x in first] == [pytest.approx(0.5)]  # type: ignore[union-attr]
    only = R.ratio_within(
        ("elapsed_s",), "mnist", "cvm", "cbm", 0.9, 1.1, keep=lambda t, a: a != CBM
    )
    assert only(t) == Outcome(MISSING, "needs mnist elapsed_s for both cvm and cbm arms")
    assert fn(table()) == Outcome(
        MISSING, "needs mnist train_wall_s or elapsed_s for both cvm and cbm arms"
    )
    assert fn(table(row(CVM, [1.0] * 3, **kw))) == Outcome(
        MISSING, "needs mnist train_wall_s or elapsed_s for both cvm and cbm arms"
    )


def test_local_and_remote_variants() -> None:
    assert R.is_local("bandwidth_h2d_local_1024") and not R.is_local("bandwidth_h2d_remote_1024")
    assert R.is_local("LOCAL") and R.is_remote("Remote_x") and not R.is_remote("remoteness")
    assert not R.is_local("h2d_locality_1")


def test_numa_remote_lower_pairs_remote_with_local_of_the_same_direction_and_size() -> None:
    kw: dict[str, Any] = {"metric": "gbps", "model": "bandwidth"}
    t = table(
        row(CBM, [1.0] * 3, raw=[10.0, 10.0, 10.0], variant="bandwidth_h2d_local_64", **kw),
        row(CBM, [1.0] * 3, raw=[8.0, 8.0, 8.0], variant="bandwidth_h2d_remote_64", **kw),
        row(
            CBM, [1.0] * 3, raw=[4.0, 4.0, 4.0], variant="bandwidth_d2h_remote_64", **kw
        ),  # no local
        row(
            VM, [1.0] * 3, raw=[1.0] * 3, variant="bandwidth_h2d_remote_64", **kw
        ),  # not a container
    )
    got = R.numa_remote_lower(t)
    assert isinstance(got, list) and len(got) == 1
    (i,) = got
    assert i.name == "magnum-k8s/container-bm bandwidth_h2d_remote_64: remote/local"
    assert i.est is not None and i.est.value == pytest.approx(0.8)
    assert (i.lo, i.hi, i.times) == (-math.inf, 0.90, True)
    assert isinstance(R.numa_remote_lower(table(t.rows[0])), Outcome)


ALL = ("suite", "experiment", "model", "setting")
CASES = {
    "cvm_worst": (
        R.cvm_worst,
        ALL,
        [
            row(CVM, [0.80, 0.82, 0.81], model="resnet50"),
            row(CVM, [0.70, 0.71, 0.72], model="alexnet"),
            row(VM, [0.90, 0.91, 0.92], model="resnet50"),
            row(VM2, [0.60, 0.62, 0.61], model="alexnet"),
        ],
    ),
    "elapsed_more": (
        R.elapsed_more,
        ("suite", "experiment", "setting"),
        [row(VM, [1.2, 1.25, 1.3], metric="elapsed_s"), row(VM, [0.9, 0.85, 0.8])],
    ),
    "alexnet_less": (
        R.alexnet_less,
        ALL,
        [
            row(VM, [0.9, 0.92, 0.91], model="alexnet", experiment="distributed_synthetic"),
            row(VM, [0.8, 0.82, 0.81], model="resnet50", experiment="distributed_synthetic"),
        ],
    ),
    "real_like_synthetic": (
        R.real_like_synthetic,
        ("suite", "experiment"),
        [
            row(VM, [0.9, 0.92, 0.91], experiment="distributed_real"),
            row(VM, [0.85, 0.8, 0.82], experiment="distributed_synthetic"),
        ],
    ),
    "shared_order": (
        R.shared_order,
        ("suite", "experiment"),
        [
            row(BM, [0.5, 0.55, 0.52], metric="elapsed_degradation", experiment="shared"),
            row(VM, [0.1, 0.12, 0.11], metric="elapsed_degradation", experiment="shared"),
            row(CVM, [0.3, 0.31, 0.33], metric="elapsed_degradation", experiment="shared"),
        ],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_relation_reads_only_its_experiment_models_settings_and_the_papers_suite(
    case: str,
) -> None:
    fn, kinds, rows = CASES[case]
    want = judged(fn(table(*rows)))
    assert want and all(w[1] is not None and w[4] == "units" for w in want)
    for kind in kinds:
        assert judged(fn(table(*decoys(rows, kind)))) == want, kind


@pytest.mark.parametrize("case", list(CASES))
def test_each_relation_counts_runs_where_its_rows_are_not_study_repeats(case: str) -> None:
    fn, _, rows = CASES[case]
    runs = [
        row(
            r.arm,
            r.judged_units(),
            metric=r.metric,
            model=r.key.model,
            experiment=r.key.base_experiment,
            raw=r.units,
            study=False,
        )
        for r in rows
    ]
    got = judged(fn(table(*runs)))
    assert got and {w[4] for w in got} == {"runs"}


def test_alexnets_degradation_is_its_one_row_against_the_big_models() -> None:
    d = "distributed_synthetic"
    rows = [
        row(VM, [0.9] * 3, model="alexnet", experiment=d),
        row(VM, [0.5] * 3, model="alexnet", experiment=d, variant="fp16"),
        row(VM, [0.8] * 3, model="resnet50", experiment=d),
    ]
    got = R.alexnet_less(table(*rows))
    assert isinstance(got, list) and len(got) == 1 and got[0].est is not None
    assert got[0].est.value == pytest.approx(0.1 - 0.5 * 0.2)


def test_shared_order_needs_both_bare_metal_and_vm_for_a_model() -> None:
    kw: dict[str, Any] = {"metric": "elapsed_degradation", "experiment": "shared"}
    only_bm = table(row(BM, [0.5] * 3, **kw), row(CVM, [0.3] * 3, **kw))
    assert isinstance(R.shared_order(only_bm), Outcome)
    only_vm = table(row(VM, [0.5] * 3, **kw), row(CVM, [0.3] * 3, **kw))
    assert isinstance(R.shared_order(only_vm), Outcome)


def test_ratio_within_goes_on_to_the_next_metric_until_both_settings_have_one() -> None:
    fn = R.ratio_within(("train_wall_s", "elapsed_s"), "mnist", "cvm", "cbm", 0.9, 1.1)
    t = table(
        row(CVM, [1.0] * 3, raw=[50.0] * 3, metric="train_wall_s", model="mnist"),
        row(CVM, [1.0] * 3, raw=[110.0] * 3, metric="elapsed_s", model="mnist"),
        row(CBM, [1.0] * 3, raw=[100.0] * 3, metric="elapsed_s", model="mnist"),
    )
    assert [n for n, *_ in judged(fn(t))] == [
        "nova-pci/docker / magnum-k8s/container-bm (elapsed_s)"
    ]
    keep = R.ratio_within(
        ("elapsed_s",),
        "mnist",
        "cvm",
        "cbm",
        0.9,
        1.1,
        keep=lambda t, a: t.settings[a] in ("cvm", "cbm"),
    )
    assert len(judged(keep(t))) == 1


def test_numa_remote_lower_reads_container_bandwidth_only_as_a_ratio_of_logs() -> None:
    kw: dict[str, Any] = {"model": "bandwidth"}
    pair = [
        row(
            CVM, [1.0] * 2, raw=[10.0, 10.0], variant="bandwidth_h2d_local_64", metric="gbps", **kw
        ),
        row(CVM, [1.0] * 2, raw=[8.0, 9.0], variant="bandwidth_h2d_remote_64", metric="gbps", **kw),
    ]
    got = R.numa_remote_lower(table(*pair))
    assert isinstance(got, list) and len(got) == 1 and got[0].est is not None
    assert got[0].est.scale == LOG and got[0].est.value == pytest.approx(math.sqrt(0.8 * 0.9))
    vm = [
        row(VM, r.judged_units(), raw=r.units, variant=r.key.variant, metric="gbps", **kw)
        for r in pair
    ]
    other = [
        row(CBM, r.judged_units(), raw=r.units, variant=r.key.variant, metric="latency", **kw)
        for r in pair
    ]
    model = [
        row(
            CBM, r.judged_units(), raw=r.units, variant=r.key.variant, metric="gbps", model="stream"
        )
        for r in pair
    ]
    for rows in (vm, other, model):
        assert R.numa_remote_lower(table(*rows)) == Outcome(
            MISSING,
            "no container bandwidth records pinned both local and remote "
            "(a single-NUMA-node host has no remote node)",
        )


@pytest.mark.parametrize(("study", "word"), [(True, "units"), (False, "runs")])
def test_the_ratio_checks_count_units_or_runs_as_their_rows_do(study: bool, word: str) -> None:
    fn = R.ratio_within(("elapsed_s",), "mnist", "cvm", "cbm", 0.9, 1.1)
    kw: dict[str, Any] = {"metric": "elapsed_s", "model": "mnist", "study": study}
    got = fn(table(row(CVM, [1.0] * 3, **kw), row(CBM, [1.0] * 3, **kw)))
    assert [w[4] for w in judged(got)] == [word]
    bw: dict[str, Any] = {"metric": "gbps", "model": "bandwidth", "study": study}
    numa = R.numa_remote_lower(
        table(
            row(CBM, [1.0] * 3, variant="bandwidth_h2d_local_64", **bw),
            row(CBM, [0.8] * 3, variant="bandwidth_h2d_remote_64", **bw),
        )
    )
    assert [w[4] for w in judged(numa)] == [word]
