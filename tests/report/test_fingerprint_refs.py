"""Schema-3 records name their fingerprint by reference (workloads.fingerprints): both report
engines put it back from the record that carries it, across files, through Parquet too, and
a reference that no record carries is one note, not an error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from infra.cli import main
from report.build import _duckdb, _python, build_report
from report.environment import compare
from report.table import Table
from tests.report import synth
from workloads.fingerprints import REF
from workloads.records import RecordWriter, make_record

THERMAL = {"host": "hot", "nvml_sampler": {"throttle_reasons": ["hw_thermal_slowdown"]}}


def _rows(t: Table) -> list[tuple[Any, ...]]:
    return [(r.key, r.arm, r.metric, r.summary, r.image_sizes, r.steps) for r in t.rows]


def _env(t: Table) -> list[Any]:
    arms = sorted(t.records_per_arm, key=str)
    return [(e.field, e.values) for e in compare(arms, t.records_per_arm)]


def _written(path: Path, records: list[dict[str, Any]]) -> Path:
    """``records`` appended by the runner's writer (fingerprints once, then references)."""
    with RecordWriter(path) as w:
        for rec in records:
            w.write(rec)
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _hosts(tmp_path: Path, recs: list[dict[str, Any]], inline: bool = False) -> Path:
    """The paper-like records as two hosts write them (one file per arm and host, one writer
    each), fetched into one results directory; ``inline``: each line a whole record, as
    before schema 3."""
    root = tmp_path / ("inline" if inline else "results")
    files: dict[Path, list[dict[str, Any]]] = {}
    for i, rec in enumerate(recs):
        path = root / f"host-{i % 2}" / f"{rec['topology']}-{rec['arm']}.jsonl"
        files.setdefault(path, []).append(rec)
    for path, part in files.items():
        if inline:
            synth.write(path, part)
        else:
            _written(path, part)
    if not inline:
        lines = [r for p in files for r in _lines(p)]
        assert sum("fingerprint" in r for r in lines) < sum(REF in r for r in lines) / 4
    return root


def test_the_writer_keeps_each_fingerprint_once_per_file(tmp_path: Path) -> None:
    recs = synth.paper_like()
    p = _written(tmp_path / "r.jsonl", recs)
    lines = _lines(p)
    carriers = [r for r in lines if "fingerprint" in r]
    distinct = {json.dumps(r["fingerprint"], sort_keys=True) for r in recs if "fingerprint" in r}
    assert len({r.get(REF) for r in lines} - {None}) == len(carriers) == len(distinct) > 1
    assert sum(REF in r for r in lines) == sum("fingerprint" in r for r in recs)
    assert all(r[REF].startswith("sha256:") for r in lines if REF in r)
    inline = synth.write(tmp_path / "inline.jsonl", recs)
    assert p.stat().st_size < 0.6 * inline.stat().st_size  # small synthetic fingerprints


def test_records_naming_their_fingerprint_give_the_table_of_records_carrying_it(
    tmp_path: Path,
) -> None:
    """Files of two hosts in one directory: both engines give the table and the environment
    rows of the same records written with the fingerprint in every record."""
    recs = synth.paper_like()
    merged, inline = _hosts(tmp_path, recs), _hosts(tmp_path, recs, inline=True)
    ref_py, ref_db = _python([merged], None, False, []), _duckdb([merged], None, False, [])
    old = _duckdb([inline], None, False, [])
    assert _rows(ref_py.table) == _rows(ref_db.table) == _rows(old.table)
    assert len(old.table.rows) > 100
    assert _env(ref_py.table) == _env(ref_db.table) == _env(old.table)
    assert [e.record_id for e in ref_db.excluded] == [e.record_id for e in old.excluded]


