"""Parquet record files as report input: the files `gpulab export --format parquet` writes.

Nothing is mocked: the records are written by the product's exporter (report.export through
DuckDB) and read by `gpulab report` / `gpulab compare` run as a user runs them
(`.venv/bin/gpulab` in a subprocess), so the whole path of a Parquet file is exercised.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from report import build_report
from report.export import export
from report.load import load_records
from tests.report import synth
from workloads.errors import InputError

GPULAB = Path(sys.executable).with_name("gpulab")


def gpulab(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(GPULAB), *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the JSONL, the same records exported to Parquet by `gpulab export`)."""
    d = tmp_path_factory.mktemp("pq")
    jsonl = synth.write(d / "paper-like.jsonl", synth.paper_like())
    proc = gpulab("export", jsonl, "--format", "parquet", "--out", d / "paper-like.parquet", cwd=d)
    assert proc.returncode == 0, proc.stderr
    return jsonl, d / "paper-like.parquet"


def report_json(inp: Path, out: Path) -> dict[str, Any]:
    proc = gpulab("report", inp, "--out-dir", out, "--json", cwd=out.parent)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)["data"]  # the envelope's (docs/cli.md)
    return data


@pytest.mark.integration
def test_cli_report_on_parquet_equals_report_on_jsonl(
    exported: tuple[Path, Path], tmp_path: Path
) -> None:
    jsonl, pq = exported
    a = report_json(jsonl, tmp_path / "from-jsonl")
    b = report_json(pq, tmp_path / "from-parquet")
    assert a["verdicts"] and a["verdicts"] == b["verdicts"]
    assert a["excluded"] and a["excluded"] == b["excluded"]
    assert a["banner"] == b["banner"]
    csv_a = (tmp_path / "from-jsonl" / Path(a["csv"]).name).read_text()
    csv_b = (tmp_path / "from-parquet" / Path(b["csv"]).name).read_text()
    assert csv_a.count("\n") > 10 and csv_a == csv_b
    # the problems name the input file, which differs; there are as many
    assert len(a["problems"]) == len(b["problems"])


