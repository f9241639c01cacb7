"""Parquet record files: the columns ``gpulab export --format parquet`` writes, read back.

One row per record; a column per record field (``metrics``, ``params``, ``fingerprint``,
``setting_flags``, ``claims``, ``step_times_s`` and ``block_times_s`` hold JSON text); a NULL
is a field the record does not carry. Parquet files from other writers are read when they
have the same column names (JSON text in VARCHAR columns is fine); the required fields of a
record (workloads.records.REQUIRED) must be columns.

Two readers of the same rows: :func:`read_records` (dicts, for report.load) and
:func:`source_sql` (inside DuckDB, each field as the JSON text report.scan_sql extracts from
a JSON line, so report.scan reads a Parquet file through the same query and checks as a JSON
Lines file, without writing or parsing the records as JSON; a string, integer or float
column is read as it is, not through its JSON text: :func:`typed_columns`).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from report.scan_sql import TOP
from workloads.errors import InputError
from workloads.json_bounded import MAX_JSON_DEPTH, JSONDepthError, loads_json
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
    "fingerprint_ref": "VARCHAR",
    "sync_every": "BIGINT",
    "startup_s": "DOUBLE",
    "first_step_s": "DOUBLE",
    "timed_s": "DOUBLE",
    "block_times_s": "JSON",
}
JSON_COLUMNS = frozenset(k for k, v in COLUMNS.items() if v == "JSON")


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() == ".parquet"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _unreadable(path: Path, exc: Exception, name: Path | None = None) -> InputError:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if name is not None:
        first = first.replace(str(name), str(path))
    return InputError(f"record file {str(path)!r} is not a readable Parquet file: {first}")


def columns_of(con: Any, path: Path, shown: str | None = None) -> list[tuple[str, str]]:
    """(name, DuckDB type) of the columns of ``path``; InputError naming the file (``shown``:
    the name to give, where DuckDB reads it through a link) when it is not a readable
    Parquet file or lacks a record's required columns."""
    import duckdb

    name = shown if shown is not None else str(path)
    try:
        rows = con.execute(f"DESCRIBE SELECT * FROM read_parquet({_quote(str(path))})").fetchall()
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if shown is not None:
            first = first.replace(str(path), shown)
        raise InputError(f"record file {name!r} is not a readable Parquet file: {first}") from None
    cols = [(str(r[0]), str(r[1])) for r in rows]
    missing = [k for k in REQUIRED if k not in {c for c, _ in cols}]
    if missing:
        raise InputError(
            f"record file {name!r} is not a record export (gpulab export --format parquet): "
            f"no column {', '.join(missing)}"
        )
    return cols


SCALAR_TYPES = frozenset(
    {"VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
     "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE"}
)  # fmt: skip


def fast_readable(cols: list[tuple[str, str]]) -> bool:
    """Whether report.scan can read these columns in DuckDB: JSON or JSON text where the
    record holds objects and arrays, plain strings, numbers and booleans elsewhere (any other
    type, a timestamp say, goes to the Python reader, which names the field)."""
    return all(
        n != "filename"  # the name DuckDB gives the column of file names
        and (t == "JSON" or (t == "VARCHAR" if n in JSON_COLUMNS else t in SCALAR_TYPES))
        for n, t in cols
    )


INT_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
     "UINTEGER", "UBIGINT"}
)  # fmt: skip


def fixed_types(cols: list[tuple[str, str]]) -> dict[str, str]:
    """The JSON type (report.scan_sql.signature's letter) of each column whose values
    ``source_sql`` always gives as one JSON type: ``to_json`` of a VARCHAR is a string, of an
    integer an int, of a BOOLEAN a bool. JSON columns and floats are looked at per value."""
    out: dict[str, str] = {}
    for n, t in cols:
        if n in JSON_COLUMNS or t == "JSON":
            continue
        if t == "VARCHAR":
            out[n] = "s"
        elif t in INT_TYPES:
            out[n] = "i"
        elif t == "BOOLEAN":
            out[n] = "b"
    return out


