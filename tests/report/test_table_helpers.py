"""report.table's record-to-row helpers, pinned where mutation testing found them loose: group
keys, image sizes, experiment names, metric extraction, arms and lookups."""

from __future__ import annotations

import math

import pytest

from report.mapping import Arm
from report.table import (
    GroupKey,
    arm_of,
    build_table,
    collect,
    experiment_base,
    higher_is_better,
    image_size,
    is_relative,
    key_of,
    metric_values,
)
from tests.report import synth
from workloads.errors import InputError

REC = {
    "suite": "closer2018",
    "experiment": "single_synthetic-resnet50",
    "model": "resnet50",
    "scenario": "single",
    "data": "synthetic",
    "batch_size": 32,
}


def test_key_of_takes_every_field_and_the_variant() -> None:
    assert key_of(dict(REC, params={"variant": "fp16"})) == GroupKey(
        "closer2018", "single_synthetic-resnet50", "resnet50", "single", "synthetic", 32, "fp16"
    )
    bare = {k: v for k, v in REC.items() if k not in ("data", "batch_size")}
    assert key_of(bare) == GroupKey(
        "closer2018", "single_synthetic-resnet50", "resnet50", "single", "", 0, ""
    )
    assert key_of(dict(bare, data=None, batch_size=None, params=None)).data == ""
    assert key_of(dict(REC, params={"variant": None})).variant == ""
    assert key_of(dict(REC, params={"variant": 3})).variant == "3"


def test_sharing_records_group_by_their_job_count_unless_a_variant_is_set() -> None:
    sharing = dict(REC, scenario="sharing", params={"jobs": 4})
    assert key_of(sharing).variant == "4 jobs"
    assert key_of(dict(sharing, params={"jobs": 4, "variant": "mps"})).variant == "mps"
    assert key_of(dict(sharing, params={"jobs": "4"})).variant == ""
    assert key_of(dict(REC, params={"jobs": 4})).variant == ""  # not the sharing scenario


def test_group_label() -> None:
    k = key_of(dict(REC, params={"variant": "fp16"}))
    assert k.label() == "resnet50 b32 fp16"
    assert key_of(dict(REC, batch_size=0)).label() == "resnet50"


def test_image_size_from_params_or_the_input_shape() -> None:
    assert image_size({"params": {"image_size": 224}}) == 224
    assert image_size({"params": {"image_size": True, "input_shape": [299, 299, 3]}}) == 299
    assert image_size({"params": {"image_size": "224"}}) is None
    assert image_size({"params": {"input_shape": [28, 28, 1]}}) == 28
    assert image_size({"params": {"input_shape": []}}) is None
    assert image_size({"params": {"input_shape": ["a"]}}) is None
    assert image_size({"params": {"input_shape": "224"}}) is None
    assert image_size({"params": None}) is None
    assert image_size({"params": ["not", "a", "dict"]}) is None
    assert image_size({}) is None


def test_experiment_base_drops_the_model_and_the_batch() -> None:
    assert experiment_base("single_synthetic-alexnet", "alexnet") == "single_synthetic"
    assert experiment_base("shared_alexnet_b32", "alexnet") == "shared"
    assert experiment_base("shared_alexnet-b64", "alexnet") == "shared"
    assert experiment_base("fig6", "alexnet") == "fig6"
    assert experiment_base("alexnet_b32x", "alexnet") == "alexnet_b32x"
    assert experiment_base("single-resnet50", "alexnet") == "single-resnet50"


def test_which_metrics_are_relative_and_which_are_better_higher() -> None:
    assert is_relative("completion_time_ratio") and is_relative("aggregate_throughput_ratio")
    assert is_relative("x_ratio") and is_relative("elapsed_degradation")
    assert not is_relative("images_per_sec") and not is_relative("ratio_of_things")
    for m in ("images_per_sec", "kernel.gflops_per_sec", "tflops", "gbps", "throughput"):
        assert higher_is_better(m), m
    assert not higher_is_better("elapsed_s")
    assert not higher_is_better("images_per_sec_degradation")


def test_arm_of_defaults() -> None:
    assert arm_of({"topology": "nova-pci", "arm": "docker"}) == Arm("nova-pci", "docker")
    assert arm_of({}) == Arm("unknown", "native")
    assert arm_of({"topology": "", "arm": ""}) == Arm("unknown", "native")


