"""A unit's files in ``units/``: the runner's ``.part`` file read (whole records only), filed
as ``<arm>.r<repeat>.jsonl`` with the study's tags (read back before the ``.part`` goes), and
earlier tries set aside (``.stopped-<n>``, ``.retried-<n>``, ``.mismatch-<n>``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infra.study.plan import Unit
from infra.study.state import record_count
from workloads.files import OutputError, write_text


def read_part(part: Path) -> list[dict[str, Any]]:
    """The whole records of a unit's ``.part`` file (a torn last line of a killed writer and
    anything that is not a JSON object are not records)."""
    out: list[dict[str, Any]] = []
    try:
        text = part.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return out
    for line in text.split("\n"):
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def tag_records(
    part: Path, final: Path, study: str, unit: Unit, flags: list[str] | None = None
) -> tuple[int, int]:
    """Copy a unit's records to its final file with ``params.study`` set (and ``flags`` added
    to each record's ``setting_flags``); (records, ok). The final file is read back and must
    hold them all before the ``.part`` file goes; OutputError when it cannot be written."""
    lines, ok = [], 0
    for rec in read_part(part):
        params: dict[str, Any] = rec["params"] if isinstance(rec.get("params"), dict) else {}
        params["study"] = {"name": study, "arm": unit.arm, "repeat": unit.repeat}
        rec["params"] = params
        if flags:
            have = rec.get("setting_flags")
            rec["setting_flags"] = [*(have if isinstance(have, list) else []), *flags]
        ok += rec.get("status") == "ok"
        lines.append(json.dumps(rec, sort_keys=True))
    write_text(final, "".join(f"{ln}\n" for ln in lines))
    got = record_count(final)
    if got != len(lines):
        raise OutputError(f"{str(final)!r} holds {got} of the {len(lines)} records written")
    part.unlink(missing_ok=True)
    return len(lines), ok


def set_aside(path: Path, kind: str) -> None:
    """``<stem>.part``/``<stem>.jsonl`` -> ``<stem>.<kind>-<n>.jsonl`` (the first free n)."""
    if not path.is_file():
        return
    n = 1
    stem = path.name.removesuffix(".part").removesuffix(".jsonl")
    while (path.parent / f"{stem}.{kind}-{n}.jsonl").exists():
        n += 1
    try:
        path.rename(path.parent / f"{stem}.{kind}-{n}.jsonl")
    except OSError as exc:
        raise OutputError(f"cannot move {str(path)!r} aside: {exc.strerror}") from None
