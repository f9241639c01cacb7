"""Parquet record files: the columns ``gpulab export --format parquet`` writes, read back.

One row per record; a column per record field (``metrics``, ``params``, ``fingerprint``,
``setting_flags``, ``claims`` and ``step_times_s`` hold JSON text); a NULL is a field the
record does not carry. Parquet files from other writers are read when they have the same
column names (JSON text in VARCHAR columns is fine); the required fields of a record
(workloads.records.REQUIRED) must be columns.

Two readers of the same rows: :func:`read_records` (dicts, for report.load) and
:func:`line_sql` (the record as one line of JSON text inside DuckDB, so report.scan reads a
Parquet file through the same query as a JSON Lines file).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workloads.errors import InputError
from workloads.records import REQUIRED

COLUMNS: dict[str, str] = {
    "record_id": "VARCHAR",
    "run_id": "VARCHAR",
    "schema_version": "INTEGER",
    "kind": "VARCHAR",
    "suite": "VARCHAR",
    "experiment": "VARCHAR",
    "model": "VARCHAR",
    "scenario": "VARCHAR",
    "data": "VARCHAR",
    "batch_size": "BIGINT",
    "global_batch": "BIGINT",
    "warmup": "BIGINT",
    "steps": "BIGINT",
    "repeat": "BIGINT",
    "status": "VARCHAR",
    "error": "VARCHAR",
    "images_per_sec": "DOUBLE",
    "elapsed_s": "DOUBLE",
    "topology": "VARCHAR",
    "arm": "VARCHAR",
    "gpu_path": "VARCHAR",
    "exec_env": "VARCHAR",
    "virtualization": "VARCHAR",
    "sharing": "VARCHAR",
    "host": "VARCHAR",
    "started_at": "VARCHAR",
    "finished_at": "VARCHAR",
    "metrics": "JSON",
    "params": "JSON",
    "claims": "JSON",
    "setting_flags": "JSON",
    "step_times_s": "JSON",
    "fingerprint": "JSON",
}
JSON_COLUMNS = frozenset(k for k, v in COLUMNS.items() if v == "JSON")


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() == ".parquet"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _unreadable(path: Path, exc: Exception) -> InputError:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return InputError(f"record file {str(path)!r} is not a readable Parquet file: {first}")


def columns_of(con: Any, path: Path) -> list[tuple[str, str]]:
    """(name, DuckDB type) of the columns of ``path``; InputError naming the file when it is
    not a readable Parquet file or lacks a record's required columns."""
    import duckdb

    try:
        rows = con.execute(f"DESCRIBE SELECT * FROM read_parquet({_quote(str(path))})").fetchall()
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"record file {str(path)!r} is not a readable Parquet file: {first}"
        ) from None
    cols = [(str(r[0]), str(r[1])) for r in rows]
    missing = [k for k in REQUIRED if k not in {c for c, _ in cols}]
    if missing:
        raise InputError(
            f"record file {str(path)!r} is not a record export (gpulab export --format parquet): "
            f"no column {', '.join(missing)}"
        )
    return cols


def _value_sql(name: str, typ: str) -> str:
    col = _ident(name)
    if typ == "JSON" or (name in JSON_COLUMNS and typ == "VARCHAR"):
        return f"{col}::VARCHAR"  # JSON text as it is
    return f"to_json({col})::VARCHAR"


def line_sql(path: Path, cols: list[tuple[str, str]]) -> str:
    """SQL: ``filename`` and ``line`` (the record as JSON text, NULL columns left out) per row
    of ``path``, in the file's order."""
    parts = ", ".join(
        f"CASE WHEN {_ident(n)} IS NOT NULL THEN {_quote(json.dumps(n) + ':')} || "
        f"{_value_sql(n, t)} END"
        for n, t in cols
    )
    return (
        f"(SELECT {_quote(str(path))} AS filename, '{{' || concat_ws(',', {parts}) || '}}' AS line "
        f"FROM read_parquet({_quote(str(path))}))"
    )


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number from 1, record) per row of ``path``; InputError naming the file (and row)
    on a file that is not readable Parquet, lacks required columns or holds bad JSON text."""
    import duckdb

    con = duckdb.connect()
    try:
        cols = columns_of(con, path)
        json_cols = {n for n, t in cols if t == "JSON" or (n in JSON_COLUMNS and t == "VARCHAR")}
        select = ", ".join(
            f"{_ident(n)}::VARCHAR" if n in json_cols else _ident(n) for n, _ in cols
        )
        try:
            cur = con.execute(f"SELECT {select} FROM read_parquet({_quote(str(path))})")
            row_no = 0
            while batch := cur.fetchmany(10_000):
                for row in batch:
                    row_no += 1
                    rec: dict[str, Any] = {}
                    for (name, _), v in zip(cols, row, strict=True):
                        if v is None:
                            continue
                        if name in json_cols:
                            try:
                                v = json.loads(v)
                            except json.JSONDecodeError:
                                raise InputError(
                                    f"{path}:{row_no}: column {name!r} is not JSON text"
                                ) from None
                        rec[name] = v
                    yield row_no, rec
        except duckdb.Error as exc:
            raise _unreadable(path, exc) from None
    finally:
        con.close()