def test_metric_values_take_finite_numbers_and_derive_degradations() -> None:
    rec = {
        "images_per_sec": 100,
        "elapsed_s": True,
        "metrics": {
            "alone_elapsed_s": 10.0,
            "shared_elapsed_s": 15.0,
            "alone_images_per_sec": 200.0,
            "shared_images_per_sec": 150.0,
            "bad": math.nan,
            "text": "1",
        },
    }
    assert metric_values(rec) == {
        "images_per_sec": 100.0,
        "elapsed_alone_s": 10.0,
        "elapsed_shared_s": 15.0,
        "images_per_sec_alone": 200.0,
        "images_per_sec_shared": 150.0,
        "elapsed_degradation": 0.5,
        "images_per_sec_degradation": 0.25,
    }
    given = {"metrics": {"elapsed_alone_s": 10.0, "elapsed_shared_s": 30.0,
                         "elapsed_increase": 0.7}}  # fmt: skip
    assert metric_values(given)["elapsed_degradation"] == 0.7  # recorded: not derived
    zero = {"metrics": {"elapsed_alone_s": 0.0, "elapsed_shared_s": 3.0,
                        "images_per_sec_alone": 0.0, "images_per_sec_shared": 1.0}}  # fmt: skip
    assert "elapsed_degradation" not in metric_values(zero)
    assert "images_per_sec_degradation" not in metric_values(zero)
    assert metric_values({"elapsed_s": math.inf, "metrics": None}) == {}


def test_collect_counts_records_per_arm_and_model_and_keeps_shapes() -> None:
    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=100.0, repeats=3)
    recs += synth.reps("local", "docker", experiment="e", model="alexnet", ips=90.0, repeats=2)
    col = collect(recs)
    native, docker = Arm("local", "native"), Arm("local", "docker")
    assert col.counts == {native: 3, docker: 2}
    assert col.model_counts == {"resnet50": 3, "alexnet": 2}
    assert [len(v) for v in col.reps.values()] == [3, 2]
    key = key_of(recs[0])
    assert col.values[(key, native, "images_per_sec")] == [r["images_per_sec"] for r in recs[:3]]
    assert col.kinds[key] == recs[0]["kind"]


def test_per_shape_metrics_become_variants_and_tables_find_them() -> None:
    recs = synth.reps("local", "native", experiment="k", model="gru", ips=1.0, repeats=1)
    for r in recs:
        r["metrics"] = {"h512.time_per_call_s": 0.5, "h1024.time_per_call_s": 0.9}
        r["params"] = dict(r.get("params") or {}, variant="fp32")
    table = build_table(recs, Arm("local", "native"))
    rows = table.find(metric="time_per_call_s")
    assert sorted(r.key.variant for r in rows) == ["fp32/h1024", "fp32/h512"]
    (h512,) = table.find(metric="time_per_call_s", variant="fp32/h512")
    assert h512.summary.median == 0.5
    assert table.find(metric="time_per_call_s", variant="nothing") == []
    assert table.experiments() == [(recs[0]["suite"], "k")]


def test_collect_keeps_image_sizes_steps_and_kinds_per_group_and_arm() -> None:
    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=100.0, repeats=2)
    recs[0] = dict(recs[0], steps=50, params={"image_size": 224})
    recs[1] = dict(recs[1], steps=True, params={"input_shape": [112, 112, 3]})
    col = collect(recs)
    native = Arm("local", "native")
    key = key_of(recs[0])
    assert col.shapes[(key, native)] == ({224, 112}, {50})
    assert col.kinds == {key: recs[0]["kind"]}
    nested = dict(recs[0], metrics={"a.b.time_per_call_s": 1.0})
    col = collect([nested])
    assert any(k.variant == "a.b" and m == "time_per_call_s" for k, _, m in col.values)


def test_find_by_arm_setting_and_metric() -> None:
    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=100.0)
    recs += synth.reps("local", "docker", experiment="e", model="resnet50", ips=80.0)
    table = build_table(recs, Arm("local", "native"))
    docker = table.find(arm=Arm("local", "docker"), metric="images_per_sec")
    assert [r.arm.arm for r in docker] == ["docker"]
    assert {r.setting for r in table.find(setting="cbm")} == {"cbm"}
    assert {r.arm.arm for r in table.find(setting="cbm")} == {"docker"}
    assert table.find(arm=Arm("local", "docker"), setting="bm") == []


def test_finished_table_carries_baseline_counts_kinds_and_intervals() -> None:
    base, arm = Arm("local", "native"), Arm("local", "docker")
    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=100.0, repeats=3)
    recs += synth.reps("local", "docker", experiment="e", model="resnet50", ips=80.0, repeats=3)
    recs += synth.reps("local", "native", experiment="z", model="vgg16", ips=0.0, repeats=3)
    recs += synth.reps("local", "docker", experiment="z", model="vgg16", ips=5.0, repeats=3)
    for r in recs:
        r["params"] = dict(r.get("params") or {}, image_size=64)
    table = build_table(recs, base)
    assert table.baseline == base
    assert table.counts == {base: 6, arm: 6} and table.model_counts == {"resnet50": 6, "vgg16": 6}
    assert [len(v) for v in table.records_per_arm.values()] == [6, 6]
    assert set(table.kinds.values()) == {recs[0]["kind"]}
    (b,) = table.find(arm=base, metric="images_per_sec", model="resnet50")
    (d,) = table.find(arm=arm, metric="images_per_sec", model="resnet50")
    assert (b.norm, b.norm_lo, b.norm_hi, b.baseline_median) == (1.0, 1.0, 1.0, 100.0)
    # over units: the geometric mean of the per-unit ratios (synth varies the units)
    assert d.norm == pytest.approx(0.8, rel=5e-3) and d.baseline_median == 100.0
    assert d.norm_lo is not None and d.norm_hi is not None and d.norm_lo <= 0.8 <= d.norm_hi
    assert d.image_sizes == (64,)
    # a baseline median of 0 gives no ratio, and the rows after it are still normalized
    (z,) = table.find(arm=arm, metric="images_per_sec", model="vgg16")
    assert z.norm is None and z.baseline_median is None
    assert [r.key.experiment for r in table.rows] == sorted(r.key.experiment for r in table.rows)