FLOAT_TYPES = frozenset({"FLOAT", "DOUBLE"})


def typed_columns(cols: list[tuple[str, str]]) -> dict[str, str]:
    """Of the top-level record fields (report.scan_sql.TOP) held in a typed column, the one
    letter of the column's type: ``s`` VARCHAR, ``i`` an integer type, ``f`` FLOAT or DOUBLE.
    :func:`source_sql` gives their values as they are (``t_*``), so report.scan_sql reads a
    string, an int or a number there without writing and parsing JSON text."""
    top = set(TOP)
    out: dict[str, str] = {}
    for n, t in cols:
        if n not in top or n in JSON_COLUMNS:
            continue
        if t == "VARCHAR":
            out[n] = "s"
        elif t in INT_TYPES:
            out[n] = "i"
        elif t in FLOAT_TYPES:
            out[n] = "f"
    return out


def _value_sql(name: str, typ: str) -> str:
    """SQL: the column as JSON text, as json_extract gives a record's field (NULL: absent)."""
    col = _ident(name)
    if name in JSON_COLUMNS or typ == "JSON":
        return f"{col}::VARCHAR"  # JSON text as it is (checked by source_sql)
    return f"to_json({col})::VARCHAR"


def source_sql(files: list[Path], cols: list[tuple[str, str]], paths: tuple[str, ...]) -> str:
    """SQL: per row of ``files`` (all with the columns ``cols``), in the files' order,
    ``filename``, ``k`` (the record's fields that are no top level of ``paths``: the other
    columns that are not NULL), ``j_1`` ... ``j_N`` (the JSON text of each of ``paths``,
    as report.scan_sql's ``json_extract`` of a JSON line gives it) and, for each top-level
    path in a column of :func:`typed_columns`, ``t_<i>`` beside its ``j_<i>``: the column's
    value as it is (what report.scan_sql reads there; a ``j_*`` no expression reads is not
    computed). Only the JSON columns are parsed; a row where one of them is not JSON gets
    NULL in every ``j_*`` and ``t_*`` (like a line that is not JSON), so its file goes to
    the Python reader."""
    have = dict(cols)
    typed = typed_columns(cols)
    nested: dict[str, list[str]] = {}
    for p in paths:
        head, _, rest = p.partition(".")
        if rest and head in have:
            nested.setdefault(head, []).append(rest)
    outs: list[str] = []
    for i, p in enumerate(paths, start=1):
        head, _, rest = p.partition(".")
        if head not in have:
            e = "NULL::VARCHAR"
        elif not rest:
            e = f"_v_{head}"
        else:
            e = f"_n_{head}[{nested[head].index(rest) + 1}]"
        outs.append(f"CASE WHEN _ok THEN {e} END AS j_{i}")
        if p in typed:
            outs.append(f"CASE WHEN _ok THEN {_ident(p)} END AS t_{i}")
    json_cols = [n for n, t in cols if n in JSON_COLUMNS or t == "JSON"]
    valid = " AND ".join(f"(_v_{n} IS NULL OR json_valid(_v_{n}))" for n in json_cols) or "true"
    # k: only the fields that are not a top level of ``paths`` (what report.scan_sql's
    # unknown_keys looks for); a file whose columns are all known gets a constant [].
    top = {p for p in paths if "." not in p}
    extra = [n for n, _ in cols if n not in top]
    keys = ", ".join(f"CASE WHEN {_ident(n)} IS NOT NULL THEN {_quote(n)} END" for n in extra)
    k_sql = f"list_filter([{keys}], x -> x IS NOT NULL)" if extra else "[]::VARCHAR[]"
    inner = ", ".join(
        [f"{_value_sql(n, t)} AS _v_{n}" for n, t in cols] + [_ident(n) for n in typed]
    )
    nested_sql = "".join(
        f", CASE WHEN starts_with(_v_{h}, '{{') THEN try(json_extract(_v_{h}, "
        f"[{', '.join(_quote('$.' + r) for r in rs)}])) END AS _n_{h}"
        for h, rs in nested.items()
    )
    return (
        f"(SELECT filename, k, {', '.join(outs)} "
        f"FROM (SELECT *{nested_sql}, {valid} AS _ok "
        f"FROM (SELECT filename, {inner}, {k_sql} AS k "
        f"FROM read_parquet([{', '.join(_quote(str(f)) for f in files)}], filename=true))))"
    )


