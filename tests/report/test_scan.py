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


def _run(fp: dict[str, Any], samples: Any = None, ips: float = 1.0) -> dict[str, Any]:
    rec = make_record(
        run_id="synthetic", suite="s", experiment="e", model="m", images_per_sec=ips,
        topology="local", arm="native", fingerprint=fp,
    )  # fmt: skip
    if samples is not None:
        rec["params"] = {**rec.get("params", {}), "nvml_samples": samples}
    return rec


def test_fingerprint_readings_are_decoded_once_per_fingerprint_as_python_does(
    tmp_path: Path,
) -> None:
    """The DuckDB path decodes a fingerprint's throttle readings once per distinct
    fingerprint and ORs them into each record's sample bits; the Python path decodes each
    record whole. A record's own sample list replaces the fingerprint's
    ``_params_nvml_samples`` (report.exclusions.throttle_bits), so one fingerprint can leave a
    record throttled and its neighbour kept."""
    hot = {"host": "a", "_params_nvml_samples": [{"throttle_mask": 0x08}]}
    thermal = {"host": "b", "nvml_sampler": {"throttle_reasons": ["hw_thermal_slowdown"]}}
    capped = {"host": "c", "nvml": [{"clocks_event_reasons": 0x04}]}
    recs = [
        _run(hot),  # the fingerprint's own samples: hw_slowdown
        _run(hot, samples=[{"throttle_mask": 0}]),  # the record's samples stand in: kept
        _run(hot, samples=[{"throttle_mask": 0x20}]),  # sw_thermal from the record
        _run(thermal, samples=[{"throttle_mask": 0}]),  # the fingerprint's sampler: out
        _run(capped, samples=[{"samples": [{"throttle_mask": 0}]}]),  # capped, kept
        _run({"host": "d"}, samples=[{"gpus": [{"throttle_reasons": ["hw_power_brake"]}]}]),
        *synth.reps("local", "native", experiment="e", model="m", ips=1.0, repeats=2),
    ]
    p = synth.write(tmp_path / "r.jsonl", recs)
    a, b, _, _ = _both([p])
    out = [(e.record_id, e.reason, e.detail) for e in a.excluded]
    assert [(e.record_id, e.reason, e.detail) for e in b.excluded] == out
    assert out == [
        (recs[0]["record_id"], "throttled", "hw_slowdown"),
        (recs[2]["record_id"], "throttled", "sw_thermal_slowdown"),
        (recs[3]["record_id"], "throttled", "hw_thermal_slowdown"),
        (recs[5]["record_id"], "throttled", "hw_power_brake"),
    ]
    assert [(r["record_id"], bits) for r, bits in b.capped] == [(recs[4]["record_id"], 0x04)]
    assert [(r["record_id"], bits) for r, bits in a.capped] == [(recs[4]["record_id"], 0x04)]
    assert b.kept == a.kept == 4


def test_records_whose_keys_come_in_another_order_read_the_same(tmp_path: Path) -> None:
    """The DuckDB path takes a field by its place in the first record's key order where it
    sits there; records with their keys in other orders (another writer, a hand edit) are
    searched by key and give the Python path's table."""
    recs = synth.paper_like()[:120]
    shuffled = []
    for i, r in enumerate(recs):
        keys = list(r)
        keys = keys[i % len(keys) :] + keys[: i % len(keys)]  # rotated: every place differs
        shuffled.append({k: r[k] for k in (keys if i else list(r))})
    p = synth.write(tmp_path / "r.jsonl", shuffled)
    a, b, _, _ = _both([p])
    assert _rows(a.table) == _rows(b.table) and len(a.table.rows) > 10
    assert (a.total, a.kept) == (b.total, b.kept) == (len(recs), b.kept)
    assert a.table.settings == b.table.settings
