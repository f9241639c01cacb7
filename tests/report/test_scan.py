"""The DuckDB path (report.scan) gives the Python path's table, left-out runs and notes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from report.build import _duckdb, _python
from report.table import Table
from tests.report import synth
from workloads.errors import InputError
from workloads.records import make_record


def _rows(t: Table) -> list[tuple[Any, ...]]:
    return [
        (r.key, r.arm, r.metric, r.summary, r.norm, r.norm_lo, r.norm_hi, r.image_sizes, r.steps)
        for r in t.rows
    ]


def _both(inputs: list[Any], baseline: str | None = None, pool: bool = False) -> tuple[Any, ...]:
    pa: list[str] = []
    pd: list[str] = []
    a = _python(inputs, baseline, pool, pa)
    b = _duckdb(inputs, baseline, pool, pd)
    return a, b, pa, pd


def _mixed(tmp_path: Path) -> list[Path]:
    """Every kind of record the report reads, over files, a torn line, a schema-1 file, a
    duplicate and a summary embedding records."""
    recs = synth.paper_like()
    closer, rest = recs[:200], recs[200:]
    a = synth.write(tmp_path / "in" / "a.jsonl", closer)
    with open(a, "a", encoding="utf-8") as fh:
        fh.write('{"schema_version": 2, "rec')  # torn last line: this file goes to Python
    synth.write(tmp_path / "in" / "sub" / "b.jsonl", rest + closer[:3])  # duplicates
    old = [dict(r) for r in synth.reps("local", "native", experiment="e", model="m", ips=5.0)]
    for r in old:
        r["schema_version"] = 1
        for k in ("gpu_path", "exec_env", "virtualization", "sharing", "setting_flags"):
            r.pop(k, None)
    synth.write(tmp_path / "in" / "old.jsonl", old)
    emb = synth.reps("local", "docker", experiment="e", model="m", ips=4.0, repeats=3)
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"results": {"records": emb}}), encoding="utf-8")
    return [tmp_path / "in", summary]


def test_duckdb_path_equals_python_path(tmp_path: Path) -> None:
    a, b, pa, pd = _both(_mixed(tmp_path))
    assert _rows(a.table) == _rows(b.table) and len(a.table.rows) > 100
    assert a.table.kinds == b.table.kinds and a.table.settings == b.table.settings
    assert a.table.setting_flags == b.table.setting_flags
    assert a.table.counts == b.table.counts and a.table.model_counts == b.table.model_counts
    assert (a.total, a.kept) == (b.total, b.kept)
    assert [(e.record_id, e.reason, e.detail) for e in a.excluded] == [
        (e.record_id, e.reason, e.detail) for e in b.excluded
    ]
    assert [(r["record_id"], bits) for r, bits in a.capped] == [
        (r["record_id"], bits) for r, bits in b.capped
    ]
    assert pa == pd and any("a.jsonl:201: skipped" in p for p in pd)
    assert any("old.jsonl: 5 record(s) carry no setting" in p for p in pd)
    assert sorted(map(repr, a.claim_lists)) != [] and sum(n for _, n in b.claim_lists) == b.total


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(surprise=1), r"r.jsonl:2: record has unknown field 'surprise'"),
        (lambda r: r.update(batch_size=1.5), r"r.jsonl:2: record field 'batch_size' has type"),
        (lambda r: r.update(schema_version=99), r"r.jsonl:2: schema_version 99 is not supported"),
        (lambda r: r.update(status="ok", error="boom"), r"r.jsonl:2: a record with status 'ok'"),
    ],
)
def test_duckdb_path_refuses_bad_records_naming_file_and_line(
    tmp_path: Path, edit: Any, message: str
) -> None:
    recs = synth.reps("local", "native", experiment="e", model="m", ips=1.0, repeats=3)
    edit(recs[1])
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    with pytest.raises(InputError, match=message):
        _duckdb([p], None, False, [])


def test_repetitions_of_two_runs_are_refused_unless_pooled(tmp_path: Path) -> None:
    """Records of two dates in one group and arm are not repeats of one another."""
    day1 = synth.reps("local", "native", experiment="e", model="m", ips=10.0, repeats=3)
    day2 = synth.reps("local", "native", experiment="e", model="m", ips=11.0, repeats=3)
    for r in day2:
        r["run_id"] = "20261108T0900Z-later"
    p = synth.write(tmp_path / "r.jsonl", day1 + day2)
    for load in (_duckdb, _python):
        with pytest.raises(InputError, match=r"not pooled: .* runs 'synthetic' and '20261108"):
            load([p], None, False, [])
        got = load([p], None, True, [])
        (row,) = [r for r in got.table.rows if r.metric == "images_per_sec"]
        assert row.summary.n == 6


def test_throttle_readings_beyond_plain_masks_go_through_python(tmp_path: Path) -> None:
    rec = make_record(
        run_id="synthetic", suite="s", experiment="e", model="m", images_per_sec=1.0,
        topology="local", arm="native",
        fingerprint={"nvml_sampler": {"throttle_reasons": ["hw_thermal_slowdown"]}},
    )  # fmt: skip
    ok = synth.reps("local", "native", experiment="e", model="m", ips=1.0, repeats=2)
    p = synth.write(tmp_path / "r.jsonl", [rec, *ok])
    got = _duckdb([p], None, False, [])
    assert [(e.record_id, e.reason) for e in got.excluded] == [(rec["record_id"], "throttled")]
    assert got.kept == 2


def test_empty_nvml_sample_list_reads_as_no_throttle_on_both_paths(tmp_path: Path) -> None:
    """A GPU run whose sampler took no sample (``params.nvml_samples: []``) is kept, on the
    DuckDB path as on the Python one (an empty list once stopped the whole report)."""
    recs = synth.reps("local", "native", experiment="e", model="m", ips=2.0, repeats=3)
    for r in recs:
        r["params"] = {**r.get("params", {}), "nvml_samples": []}
    p = synth.write(tmp_path / "r.jsonl", recs)
    a, b, _, _ = _both([p])
    assert b.kept == a.kept == 3
    assert not b.excluded