def _split(tmp_path: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    """a.jsonl carries the throttled host's fingerprint; b.jsonl only names it (its lines
    were cut out of a longer file)."""
    runs = [
        make_record(run_id="synthetic", suite="s", experiment="e", model="m",
                    images_per_sec=1.0 + i, topology="local", arm="native", fingerprint=THERMAL,
                    **synth.setting_fields("local", "native"))
        for i in range(4)
    ]  # fmt: skip
    whole = _written(tmp_path / "whole.jsonl", runs)
    text = whole.read_text(encoding="utf-8").splitlines(keepends=True)
    a, b = tmp_path / "in" / "a.jsonl", tmp_path / "in" / "b.jsonl"
    a.parent.mkdir()
    a.write_text("".join(text[:2]), encoding="utf-8")
    b.write_text("".join(text[2:]), encoding="utf-8")
    assert "fingerprint" not in _lines(b)[0]
    ok = synth.reps("local", "native", experiment="e", model="m", ips=1.0, repeats=3)
    _written(tmp_path / "in" / "c.jsonl", ok)
    return a, b, runs


def test_a_fingerprint_carried_by_another_file_is_put_back(tmp_path: Path) -> None:
    """b.jsonl's records get the fingerprint a.jsonl carries: its throttle readings leave
    them out on both engines."""
    _, _, runs = _split(tmp_path)
    inputs = [tmp_path / "in"]
    pa: list[str] = []
    pd: list[str] = []
    a, b = _python(inputs, None, False, pa), _duckdb(inputs, None, False, pd)
    want = [(r["record_id"], "throttled", "hw_thermal_slowdown") for r in runs]
    assert [(e.record_id, e.reason, e.detail) for e in a.excluded] == want
    assert [(e.record_id, e.reason, e.detail) for e in b.excluded] == want
    assert pa == pd == []


def test_a_reference_no_record_carries_is_one_note_on_both_engines(tmp_path: Path) -> None:
    """b.jsonl read without a.jsonl: its records are read without a fingerprint (so nothing
    says they were throttled) and one note names the file; the report is still made."""
    _, b, _ = _split(tmp_path)
    c = tmp_path / "in" / "c.jsonl"
    pa: list[str] = []
    pd: list[str] = []
    a, d = _python([b, c], None, False, pa), _duckdb([b, c], None, False, pd)
    assert (a.kept, a.excluded) == (d.kept, d.excluded) == (5, [])
    assert (
        pa
        == pd
        == [
            f"{b}: 2 record(s) name a fingerprint (fingerprint_ref) that no record of the inputs "
            "carries; read without it (the file that holds it in full is not among the inputs: "
            "read the whole results directory)"
        ]
    )
    res = build_report([b, c], tmp_path / "out", pool=True)
    assert any("name a fingerprint" in p for p in res.problems)
    assert res.table.rows


@pytest.mark.integration
def test_the_export_inlines_the_fingerprint_in_every_row(tmp_path: Path) -> None:
    """A Parquet row stands alone: each carries the fingerprint and its reference; the
    report reads the export as it reads the records."""
    recs = synth.paper_like()
    merged = _hosts(tmp_path, recs)
    out = tmp_path / "r.parquet"
    assert main(["export", str(merged), "--format", "parquet", "--out", str(out)]) == 0
    con = duckdb.connect()
    n, with_fp, with_ref, refs = con.execute(
        "SELECT count(*), count(fingerprint), count(fingerprint_ref), "
        "count(DISTINCT fingerprint_ref) FROM read_parquet(?)",
        [str(out)],
    ).fetchone()
    assert n == len(recs) and with_fp == with_ref == sum("fingerprint" in r for r in recs)
    assert refs > 1
    single = tmp_path / "alone"
    single.mkdir()
    shutil.copy(out, single / "r.parquet")
    a, b = _python([single], None, False, []), _duckdb([single], None, False, [])
    jsonl = _duckdb([merged], None, False, [])
    assert _rows(a.table) == _rows(b.table) == _rows(jsonl.table)
    assert _env(a.table) == _env(b.table) == _env(jsonl.table)
