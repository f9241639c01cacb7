"""Which record files report.scan hands to the Python reader (report.load), and the names
DuckDB reads the others by.

report.scan reads each record file in DuckDB; a file goes to report.load instead when one of
its records needs Python's judgement: a field type or value ``validate_record`` refuses (one
stand-in record per distinct type signature, :func:`standin_ok`), a number the report reads
that is not a finite double (report.load notes it), claims or setting flags that are not
lists of strings (report.load refuses the record, naming file and line) (:func:`needs_python`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from report import parquet
from report import scan_sql as q
from workloads.json_bounded import loads_json
from workloads.records import RecordError, validate_record

_STANDIN = {"s": "x", "i": 1, "f": 1.5, "o": {}, "a": [], "n": None, "b": True, "x": math.nan}


def duckdb_name(path: Path, i: int, tmp: Path) -> str:
    """The name DuckDB reads ``path`` by: its own, else (not UTF-8: DuckDB cannot take it; a
    glob character: DuckDB would expand it) a link of a plain name to it in ``tmp``."""
    if parquet.duckdb_takes(path):
        return str(path)
    link = tmp / f"input-{i}{path.suffix.lower() if path.suffix.isascii() else ''}"
    link.symlink_to(path.absolute())
    return str(link)


def standin_ok(sig: str, sv: str | None, status: str, kind: str, virt: Any, err: bool) -> bool:
    """validate_record on a record with the JSON types of ``sig`` and the checked values."""
    rec: dict[str, Any] = {}
    for name, ch in zip(q.TOP, sig, strict=True):
        if ch != "-":
            rec[name] = _STANDIN[ch]
    for name, value in (("status", status), ("kind", kind)):
        if isinstance(rec.get(name), str):
            rec[name] = value
    if isinstance(rec.get("virtualization"), str):
        rec["virtualization"] = virt
    if "schema_version" in rec:
        try:
            rec["schema_version"] = loads_json(sv) if sv is not None else None
        except ValueError:
            return False
    if "error" in rec and sig[q.TOP.index("error")] == "s":
        rec["error"] = "e" if err else ""
    try:
        validate_record(rec)
    except RecordError:
        return False
    return True


_AT = {c: q.TOP.index(f) + 1 for c, f in (("ips", "images_per_sec"), ("ela", "elapsed_s"))}


def needs_python(con: Any) -> set[int]:
    """Files whose records report.load must read: a number the report reads that is not a
    finite double (NULL in ``ips``/``ela`` where the record holds a number; NaN, infinity or
    a three-digit exponent in ``metrics``): report.load notes them; claims or setting flags
    that are not lists of strings (or nest too deep): report.load refuses the record."""
    numbers = " OR ".join(
        f"({c} IS NULL AND substr(sig, {at}, 1) IN ('i', 'f'))" for c, at in _AT.items()
    )
    rows = con.execute(
        f"SELECT DISTINCT fi FROM rec WHERE {numbers} OR (metrics IS NOT NULL AND "
        "metrics <> '{}' AND regexp_matches(metrics, '[0-9][eE][+]?[0-9]{3}|[nN][aA][nN]|"
        "[iI][nN][fF]'))"
    ).fetchall()
    out = {int(r[0]) for r in rows}
    lists = con.execute(
        "SELECT DISTINCT claims, flags FROM rec WHERE coalesce(claims, '[]') <> '[]' "
        "OR coalesce(flags, '[]') <> '[]'"
    ).fetchall()
    bad = {t for row in lists for t in row if t is not None and not _strings(t)}
    if bad:
        rows = con.execute(
            "SELECT DISTINCT fi FROM rec WHERE list_contains(?, claims) OR list_contains(?, flags)",
            [sorted(bad), sorted(bad)],
        ).fetchall()
        out |= {int(r[0]) for r in rows}
    return out


def _strings(text: str) -> bool:
    """Whether the JSON ``text`` is a list of strings (or null)."""
    try:
        value = loads_json(text)
    except ValueError:
        return False
    return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))