def test_rows_come_in_field_order_with_batch_sizes_as_numbers() -> None:
    """Rows follow their group's fields, then arm and metric, whatever order the records came
    in; a batch of 8 comes before one of 16 (as numbers, not as text)."""
    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=9.0, batch=16)
    recs += synth.reps("local", "native", experiment="e", model="resnet50", ips=9.0, batch=8)
    recs += synth.reps("local", "native", experiment="a", model="resnet50", ips=9.0, batch=64)
    rows = build_table(recs, Arm("local", "native")).find(metric="images_per_sec")
    assert [(r.key.experiment, r.key.batch_size) for r in rows] == [("a", 64), ("e", 8), ("e", 16)]


def test_rows_after_a_relative_metric_or_a_missing_baseline_are_still_normalized() -> None:
    """Group "a" (first in order) has a relative metric and a baseline median of 0, group "b"
    no baseline rows at all: neither stops the normalization of group "e" after them."""
    base, arm = Arm("local", "native"), Arm("local", "docker")
    recs = synth.reps("local", "native", experiment="a", model="resnet50", ips=0.0,
                      metrics={"images_per_sec_degradation": 0.2})  # fmt: skip
    recs += synth.reps("local", "docker", experiment="a", model="resnet50", ips=5.0)
    recs += synth.reps("local", "docker", experiment="b", model="resnet50", ips=5.0)
    recs += synth.reps("local", "native", experiment="e", model="resnet50", ips=100.0)
    recs += synth.reps("local", "docker", experiment="e", model="resnet50", ips=80.0)
    table = build_table(recs, base)
    order = [(r.key.experiment, r.metric) for r in table.rows]
    assert order.index(("a", "images_per_sec_degradation")) < order.index(("e", "images_per_sec"))
    (deg,) = table.find(arm=base, metric="images_per_sec_degradation")
    assert deg.norm is None and deg.baseline_median is None
    (b,) = table.find(arm=arm, metric="images_per_sec", model="resnet50", experiment="b")
    assert b.norm is None
    (e,) = table.find(arm=arm, metric="images_per_sec", experiment="e")
    assert e.norm == 0.8 and e.baseline_median == 100.0


def test_recorded_degradation_is_kept_not_derived() -> None:
    rec = {"metrics": {"images_per_sec_alone": 100.0, "images_per_sec_shared": 50.0,
                       "images_per_sec_degradation": 0.4}}  # fmt: skip
    assert metric_values(rec)["images_per_sec_degradation"] == 0.4


def test_table_keeps_each_arms_records_and_setting_flags() -> None:
    base, arm = Arm("local", "native"), Arm("local", "docker")
    native = synth.reps("local", "native", experiment="e", model="resnet50", ips=10.0, repeats=3)
    docker = synth.reps("local", "docker", experiment="e", model="resnet50", ips=9.0, repeats=3)
    for r in docker:
        r["setting_flags"] = ["image digest unknown"]
    table = build_table(native + docker, base)
    assert table.records_per_arm == {base: native, arm: docker}
    assert table.setting_flags == {arm: ["image digest unknown"]}


def test_rows_without_shapes_have_empty_sizes_and_steps() -> None:
    """Collected values whose group has no shapes (the scan path fills them separately)."""
    from report.table import finish

    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=10.0, repeats=3)
    col = collect(recs)
    col.shapes = {}
    (row,) = finish(col, Arm("local", "native")).find(metric="images_per_sec")
    assert (row.image_sizes, row.steps) == ((), ())


def test_repeats_of_two_runs_pool_by_default_and_are_refused_without_pool() -> None:
    base = Arm("local", "native")
    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=10.0, repeats=4)
    for i, r in enumerate(recs):
        r["run_id"] = f"run-{i % 2}"
    assert build_table(recs, base).find(metric="images_per_sec")[0].summary.n == 4
    assert build_table(recs, base, pool=True).find(metric="images_per_sec")[0].summary.n == 4
    with pytest.raises(InputError, match="run"):
        build_table(recs, base, pool=False)


def test_an_arm_whose_settings_differ_from_the_baseline_is_refused() -> None:
    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=10.0)
    recs += synth.reps("local", "docker", experiment="e", model="resnet50", ips=9.0)
    for r in recs:
        r["steps"] = 50 if r["arm"] == "native" else 20
    with pytest.raises(InputError, match="steps"):
        build_table(recs, Arm("local", "native"))