def fingerprint_sql(path: Path, cols: list[tuple[str, str]]) -> str:
    """SQL: ``fp``, the fingerprint's JSON text per row, and ``fh``, which fingerprint it is
    (as report.scan_sql hashes it: the ``fingerprint_ref`` where the row has one, else the
    text)."""
    have = dict(cols)
    if "fingerprint" not in have:
        return "(SELECT NULL::VARCHAR AS fp, NULL::UBIGINT AS fh)"
    fp = "fingerprint::VARCHAR"
    ref = f"to_json({_ident('fingerprint_ref')})::VARCHAR" if "fingerprint_ref" in have else None
    fh = (
        f"CASE WHEN starts_with({ref}, '\"') THEN hash({ref}) ELSE hash({fp}) END"
        if ref
        else f"hash({fp})"
    )
    return f"(SELECT {fp} AS fp, {fh} AS fh FROM read_parquet({_quote(str(path))}))"


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number from 1, record) per row of ``path``; InputError naming the file (and row)
    on a file that is not readable Parquet, lacks required columns or holds bad JSON text."""
    import duckdb

    con = duckdb.connect()
    try:
        with plain_name(path) as name:
            yield from _rows(con, path, name)
    finally:
        con.close()


@contextmanager
def plain_name(path: Path) -> Iterator[Path]:
    """A name DuckDB can read ``path`` by: its own, else (not UTF-8: DuckDB cannot take it; a
    glob character: DuckDB would expand it) a link of a plain name in a temporary directory."""
    if duckdb_takes(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="gpulab-parquet-") as tmp:
        link = Path(tmp) / "input.parquet"
        link.symlink_to(path.absolute())
        yield link


GLOB = re.compile(r"[*?\[\]{}\\]")  # DuckDB expands these in a file name


def duckdb_takes(path: Path) -> bool:
    """Whether DuckDB reads ``path`` by its own name: UTF-8 (a name that is not, a lone
    surrogate in Python, it cannot take) and no glob character (which it would expand)."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not GLOB.search(text)


def _rows(con: Any, path: Path, name: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    import duckdb

    cols = columns_of(con, name, shown=str(path))
    json_cols = {n for n, t in cols if t == "JSON" or (n in JSON_COLUMNS and t == "VARCHAR")}
    select = ", ".join(f"{_ident(n)}::VARCHAR" if n in json_cols else _ident(n) for n, _ in cols)
    try:
        cur = con.execute(f"SELECT {select} FROM read_parquet({_quote(str(name))})")
        row_no = 0
        while batch := cur.fetchmany(10_000):
            for row in batch:
                row_no += 1
                rec: dict[str, Any] = {}
                for (col, _), v in zip(cols, row, strict=True):
                    if v is None:
                        continue
                    if col in json_cols:
                        try:
                            v = loads_json(v)
                        except JSONDepthError:
                            raise InputError(
                                f"{path}:{row_no}: column {col!r} is JSON nested deeper "
                                f"than {MAX_JSON_DEPTH} levels"
                            ) from None
                        except ValueError:
                            raise InputError(
                                f"{path}:{row_no}: column {col!r} is not JSON text"
                            ) from None
                    rec[col] = v
                yield row_no, rec
    except duckdb.Error as exc:
        raise _unreadable(path, exc, name) from None
