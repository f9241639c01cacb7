"""report.table's units, normalization and derived metrics: the timed windows' degradation,
per-unit means and slots, the ratios a claim judges, the fallback to the medians' ratio, and
tables collected without unit keys."""

from __future__ import annotations

import math
from typing import Any

import pytest

from report.intervals import estimate
from report.mapping import Arm
from report.table import (
    Collected,
    Row,
    build_table,
    collect,
    finish,
    image_size,
    key_of,
    metric_values,
)
from tests.report import synth

BASE, OTHER = Arm("local", "native"), Arm("local", "docker")


def _records(arm: str, units: dict[str, list[float]]) -> list[dict[str, Any]]:
    """Records of ``local/<arm>`` with these images/s values, grouped in units: a key
    ``study:<name>#<repeat>`` is that study repeat, any other key a run id (no study)."""
    n = sum(len(vs) for vs in units.values())
    recs = synth.reps("local", arm, experiment="e", model="resnet50", ips=1.0, repeats=n)
    it = iter(recs)
    for unit, values in units.items():
        for v in values:
            rec = next(it)
            rec["images_per_sec"] = v
            params = {k: p for k, p in rec["params"].items() if k != "study"}
            if unit.startswith("study:"):
                name, _, repeat = unit.removeprefix("study:").partition("#")
                params["study"] = {"name": name, "repeat": int(repeat)}
            else:
                rec["run_id"] = unit
            rec["params"] = params
    return recs


def _row(rows: list[Row]) -> Row:
    (row,) = rows
    return row


def test_timed_degradation_is_derived_from_the_timed_windows() -> None:
    """timed_degradation = timed_wall_shared_s / timed_wall_alone_s - 1 (negative when the
    shared window is the shorter one)."""
    slower = {"metrics": {"timed_wall_alone_s": 10.0, "timed_wall_shared_s": 12.5}}
    assert metric_values(slower)["timed_degradation"] == pytest.approx(0.25)
    faster = {"metrics": {"timed_wall_alone_s": 10.0, "timed_wall_shared_s": 8.0}}
    assert metric_values(faster)["timed_degradation"] == pytest.approx(-0.2)


def test_recorded_timed_degradation_is_kept_not_derived() -> None:
    """The shared scenario writes its timed windows' degradation as elapsed_degradation: read
    as timed_degradation, it wins over the one the windows would give."""
    rec = {"metrics": {"timed_wall_alone_s": 10.0, "timed_wall_shared_s": 30.0,
                       "elapsed_degradation": 0.1}}  # fmt: skip
    assert metric_values(rec)["timed_degradation"] == 0.1


@pytest.mark.parametrize(
    "windows",
    [
        {"timed_wall_alone_s": 10.0},
        {"timed_wall_shared_s": 3.0},
        {"timed_wall_alone_s": 0.0, "timed_wall_shared_s": 3.0},
    ],
)
def test_no_timed_degradation_without_both_windows(windows: dict[str, float]) -> None:
    """One window alone, or an alone window of 0, gives no timed_degradation (and no error)."""
    out = metric_values({"metrics": windows})
    assert "timed_degradation" not in out
    assert out == windows


def test_image_size_of_a_one_dimensional_input_shape() -> None:
    """An input shape of one entry gives that entry as the size, without failing."""
    assert image_size({"params": {"input_shape": [64]}}) == 64


def test_units_average_their_repetitions_and_runs_pair_by_their_order() -> None:
    """Without study repeats each run is a unit; a unit's value is the mean of its
    repetitions; two arms' runs pair by their order (run#1, run#2) whatever their ids, and
    the summary's interval is the t interval over the units."""
    recs = _records("native", {"r1": [100.0, 102.0], "r2": [110.0, 112.0]})
    recs += _records("docker", {"r3": [80.0, 82.0], "r4": [99.0, 99.0]})
    table = build_table(recs, BASE)
    base = _row(table.find(arm=BASE, metric="images_per_sec"))
    other = _row(table.find(arm=OTHER, metric="images_per_sec"))
    assert base.units == {"run#1": 101.0, "run#2": 111.0}
    assert other.units == {"run#1": 81.0, "run#2": 99.0}
    assert other.norm_units == pytest.approx({"run#1": 81.0 / 101.0, "run#2": 99.0 / 111.0})
    assert other.norm == pytest.approx(math.sqrt(81.0 / 101.0 * 99.0 / 111.0))
    assert base.study is False and other.study is False
    assert (other.summary.n, other.summary.n_units) == (4, 2)
    est = estimate([81.0, 99.0])
    assert est is not None
    assert (other.summary.ci_lo, other.summary.ci_hi) == est.interval()


def test_study_repeats_are_units_and_pair_by_repeat() -> None:
    """Records of study repeats are study units (row.study); each repeat's records average
    into one value, paired with the baseline's value of the same repeat."""
    recs = _records("native", {"study:s#1": [100.0, 100.0], "study:s#2": [120.0, 120.0]})
    recs += _records("docker", {"study:s#1": [90.0, 70.0], "study:s#2": [108.0, 108.0]})
    table = build_table(recs, BASE)
    other = _row(table.find(arm=OTHER, metric="images_per_sec"))
    assert other.study is True
    assert other.units == {"study:s#1": 80.0, "study:s#2": 108.0}
    assert other.norm_units == pytest.approx({"study:s#1": 0.8, "study:s#2": 0.9})
    assert other.summary.n_units == 2


