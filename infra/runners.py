"""The runners measuring on this machine now, so that a measurement another one overlapped is
flagged (two suites on the same CPU or GPU at once measure each other).

Every runner that ``gpulab run local`` or ``gpulab study run`` starts is entered in a
directory (``$GPULAB_RUNTIME_DIR``, else ``/tmp/gpulab-<uid>/runners``): one JSON file with
its pid and start time, what it measures, its records file, when it started and, once it has
ended, when. Before a runner starts, every entry whose runner is gone without an end (its
gpulab was killed) gets one: now, which is before the new runner. :func:`overlapping` names
every other runner whose time overlaps a window (one found gone then ended within it). The
directory is best effort: when it cannot be written, nothing is flagged, and the measuring
goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra.procs import ProcessRef
from workloads.errors import InputError
from workloads.files import make_dirs, write_text

KEEP_S = 86400.0  # entries of runners that ended longer ago are removed


def registry_dir() -> Path:
    configured = os.environ.get("GPULAB_RUNTIME_DIR")
    if configured:
        return Path(configured)
    return Path("/tmp") / f"gpulab-{os.getuid()}" / "runners"


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def sweep() -> None:
    """Before a runner starts: the entries of runners gone without an end end now; entries
    that ended more than :data:`KEEP_S` ago are removed."""
    overlapping(None, 0.0, 0.0)


def register(ref: ProcessRef, what: str, out: Path) -> Path | None:
    """Enter a runner that has just started; its entry (None when it cannot be written)."""
    entry = {**ref.to_json(), "what": what, "out": str(out), "started": time.time(), "ended": None}
    path = registry_dir() / f"{ref.pid}-{ref.start}.json"
    try:
        make_dirs(path.parent)
        write_text(path, json.dumps(entry, sort_keys=True) + "\n")
    except InputError:
        return None
    return path


def _read(path: Path) -> dict[str, Any] | None:
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return got if isinstance(got, dict) else None


def finish(path: Path | None) -> None:
    """The runner of ``path`` has ended: its end time is written."""
    if path is None:
        return
    entry = _read(path)
    if entry is not None and entry.get("ended") is None:
        entry["ended"] = time.time()
        with contextlib.suppress(InputError):
            write_text(path, json.dumps(entry, sort_keys=True) + "\n")


def _end(path: Path, entry: dict[str, Any], now: float) -> float:
    ended = entry.get("ended")
    if isinstance(ended, (int, float)):
        return float(ended)
    ref = ProcessRef.from_json(entry)
    if ref is not None and (ref.alive() or not ref.here()):
        return now  # still measuring (or on another host: assume so)
    entry["ended"] = now  # found gone: it ended by now
    with contextlib.suppress(InputError):
        write_text(path, json.dumps(entry, sort_keys=True) + "\n")
    return now


def overlapping(own: Path | None, since: float, until: float) -> list[str]:
    """One line for each other runner that measured between ``since`` and ``until``."""
    folder = registry_dir()
    now = time.time()
    out = []
    try:
        paths = sorted(folder.glob("*.json"))
    except OSError:
        return []
    for path in paths:
        if own is not None and path.name == own.name:
            continue
        entry = _read(path)
        if entry is None or not isinstance(entry.get("started"), (int, float)):
            continue
        started, ended = float(entry["started"]), _end(path, entry, now)
        if ended < now - KEEP_S:
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        if started < until and ended > since:
            out.append(
                f"another runner measured at the same time: pid {entry.get('pid')} "
                f"({entry.get('what')}) from {_stamp(started)} to {_stamp(ended)}"
            )
    return out
