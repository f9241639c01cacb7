"""report.checks, the claim checks' building blocks, through its public functions.

Rows are built directly (GroupKey, Arm, summaries of known values) so each case states the
numbers it judges.
"""

from __future__ import annotations

from report.checks import (
    MISSING,
    Outcome,
    extreme_within,
    fmt,
    missing,
    per_arm,
    pick,
    value,
    within,
)
from report.mapping import Arm
from report.stats import summarize
from report.table import GroupKey, Row, Table

BM = Arm("ironic-bm", "native")
VM = Arm("nova-pci", "native")
CBM = Arm("magnum-k8s", "container-bm")


def row(
    arm: Arm,
    *,
    metric: str = "images_per_sec",
    model: str = "resnet50",
    experiment: str = "single_synthetic-resnet50",
    suite: str = "closer2018",
    batch: int = 32,
    variant: str = "",
    norm: float | None = 1.0,
    values: tuple[float, ...] = (100.0, 100.0, 100.0),
    setting: str = "vm",
) -> Row:
    key = GroupKey(suite, experiment, model, "single", "synthetic", batch, variant)
    return Row(
        key=key,
        arm=arm,
        setting=setting,
        metric=metric,
        summary=summarize(values, f"{arm.label}|{model}|{metric}"),
        norm=norm,
        baseline_median=100.0,
    )


def table(*rows: Row) -> Table:
    return Table(rows=list(rows), baseline=BM, settings={BM: "bm", VM: "vm", CBM: "cbm"})


def test_value_is_the_normalized_median_or_the_median_of_a_relative_metric() -> None:
    assert value(row(VM, norm=0.9, values=(50.0, 50.0, 50.0))) == 0.9
    rel = row(VM, metric="completion_time_ratio", norm=None, values=(1.2, 1.3, 1.4))
    assert value(rel) == 1.3
    assert value(row(VM, metric="elapsed_degradation", norm=7.0, values=(0.1,) * 3)) == 0.1


def test_missing_is_an_outcome_that_says_why() -> None:
    assert missing("no records") == Outcome(MISSING, "no records") and MISSING == "missing"


def test_pick_filters_on_every_criterion() -> None:
    rows = [
        row(BM),
        row(VM, model="alexnet", experiment="single_synthetic-alexnet", batch=512),
        row(VM, model="resnet50"),
        row(VM, model="resnet50", metric="elapsed_s"),
        row(VM, model="vgg16", experiment="other-vgg16", norm=None),
        row(CBM, model="resnet50", setting="cbm", variant="fp16"),
    ]
    t = table(*rows)
    got = pick(t, "images_per_sec")
    assert {(r.arm, r.key.model) for r in got} == {
        (VM, "alexnet"),
        (VM, "resnet50"),
        (CBM, "resnet50"),
    }
    assert pick(t, "images_per_sec", include_baseline=True)[0].arm == BM
    assert [r.key.model for r in pick(t, "images_per_sec", models=["alexnet"])] == ["alexnet"]
    assert pick(t, "images_per_sec", experiment="single_synthetic") == got
    assert pick(t, "images_per_sec", experiment=["nothing"]) == []
    assert [r.arm for r in pick(t, "images_per_sec", settings=["cbm"])] == [CBM]
    assert [r.key.batch_size for r in pick(t, "images_per_sec", batch=512)] == [512]
    fp16 = pick(t, "images_per_sec", model_match=lambda s: s.endswith("fp16"))
    assert [r.arm for r in fp16] == [CBM]
    assert pick(t, "elapsed_s")[0].metric == "elapsed_s"


def test_pick_prefers_the_suite_then_the_papers_batch_then_more_repetitions() -> None:
    small = row(VM, batch=64, values=(1.0,) * 5, norm=0.5)
    paper = row(VM, batch=32, values=(1.0,) * 3, norm=0.6)
    other_suite = row(VM, suite="seed", batch=64, values=(1.0,) * 3, norm=0.7)
    t = table(small, paper, other_suite)
    assert pick(t, "images_per_sec") == [paper]  # resnet50's paper batch is 32
    assert pick(t, "images_per_sec", suite_pref="seed") == [other_suite]
    # no paper batch for the model: the most repetitions win
    a = row(VM, model="m", experiment="e-m", batch=8, values=(1.0,) * 3)
    b = row(VM, model="m", experiment="e-m", batch=16, values=(1.0,) * 6)
    assert pick(table(a, b), "images_per_sec") == [b]


