"""Parquet input: the checks report.scan makes without looking at every value.

report.parquet.source_sql lists only the columns that are not a record field as the row's
possibly unknown keys (a file with the exporter's columns gets none), and
report.parquet.fixed_types gives VARCHAR, integer and BOOLEAN columns their JSON type
without reading the text. These tests write Parquet files as another writer would (DuckDB
COPY, nothing mocked) and check that the streaming report (engine ``duckdb``) refuses or
accepts each exactly as the Python reader (engine ``python``) does, with the same message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from report import build_report
from report.export import export
from tests.report import synth
from workloads.errors import InputError


def _rewrite(tmp_path: Path, name: str, select: str) -> Path:
    """The exporter's Parquet of a few records, rewritten by ``SELECT {select} FROM t``."""
    import duckdb

    ok = tmp_path / "ok.parquet"
    if not ok.exists():
        recs = synth.paper_like()[:4]
        export([synth.write(tmp_path / "r.jsonl", recs)], "parquet", ok, [])
    out = tmp_path / name
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT {select} FROM (SELECT *, row_number() OVER () AS rn "
        f"FROM read_parquet('{ok}')) t) TO '{out}' (FORMAT parquet)"
    )
    con.close()
    return out


def _both(src: Path, tmp_path: Path) -> tuple[str, str]:
    """The error of each engine on ``src`` ('' where it reports)."""
    out: list[str] = []
    for engine in ("duckdb", "python"):
        try:
            build_report([src], tmp_path / f"rep-{engine}", engine=engine)
            out.append("")
        except InputError as exc:
            out.append(str(exc))
    return out[0], out[1]


def test_an_extra_column_with_a_value_is_an_unknown_field(tmp_path: Path) -> None:
    src = _rewrite(
        tmp_path, "extra.parquet", "* EXCLUDE (rn), CASE WHEN rn = 3 THEN 'x' END AS colour"
    )
    fast, slow = _both(src, tmp_path)
    assert "unknown field 'colour'" in slow
    assert fast == slow


@pytest.mark.integration
def test_an_extra_column_of_nulls_is_no_field(tmp_path: Path) -> None:
    src = _rewrite(tmp_path, "nulls.parquet", "* EXCLUDE (rn), NULL::VARCHAR AS colour")
    assert _both(src, tmp_path) == ("", "")


@pytest.mark.parametrize(
    ("name", "replace", "field"),
    [
        ("batch-text", "CAST(batch_size AS VARCHAR) AS batch_size", "batch_size"),
        ("run-int", "CASE WHEN rn = 2 THEN 7 END::BIGINT AS run_id", "run_id"),
        ("status-bool", "true AS status", "status"),
        ("steps-bool", "CASE WHEN rn = 4 THEN false END AS steps", "steps"),
        # typed columns read as they are (report.parquet.typed_columns): a float where an
        # int belongs is still a float
        ("batch-double", "batch_size::DOUBLE AS batch_size", "batch_size"),
        ("warmup-float", "CASE WHEN rn = 3 THEN 2.5 END::FLOAT AS warmup", "warmup"),
    ],
)
def test_a_column_of_the_wrong_type_is_refused_as_the_python_reader_does(
    tmp_path: Path, name: str, replace: str, field: str
) -> None:
    src = _rewrite(tmp_path, f"{name}.parquet", f"* EXCLUDE (rn) REPLACE ({replace})")
    fast, slow = _both(src, tmp_path)
    assert field in slow
    assert fast == slow


def test_integer_and_text_columns_of_another_writer_are_read(tmp_path: Path) -> None:
    """INTEGER instead of BIGINT, and a VARCHAR error column: the same report."""
    src = _rewrite(
        tmp_path,
        "narrow.parquet",
        "* EXCLUDE (rn) REPLACE (batch_size::INTEGER AS batch_size, steps::SMALLINT AS steps)",
    )
    fast = build_report([src], tmp_path / "fast")
    slow = build_report([src], tmp_path / "slow", engine="python")
    assert fast.csv.read_text() == slow.csv.read_text()


def test_typed_columns_of_another_writer_read_as_the_python_reader_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The strings, ints and floats the scan reads from typed columns as they are
    (report.parquet.typed_columns), not through their JSON text: a FLOAT throughput, a
    SMALLINT schema version, text with escapes, an empty error: the same report, read by
    DuckDB itself (its fallback to the Python reader, report.scan.read_planned, fails the
    test: a value read wrong there would otherwise be caught by a check and read again)."""
    import report.scan

    def no_fallback(*_: object) -> None:
        raise AssertionError("a good Parquet file went to the Python reader")

    src = _rewrite(
        tmp_path,
        "typed.parquet",
        "* EXCLUDE (rn) REPLACE (images_per_sec::FLOAT AS images_per_sec, "
        "schema_version::SMALLINT AS schema_version, "
        "CASE WHEN rn = 2 THEN model || ' \\ \"q\" é' ELSE model END AS model, "
        "CASE WHEN rn = 3 THEN '' ELSE error END AS error)",
    )
    with monkeypatch.context() as m:
        m.setattr(report.scan, "read_planned", no_fallback)
        fast = build_report([src], tmp_path / "fast")
    slow = build_report([src], tmp_path / "slow", engine="python")
    assert ' \\ ""q"" é' in slow.csv.read_text(encoding="utf-8")  # CSV doubles quotes
    assert fast.csv.read_text() == slow.csv.read_text()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_non_finite_float_column_value_is_read_as_the_python_reader_reads_it(
    tmp_path: Path, value: str
) -> None:
    src = _rewrite(
        tmp_path,
        f"{value}.parquet",
        f"* EXCLUDE (rn) REPLACE (CASE WHEN rn = 2 THEN '{value}'::DOUBLE "
        "ELSE images_per_sec END AS images_per_sec)",
    )
    fast, slow = _both(src, tmp_path)
    assert fast == slow
    if not slow:
        assert (tmp_path / "rep-duckdb").exists()
        fast_csv = next((tmp_path / "rep-duckdb").rglob("*.csv")).read_text()
        slow_csv = next((tmp_path / "rep-python").rglob("*.csv")).read_text()
        assert fast_csv == slow_csv
