"""Records from JSON Lines files, results directories and stack-output summaries.

Inputs, in any mix:
  *.jsonl            a record file (workloads.records); a line that is not JSON (a torn write)
                     is skipped and reported with file and line, never dropped silently
  *.parquet          a record file with one row per record, as ``gpulab export --format
                     parquet`` writes it (report.parquet); a file that is not readable Parquet
                     or lacks a record's required columns is refused with one line naming it
  a directory        every *.jsonl and *.parquet below it (recursively), in sorted order
  *.json             a stack-output summary (``pulumi stack output --json`` or the summary
                     ``gpulab run`` writes beside its records): every embedded record (an object
                     with ``schema_version`` and ``record_id``) and every string naming an
                     existing *.jsonl file (relative to the summary's directory, else to the working
                     directory, as ``gpulab run`` writes ``results/<stack>/<run-id>.jsonl``) is read

Records of every readable schema version (workloads.records READABLE_VERSIONS) are read; each
is validated. A record without the setting (schema 1, or a run given no gpu_path) is reported
once per file and grouped as "unknown setting". Duplicates (same ``record_id``) are read once.
A value the report reads (``images_per_sec``, ``elapsed_s``, ``metrics``) that is not a finite
number (NaN, infinity, a number beyond a double's range) is left out with a note naming how
many, which fields and where. A record file must be a regular file (a FIFO in a results
directory would block the read forever); JSON nested deeper than
workloads.json_bounded.MAX_JSON_DEPTH levels is refused naming the file and line.
Skipped lines and setting notes go to ``problems`` (else a RecordWarning each); bad input is an
InputError with one line naming the file (and line).
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from report.parquet import is_parquet, read_records
from workloads.errors import InputError
from workloads.files import reason
from workloads.json_bounded import MAX_JSON_DEPTH, JSONDepthError, loads_json
from workloads.records import (
    READABLE_VERSIONS,
    Problems,
    RecordError,
    RecordWarning,
    parse_lines,
    validate_record,
)
from workloads.setting import record_setting

Source = tuple[str, dict[str, Any]]  # (where: "file:line", record)


def _jsonl(path: Path, problems: list[str]) -> Iterator[Source]:
    _regular(path)
    try:
        with open(path, "rb") as fh:  # checked regular above: open does not block
            text = fh.read().decode("utf-8")
    except OSError as exc:
        raise InputError(f"record file {str(path)!r} cannot be read: {reason(exc)}") from None
    except UnicodeDecodeError:
        raise InputError(f"record file {str(path)!r} is not UTF-8 text") from None
    try:
        for lineno, rec in parse_lines(path, text, problems):
            if not isinstance(rec, dict):
                raise InputError(f"{path}:{lineno}: not a JSON object")
            yield f"{path}:{lineno}", rec
    except RecordError as exc:  # a line nested too deep
        raise InputError(str(exc)) from None


def _regular(path: Path) -> None:
    """InputError unless ``path`` is a regular file (after symlinks) that can be looked at."""
    kind = _kind(path)
    if kind != "file":
        raise InputError(f"record file {str(path)!r} is not a regular file ({kind})")


def _kind(path: Path) -> str:
    """``file``, ``directory``, or what else ``path`` is (``FIFO``...); InputError naming it
    when it does not exist or cannot be looked at (a loop of symlinks, a name too long)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(f"input {str(path)!r} does not exist") from None
    except OSError as exc:
        raise InputError(f"input {str(path)!r} cannot be read: {reason(exc)}") from None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _parquet(path: Path) -> Iterator[Source]:
    for row, rec in read_records(path):
        yield f"{path}:{row}", rec


def _record_file(path: Path, problems: list[str]) -> Iterator[Source]:
    return _parquet(path) if is_parquet(path) else _jsonl(path, problems)


def record_files(directory: Path) -> list[Path]:
    """The record files below ``directory`` (*.jsonl and *.parquet), sorted; InputError when
    there are none."""
    try:
        files = sorted([*directory.rglob("*.jsonl"), *directory.rglob("*.parquet")])
    except OSError as exc:
        raise InputError(
            f"results directory {str(directory)!r} cannot be read: {reason(exc)}"
        ) from None
    if not files:
        raise InputError(
            f"results directory {str(directory)!r} holds no *.jsonl or *.parquet record files"
        )
    for f in files:
        _regular(f)
    return files


