"""Records from JSON Lines files, results directories and stack-output summaries.

Inputs, in any mix:
  *.jsonl            a record file (workloads.records); a truncated last line is skipped
  a directory        every *.jsonl below it (recursively), in sorted order
  *.json             a stack-output summary (``pulumi stack output --json`` or the summary
                     ``gpulab run`` writes beside its records): every embedded record (an object
                     with ``schema_version`` and ``record_id``) and every string naming an
                     existing *.jsonl file (relative to the summary's directory, else to the working
                     directory, as ``gpulab run`` writes ``results/<stack>/<run-id>.jsonl``) is read

All records must carry one schema version, the one this code reads (workloads.records
SCHEMA_VERSION); each is validated. Duplicates (same ``record_id``) are read once.
Every problem is an InputError with one line naming the file (and line).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from workloads.errors import InputError
from workloads.records import SCHEMA_VERSION, RecordError, validate_record

Source = tuple[str, dict[str, Any]]  # (where: "file:line", record)


def _jsonl(path: Path) -> Iterator[Source]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"record file {str(path)!r} cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"record file {str(path)!r} is not UTF-8 text") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if lineno == len(lines):  # a writer killed mid-line
                return
            raise InputError(f"{path}:{lineno}: not a JSON record") from None
        if not isinstance(rec, dict):
            raise InputError(f"{path}:{lineno}: not a JSON object")
        yield f"{path}:{lineno}", rec


def _walk_summary(node: Any, base: Path, where: str) -> Iterator[Source]:
    if isinstance(node, dict):
        if "schema_version" in node and "record_id" in node:
            yield where, node
            return
        for k, v in node.items():
            yield from _walk_summary(v, base, f"{where}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk_summary(v, base, f"{where}[{i}]")
    elif isinstance(node, str) and node.endswith(".jsonl"):
        cands = [Path(node)] if os.path.isabs(node) else [base / node, Path(node)]
        for p in cands:
            if p.is_file():
                yield from _jsonl(p)
                break


def _summary(path: Path) -> Iterator[Source]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"summary {str(path)!r} cannot be read: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InputError(f"summary {str(path)!r} is not JSON") from None
    found = list(_walk_summary(data, path.parent, str(path)))
    if not found:
        raise InputError(
            f"summary {str(path)!r} embeds no records and names no existing *.jsonl record file"
        )
    yield from found


def _sources(inputs: Iterable[str | os.PathLike[str]]) -> Iterator[Source]:
    for raw in inputs:
        p = Path(raw)
        if p.is_dir():
            files = sorted(p.rglob("*.jsonl"))
            if not files:
                raise InputError(f"results directory {str(p)!r} holds no *.jsonl record files")
            for f in files:
                yield from _jsonl(f)
        elif p.is_file():
            if p.suffix == ".json":
                yield from _summary(p)
            else:
                yield from _jsonl(p)
        else:
            raise InputError(f"input {str(p)!r} does not exist")


def load_records(inputs: Iterable[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Read, check and deduplicate the records of ``inputs``; raise InputError on bad input."""
    inputs = list(inputs)
    if not inputs:
        raise InputError("no inputs: name record files (*.jsonl), results directories or summaries")
    sources = list(_sources(inputs))
    if not sources:
        raise InputError(f"no records in {', '.join(str(i) for i in inputs)}")
    versions: dict[Any, str] = {}
    for where, rec in sources:
        versions.setdefault(rec.get("schema_version"), where)
    if len(versions) > 1:
        seen = "; ".join(f"{v!r} ({w})" for v, w in versions.items())
        raise InputError(f"records mix schema versions: {seen}; report one version at a time")
    (only, where), = versions.items()
    if only != SCHEMA_VERSION:
        raise InputError(
            f"{where}: schema_version {only!r} is not supported "
            f"(this report reads {SCHEMA_VERSION})"
        )
    out: list[dict[str, Any]] = []
    seen_ids: set[str] = set()
    for where, rec in sources:
        try:
            validate_record(rec)
        except RecordError as exc:
            raise InputError(f"{where}: {exc}") from None
        if rec["record_id"] in seen_ids:
            continue
        seen_ids.add(rec["record_id"])
        out.append(rec)
    return out
