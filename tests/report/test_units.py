"""The unit of replication (report.units): a study repeat, or a run; pairing by repeat."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from report.claims import verdicts
from report.mapping import Arm
from report.published import load_published
from report.scan import scan
from report.table import build_table, collect
from report.units import slots, unit_of
from tests.report import synth
from workloads.errors import InputError

BM = Arm("ironic-bm", "native")
CBM = Arm("magnum-k8s", "container-bm")
PUB = load_published()


def _study(rec: dict[str, Any], repeat: Any, name: Any = "closer2018") -> dict[str, Any]:
    rec = copy.deepcopy(rec)
    rec["params"]["study"] = {"name": name, "arm": "x", "repeat": repeat}
    return rec


def _distributed(ratio: float, units: list[float], within: int = 1) -> list[dict[str, Any]]:
    """Container on BM at ``ratio`` of BM, distributed_synthetic InceptionV3/ResNet-50, one
    study unit per entry of ``units`` (a factor both arms of that repeat share), ``within``
    back-to-back repeats each (equal)."""
    recs = []
    for topo, arm, f in (("ironic-bm", "native", 1.0), ("magnum-k8s", "container-bm", ratio)):
        for model in ("inception_v3", "resnet50"):
            (one,) = synth.reps(
                topo,
                arm,
                experiment="distributed_synthetic",
                scenario="distributed",
                model=model,
                ips=50.0 * f,
                repeats=1,
                noise=0.0,
            )
            for u, uf in enumerate(units, start=1):
                for w in range(within):
                    rec = _study(one, u)
                    rec["record_id"] = f"{topo}-{arm}-{model}-{u}-{w}"
                    rec["repeat"] = w
                    rec["images_per_sec"] = one["images_per_sec"] * uf
                    recs.append(rec)
    return recs


def _cbm_rows(recs: list[dict[str, Any]]) -> list[Any]:
    table = build_table(recs, BM)
    return [r for r in table.rows if r.arm == CBM and r.metric == "images_per_sec"]


def test_within_unit_repeats_are_averaged_into_one_value_per_unit() -> None:
    """Ten back-to-back repeats in one study repeat are one unit: no interval, and the
    claim's check says how many units it has and needs (they are not ten repetitions)."""
    rows = _cbm_rows(_distributed(0.80, [1.0], within=10))
    for r in rows:
        assert r.summary.n == 10 and r.summary.n_units == 1
        assert r.est is not None and r.est.n == 1 and r.norm_lo is None
    v = {x.claim: x for x in verdicts(build_table(_distributed(0.80, [1.0], 10), BM), PUB, [])}
    (out,) = [o for c, o in v["closer2018/distributed_synthetic"].results if "on BM" in c.what]
    assert out.status == "inconclusive"
    assert "n=1 units (a verdict needs" in out.measured


def test_arms_of_one_study_repeat_are_paired() -> None:
    """A slow repeat slows both arms: paired per repeat the ratio is exact (0.8 in every
    repeat); the same values paired across repeats would give a wide interval."""
    spread = [0.90, 1.00, 1.10, 0.95, 1.05]
    for r in _cbm_rows(_distributed(0.80, spread)):
        assert r.est is not None and r.est.n == 5
        assert r.norm == pytest.approx(0.80)
        assert r.norm_hi - r.norm_lo == pytest.approx(0.0, abs=1e-9)
    shuffled = _distributed(0.80, spread)
    for rec in shuffled:  # the container arm's repeats renumbered: 1->2->...->5->1
        if rec["arm"] == "container-bm":
            rec["params"]["study"]["repeat"] = rec["params"]["study"]["repeat"] % 5 + 1
    for r in _cbm_rows(shuffled):
        assert r.norm_hi - r.norm_lo > 0.1