def _walk_summary(node: Any, base: Path, where: str, problems: list[str]) -> Iterator[Source]:
    if isinstance(node, dict):
        if "schema_version" in node and "record_id" in node:
            yield where, node
            return
        for k, v in node.items():
            yield from _walk_summary(v, base, f"{where}.{k}", problems)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk_summary(v, base, f"{where}[{i}]", problems)
    elif isinstance(node, str) and node.endswith(".jsonl"):
        cands = [Path(node)] if os.path.isabs(node) else [base / node, Path(node)]
        for p in cands:
            if _is_file(p):
                yield from _jsonl(p, problems)
                break


def _read_summary(path: Path) -> Any:
    try:
        return loads_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"summary {str(path)!r} cannot be read: {reason(exc)}") from None
    except JSONDepthError:
        raise InputError(
            f"summary {str(path)!r} is JSON nested deeper than {MAX_JSON_DEPTH} levels"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InputError(f"summary {str(path)!r} is not JSON") from None


def _summary(path: Path, problems: list[str]) -> Iterator[Source]:
    data = _read_summary(path)
    found = list(_walk_summary(data, path.parent, str(path), problems))
    if not found:
        raise InputError(
            f"summary {str(path)!r} embeds no records and names no existing *.jsonl record file"
        )
    yield from found


def _sources(inputs: Iterable[str | os.PathLike[str]], problems: list[str]) -> Iterator[Source]:
    for raw in inputs:
        p = Path(raw)
        kind = _kind(p)
        if kind == "directory":
            for f in record_files(p):
                yield from _record_file(f, problems)
        elif kind == "file":
            if p.suffix == ".json":
                yield from _summary(p, problems)
            else:
                yield from _record_file(p, problems)
        else:
            raise InputError(f"input {str(p)!r} is not a regular file ({kind})")


def _is_file(path: Path) -> bool:
    """Whether a summary's string names an existing record file (a string that cannot be a
    path, too long or holding a NUL, names none)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _file_of(where: str) -> str:
    """The file part of a source location (``file:line`` or ``summary.json.key[0]``)."""
    head, sep, tail = where.rpartition(":")
    return head if sep and tail.isdigit() else where.split(".json", 1)[0] + ".json"


def load_records(
    inputs: Iterable[str | os.PathLike[str]], problems: Problems = None
) -> list[dict[str, Any]]:
    """Read, check and deduplicate the records of ``inputs``; raise InputError on bad input.

    Skipped lines and records without a setting are reported to ``problems`` when given (one
    line each), else as RecordWarnings.
    """
    inputs = list(inputs)
    if not inputs:
        raise InputError(
            "no inputs: name record files (*.jsonl, *.parquet), results directories or summaries"
        )
    notes: list[str] = []
    sources = list(_sources(inputs, notes))
    if not sources:
        _flush(notes, problems)
        raise InputError(f"no records in {', '.join(str(i) for i in inputs)}")
    for where, rec in sources:
        if rec.get("schema_version") not in READABLE_VERSIONS:
            raise InputError(
                f"{where}: schema_version {rec.get('schema_version')!r} is not supported "
                f"(this report reads {', '.join(map(str, READABLE_VERSIONS))})"
            )
    out: list[dict[str, Any]] = []
    seen_ids: set[str] = set()
    unset: dict[str, int] = {}
    for where, rec in sources:
        try:
            validate_record(rec)
        except RecordError as exc:
            raise InputError(f"{where}: {exc}") from None
        if rec["record_id"] in seen_ids:
            continue
        seen_ids.add(rec["record_id"])
        out.append(rec)
        if record_setting(rec) is None:
            f = _file_of(where)
            unset[f] = unset.get(f, 0) + 1
    for f, n in unset.items():
        notes.append(
            f"{f}: {n} record(s) carry no setting (gpu_path, exec_env, virtualization, "
            "sharing: schema 1, or a run given no --gpu-path); grouped as unknown setting, "
            "not guessed"
        )
    notes += nonfinite_notes(sources)
    _flush(notes, problems)
    return out


REPORTED_NUMBERS = ("images_per_sec", "elapsed_s")  # and every value of ``metrics``


def _nonfinite(rec: dict[str, Any]) -> list[str]:
    """The fields of ``rec`` the report reads as numbers whose value is not a finite number."""
    out = [k for k in REPORTED_NUMBERS if _not_finite(rec.get(k))]
    metrics = rec.get("metrics")
    if isinstance(metrics, dict):
        out += [f"metrics.{k}" for k, v in metrics.items() if _not_finite(v)]
    return out


def _not_finite(v: Any) -> bool:
    """A number that is not a finite double: NaN, infinity, or an int beyond a double."""
    if isinstance(v, float):
        return not math.isfinite(v)
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) > sys.float_info.max


def nonfinite_notes(sources: Iterable[Source]) -> list[str]:
    """One note per file holding values that are not finite numbers (NaN, infinity, a number
    beyond a double's range): how many, which fields, which lines (the first five)."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for where, rec in sources:
        fields = _nonfinite(rec)
        if fields:
            f = _file_of(where)
            found.setdefault(f, []).append((where[len(f) :].lstrip(":") or where, fields))
    notes = []
    for f, hits in found.items():
        n = sum(len(fields) for _, fields in hits)
        names = sorted({x for _, fields in hits for x in fields})
        places = ", ".join(w for w, _ in hits[:5]) + (" ..." if len(hits) > 5 else "")
        notes.append(
            f"{f}: {n} value(s) that are not finite numbers (NaN, infinity or beyond a "
            f"double's range) left out: {', '.join(names)} of {len(hits)} record(s) "
            f"(line {places})"
        )
    return notes


def _flush(notes: list[str], problems: Problems) -> None:
    if problems is not None:
        problems.extend(notes)
        return
    for n in notes:
        warnings.warn(n, RecordWarning, stacklevel=3)


# --- the plan of report.scan: which files DuckDB reads, which records Python reads ----------


@dataclass(frozen=True)
class Planned:
    """One input in order: a record file (``path``), or records embedded in a summary."""

    label: str  # the file named in notes (the record file, or the summary)
    path: Path | None = None
    embedded: tuple[Source, ...] = ()


def plan(inputs: Iterable[str | os.PathLike[str]]) -> list[Planned]:
    """The inputs of :func:`load_records`, in its order, without reading the record files."""
    inputs = list(inputs)
    if not inputs:
        raise InputError(
            "no inputs: name record files (*.jsonl, *.parquet), results directories or summaries"
        )
    out: list[Planned] = []
    for raw in inputs:
        p = Path(raw)
        kind = _kind(p)
        if kind == "directory":
            out += [Planned(str(f), f) for f in record_files(p)]
        elif kind == "file" and p.suffix == ".json":
            out += _plan_summary(p)
        elif kind == "file":
            out.append(Planned(str(p), p))
        else:
            raise InputError(f"input {str(p)!r} is not a regular file ({kind})")
    return out


def _plan_summary(path: Path) -> list[Planned]:
    data = _read_summary(path)
    out: list[Planned] = []
    pending: list[Source] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if "schema_version" in node and "record_id" in node:
                pending.append((where, node))
                return
            for k, v in node.items():
                walk(v, f"{where}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")
        elif isinstance(node, str) and node.endswith(".jsonl"):
            cands = [Path(node)] if os.path.isabs(node) else [path.parent / node, Path(node)]
            for p in cands:
                if _is_file(p):
                    if pending:
                        out.append(Planned(_file_of(pending[0][0]), None, tuple(pending)))
                        pending.clear()
                    out.append(Planned(str(p), p))
                    break

    walk(data, str(path))
    if pending:
        out.append(Planned(_file_of(pending[0][0]), None, tuple(pending)))
    if not out:
        raise InputError(
            f"summary {str(path)!r} embeds no records and names no existing *.jsonl record file"
        )
    return out


def read_planned(
    items: list[tuple[int, Planned]], problems: list[str]
) -> list[tuple[int, list[dict[str, Any]]]]:
    """The records of ``items`` read and checked as :func:`load_records` does (skipped lines
    to ``problems``; the first bad record raises InputError naming file and line)."""
    sources: list[tuple[int, Source]] = []
    for i, it in items:
        if it.path is not None:
            sources += [(i, s) for s in _record_file(it.path, problems)]
        else:
            sources += [(i, s) for s in it.embedded]
    for _, (where, rec) in sources:
        if rec.get("schema_version") not in READABLE_VERSIONS:
            raise InputError(
                f"{where}: schema_version {rec.get('schema_version')!r} is not supported "
                f"(this report reads {', '.join(map(str, READABLE_VERSIONS))})"
            )
    out: dict[int, list[dict[str, Any]]] = {i: [] for i, _ in items}
    for i, (where, rec) in sources:
        try:
            validate_record(rec)
        except RecordError as exc:
            raise InputError(f"{where}: {exc}") from None
        out[i].append(rec)
    problems += nonfinite_notes(s for _, s in sources)
    return list(out.items())