def test_claims_judge_the_ratio_itself_or_the_value_over_the_baseline() -> None:
    """judged_units: a relative metric's own per-unit values; an absolute metric's per-unit
    ratios to the baseline (all 1 for the baseline itself). A relative metric's estimate is
    the mean over its units."""
    native = _records("native", {"study:s#1": [100.0], "study:s#2": [110.0],
                                 "study:s#3": [120.0]})  # fmt: skip
    docker = _records("docker", {"study:s#1": [80.0], "study:s#2": [99.0],
                                 "study:s#3": [96.0]})  # fmt: skip
    for rec, deg in zip(docker, (0.1, 0.2, 0.3), strict=True):
        rec["metrics"] = {"images_per_sec_degradation": deg}
    table = build_table(native + docker, BASE)
    base = _row(table.find(arm=BASE, metric="images_per_sec"))
    other = _row(table.find(arm=OTHER, metric="images_per_sec"))
    deg_row = _row(table.find(arm=OTHER, metric="images_per_sec_degradation"))
    slots = ["study:s#1", "study:s#2", "study:s#3"]
    assert base.judged_units() == dict.fromkeys(slots, 1.0)
    assert other.judged_units() == pytest.approx(dict(zip(slots, (0.8, 0.9, 0.8), strict=True)))
    assert deg_row.judged_units() == pytest.approx(dict(zip(slots, (0.1, 0.2, 0.3), strict=True)))
    assert deg_row.norm is None
    assert deg_row.est is not None and deg_row.est.n == 3
    assert deg_row.est.value == pytest.approx(0.2)
    lo, hi = deg_row.est.lo, deg_row.est.hi
    assert lo is not None and hi is not None and lo < 0.2 < hi


def test_without_slots_in_common_the_norm_is_the_medians_ratio() -> None:
    """Arms of two studies share no slot: the norm is the ratio of the medians, with no
    interval and no per-unit ratios to judge."""
    recs = _records("native", {"study:a#1": [100.0], "study:a#2": [100.0]})
    recs += _records("docker", {"study:b#1": [80.0], "study:b#2": [80.0]})
    other = _row(build_table(recs, BASE).find(arm=OTHER, metric="images_per_sec"))
    assert other.norm == pytest.approx(0.8) and other.baseline_median == 100.0
    assert (other.norm_lo, other.norm_hi, other.est) == (None, None, None)
    assert other.norm_units == {} and other.judged_units() == {}


def test_a_unit_value_of_zero_falls_back_to_the_medians_ratio() -> None:
    """A unit whose ratio is 0 has no log: no per-unit ratios are kept, the norm is the ratio
    of the medians."""
    recs = _records("native", {"study:s#1": [100.0], "study:s#2": [100.0],
                               "study:s#3": [100.0]})  # fmt: skip
    recs += _records("docker", {"study:s#1": [0.0], "study:s#2": [80.0],
                                "study:s#3": [80.0]})  # fmt: skip
    other = _row(build_table(recs, BASE).find(arm=OTHER, metric="images_per_sec"))
    assert other.norm == pytest.approx(0.8)
    assert (other.norm_lo, other.norm_hi, other.est) == (None, None, None)
    assert other.norm_units == {} and other.judged_units() == {}


def test_collected_records_keep_the_unit_they_are_given() -> None:
    """Collected.add with a unit key (report.scan's) files the values under that unit, not the
    one the record itself would give."""
    recs = _records("native", {"r1": [10.0, 12.0, 20.0]})
    col = Collected(arm_set=collect(recs).arm_set)
    key = key_of(recs[0])
    for rec, unit in zip(recs, ("study:s#1", "study:s#1", "study:s#2"), strict=True):
        col.add(key, BASE, rec, unit=unit)
    row = _row(finish(col, BASE).find(metric="images_per_sec"))
    assert row.study is True
    assert row.units == {"study:s#1": 11.0, "study:s#2": 20.0}


def test_values_collected_without_units_form_one_unit() -> None:
    """Values with no unit keys (Collected.units left empty) still make rows: each row's
    values are one unit (their mean), and the arms are normalized on it."""
    recs = _records("native", {"r1": [100.0, 110.0, 120.0]})
    recs += _records("docker", {"r2": [80.0, 88.0, 96.0]})
    col = collect(recs)
    col.units = {}
    table = finish(col, BASE)
    base = _row(table.find(arm=BASE, metric="images_per_sec"))
    other = _row(table.find(arm=OTHER, metric="images_per_sec"))
    assert list(base.units.values()) == [110.0] and list(other.units.values()) == [88.0]
    assert all(isinstance(slot, str) for slot in [*base.units, *other.units])  # slot names
    assert (other.summary.n, other.summary.n_units) == (3, 1)
    assert other.norm == pytest.approx(0.8)
    assert (other.norm_lo, other.norm_hi) == (None, None)