@pytest.mark.integration
def test_directory_with_parquet_and_python_engine_agree(
    exported: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A results directory holding a Parquet file is read (by both engines, same table).

    The DuckDB engine must read a good Parquet file itself: its fallback to the Python reader
    (report.scan.read_planned) is replaced by a function that fails the test."""
    import report.scan

    def no_fallback(*_: object) -> None:
        raise AssertionError("a good Parquet file went to the Python reader")

    _, pq = exported
    d = tmp_path / "results" / "run1"
    d.mkdir(parents=True)
    shutil.copy(pq, d / "r.parquet")
    with monkeypatch.context() as m:
        m.setattr(report.scan, "read_planned", no_fallback)
        fast = build_report([tmp_path / "results"], tmp_path / "a", engine="duckdb")
    slow = build_report([tmp_path / "results"], tmp_path / "b", engine="python")
    assert fast.csv.read_text() == slow.csv.read_text()
    assert [v.verdict for v in fast.verdicts] == [v.verdict for v in slow.verdicts]
    assert len(load_records([d], [])) == len(synth.paper_like())


def test_parquet_round_trip_gives_the_records(exported: tuple[Path, Path]) -> None:
    jsonl, pq = exported
    a = {r["record_id"]: r for r in load_records([jsonl], [])}
    b = {r["record_id"]: r for r in load_records([pq], [])}
    assert a.keys() == b.keys()
    for rid, rec in a.items():
        want = {k: v for k, v in rec.items() if v is not None}
        for k in ("images_per_sec", "elapsed_s"):  # the exporter writes DOUBLE columns
            if k in want:
                want[k] = float(want[k])
        assert b[rid] == want


def test_cli_compare_reads_parquet(exported: tuple[Path, Path], tmp_path: Path) -> None:
    jsonl, pq = exported
    proc = gpulab("compare", jsonl, pq, "--pool", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)


def _bad_parquet(tmp_path: Path, pq: Path, kind: str) -> Path:
    bad = tmp_path / f"{kind}.parquet"
    if kind == "truncated":
        data = pq.read_bytes()
        bad.write_bytes(data[: len(data) // 2])
    else:  # a Parquet file of another table: no record columns
        import duckdb

        con = duckdb.connect()
        con.execute(f"COPY (SELECT 1 AS a, 'x' AS b) TO '{bad}' (FORMAT parquet)")
        con.close()
    return bad


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("truncated", "is not a readable Parquet file: "),
        (
            "wrong-columns",
            "is not a record export (gpulab export --format parquet): no column schema_version, "
            "record_id, run_id, kind, suite, experiment, model, scenario, status",
        ),
    ],
)
def test_cli_bad_parquet_one_line_exit_2(
    exported: tuple[Path, Path], tmp_path: Path, kind: str, message: str
) -> None:
    bad = _bad_parquet(tmp_path, exported[1], kind)
    proc = gpulab("report", bad, "--out-dir", tmp_path / "rep", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert f"record file {str(bad)!r} {message}" in lines[0]
    with pytest.raises(InputError, match="record file"):
        load_records([bad], [])


def test_bad_json_text_in_a_parquet_column_names_file_and_row(tmp_path: Path) -> None:
    """A `params` column that is not JSON text: the report names the file and row."""
    import duckdb

    recs = synth.paper_like()[:3]
    export([synth.write(tmp_path / "r.jsonl", recs)], "parquet", tmp_path / "ok.parquet", [])
    bad = tmp_path / "bad.parquet"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * REPLACE (CASE WHEN row_number() OVER () = 2 THEN '{{oops' ELSE "
        f"params::VARCHAR END AS params) FROM read_parquet('{tmp_path / 'ok.parquet'}')) "
        f"TO '{bad}' (FORMAT parquet)"
    )
    con.close()
    with pytest.raises(InputError, match=rf"^{bad}:2: column 'params' is not JSON text$"):
        build_report([bad], tmp_path / "rep")


@pytest.mark.integration
def test_jsonl_and_parquet_mixed_give_the_table_of_all_jsonl(tmp_path: Path) -> None:
    """Half the records as JSON Lines, half exported to Parquet: the same table (the same
    environments, the same repetitions in the same order) as all of them as JSON Lines."""
    recs = synth.paper_like()
    half = len(recs) // 2
    a = synth.write(tmp_path / "a.jsonl", recs[:half])
    b_src = synth.write(tmp_path / "src" / "b.jsonl", recs[half:])
    export([b_src], "parquet", tmp_path / "b.parquet", [])
    whole = build_report([synth.write(tmp_path / "all.jsonl", recs)], tmp_path / "r1")
    mixed = build_report([a, tmp_path / "b.parquet"], tmp_path / "r2")
    assert whole.csv.read_text() == mixed.csv.read_text()
    assert whole.banner == mixed.banner


def test_a_timestamp_column_is_refused_by_field_name(tmp_path: Path) -> None:
    """A Parquet file from another writer with `started_at` as a TIMESTAMP column: the
    record's field must be a string, so the report names the file, row and field."""
    import duckdb

    recs = synth.paper_like()[:2]
    export([synth.write(tmp_path / "r.jsonl", recs)], "parquet", tmp_path / "ok.parquet", [])
    bad = tmp_path / "ts.parquet"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * REPLACE (TIMESTAMP '2026-11-01 00:00:00' AS started_at) "
        f"FROM read_parquet('{tmp_path / 'ok.parquet'}')) TO '{bad}' (FORMAT parquet)"
    )
    con.close()
    with pytest.raises(InputError, match=rf"^{bad}:1: record field 'started_at' has type"):
        build_report([bad], tmp_path / "rep")