def test_fmt_shows_arm_model_variant_and_the_numbers() -> None:
    r = row(VM, norm=0.91234, values=(91.0, 91.2, 91.4), variant="fp16")
    assert fmt(r) == "nova-pci/native resnet50 [fp16] 0.912x (91.2 vs 100)"
    rel = row(VM, metric="aggregate_throughput_ratio", norm=None, values=(1.5,) * 3)
    assert fmt(rel) == "nova-pci/native resnet50 1.500"


def test_within_bounds_tolerance_and_open_sides() -> None:
    r = row(VM, norm=0.90)
    assert within([], 0.8, 1.0, 0.0, "none").status == "missing"
    assert within([], 0.8, 1.0, 0.0, "none").measured == "none"
    assert within([r], 0.8, 1.0, 0.0, "x") == Outcome("pass", fmt(r))
    assert within([r], 0.95, 1.0, 0.0, "x").status == "fail"
    assert within([r], 0.95, 1.0, 0.05, "x").status == "pass"  # 0.90 >= 0.95 - 0.05
    assert within([r], 0.8, 0.85, 0.05, "x").status == "pass"  # 0.90 <= 0.85 + 0.05
    assert within([r], 0.8, 0.85, 0.04, "x").status == "fail"
    assert within([r], None, 0.95, 0.0, "x").status == "pass"
    assert within([r], 0.85, None, 0.0, "x").status == "pass"
    assert within([r], None, 0.5, 0.0, "x").status == "fail"
    assert within([r], 1.5, None, 0.0, "x").status == "fail"


def test_within_lists_the_rows_outside_first_and_at_most_eight() -> None:
    ok = row(VM, norm=0.9)
    bad = row(CBM, norm=0.2, setting="cbm")
    out = within([ok, bad], 0.8, 1.0, 0.0, "x")
    assert out == Outcome("fail", "outside: " + fmt(bad))
    many = [row(VM, model=f"m{i}", norm=0.9) for i in range(9)]
    text = within(many, 0.8, 1.0, 0.0, "x").measured
    assert text == "; ".join(fmt(r) for r in many[:8]) + " ..."
    assert within(many[:8], 0.8, 1.0, 0.0, "x").measured == "; ".join(fmt(r) for r in many[:8])


def test_per_arm_and_the_extreme_of_each_arm() -> None:
    v1, v2 = row(VM, model="a", norm=0.7), row(VM, model="b", norm=0.95)
    c1 = row(CBM, model="a", norm=0.99, setting="cbm")
    assert per_arm([v1, c1, v2]) == {VM.label: [v1, v2], CBM.label: [c1]}
    assert extreme_within([], True, 0, 1, 0, "none") == missing("none")
    # the max per arm: 0.95 and 0.99, both in [0.9, 1.0]
    assert extreme_within([v1, v2, c1], True, 0.9, 1.0, 0.0, "x").status == "pass"
    # the min per arm: 0.7 is below 0.9
    out = extreme_within([v1, v2, c1], False, 0.9, 1.0, 0.0, "x")
    assert out == Outcome("fail", "outside: " + fmt(v1))


def test_bounds_are_inclusive_and_the_extreme_is_held_to_both() -> None:
    at_lo = row(VM, norm=0.5)
    assert within([at_lo], 0.5, 1.0, 0.0, "x").status == "pass"
    assert within([row(VM, norm=1.0)], 0.5, 1.0, 0.0, "x").status == "pass"
    high = [row(VM, model="a", norm=0.95), row(VM, model="b", norm=1.2)]
    out = extreme_within(high, True, 0.9, 1.0, 0.0, "x")
    assert out == Outcome("fail", "outside: " + fmt(high[1]))


def test_pick_orders_rows_by_arm_and_model_whatever_the_table_order() -> None:
    rows = [row(VM, model="vgg16", experiment="e-vgg16"), row(CBM, model="alexnet", setting="cbm"),
            row(VM, model="alexnet", experiment="e-alexnet")]  # fmt: skip
    got = pick(table(*rows), "images_per_sec")
    assert [(r.arm.label, r.key.model) for r in got] == [
        ("magnum-k8s/container-bm", "alexnet"),
        ("nova-pci/native", "alexnet"),
        ("nova-pci/native", "vgg16"),
    ]