def test_a_run_is_one_unit_outside_a_study() -> None:
    """Records of `gpulab run` (no params.study): each run is a unit, and runs of two arms
    pair by their order (run ids begin with their start time)."""
    recs = []
    for rec in _distributed(0.80, [0.98, 1.0, 1.02]):
        rec = copy.deepcopy(rec)
        u = rec["params"].pop("study")["repeat"]
        rec["run_id"] = f"2026110{u}T0900Z-{rec['arm']}"
        recs.append(rec)
    rows = _cbm_rows(recs)
    assert rows and all(r.est is not None and r.est.n == 3 and not r.study for r in rows)
    assert all(r.norm == pytest.approx(0.80) for r in rows)
    one_run = [dict(r, run_id="20261101T0900Z-a") for r in recs]
    assert all(r.est is not None and r.est.n == 1 for r in _cbm_rows(one_run))


def test_unit_keys_and_slots() -> None:
    rec = {"run_id": "r1", "params": {"study": {"name": "s", "repeat": 3}}}
    assert unit_of(rec) == "study:s#3"
    assert unit_of({"run_id": "r1"}) == "run:r1"
    assert unit_of({"run_id": "r1", "params": {"study": {"name": "s", "repeat": True}}}) == (
        "run:r1"
    )
    assert slots(["run:b", "run:a", "study:s#2"]) == {
        "run:a": "run#1",
        "run:b": "run#2",
        "study:s#2": "study:s#2",
    }


ODD_STUDIES = [
    {"name": "s", "repeat": 2},
    {"name": 'q"uote\\d', "repeat": 7},
    {"name": None, "repeat": 1},
    {"repeat": 4},
    {"name": "s", "repeat": True},
    {"name": "s", "repeat": 2.0},
    {"name": "s", "repeat": -1},
    {"name": "s", "repeat": 2**40},
    {"name": "s", "repeat": "3"},
    "not a mapping",
]


def test_the_streaming_scan_gives_the_units_python_gives(tmp_path: Path) -> None:
    """report.scan_sql's unit key is report.units.unit_of's, record for record."""
    (base,) = synth.reps("local", "native", experiment="e", model="alexnet", ips=9.0, repeats=1)
    recs = []
    for i, study in enumerate([*ODD_STUDIES, None]):
        rec = copy.deepcopy(base)
        rec["record_id"], rec["run_id"] = f"r{i}", f"run-{i % 3}"
        rec["images_per_sec"] = 10.0 + i
        if study is None:
            rec["params"].pop("study")
        else:
            rec["params"]["study"] = study
        recs.append(rec)
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    want = collect(recs).units
    got = scan([path]).collected.units
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in want.items()}
    assert {u for per in want.values() for u in per} >= {
        "study:s#2",
        'study:q"uote\\d#7',
        "study:#1",
        "study:#4",
        "run:run-1",
    }


def _with_sync(k_native: int | None, k_docker: int | None) -> list[dict[str, Any]]:
    recs = []
    for arm, k in (("native", k_native), ("docker", k_docker)):
        for rec in synth.reps("local", arm, experiment="e", model="resnet50", ips=100.0):
            if k is not None:
                rec["sync_every"] = k
            recs.append(rec)
    return recs


def test_records_with_different_steps_per_sync_do_not_pair() -> None:
    """sync_every (K, the runner's host synchronizations) is a pairing field; a record that
    does not state it (an older runner) is not compared."""
    with pytest.raises(InputError, match="sync every differs"):
        build_table(_with_sync(1, 50), Arm("local", "native"))
    assert build_table(_with_sync(50, 50), Arm("local", "native")).rows
    assert build_table(_with_sync(None, 50), Arm("local", "native")).rows


def test_the_scan_pairs_on_steps_per_sync_too(tmp_path: Path, monkeypatch: Any) -> None:
    """The same through report.scan."""
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _with_sync(1, 50)), encoding="utf-8")
    from report.build import build_report

    with pytest.raises(InputError, match="sync every differs"):
        build_report([path], tmp_path / "out")
