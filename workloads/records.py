"""Result records: one JSON object per measurement, appended to a JSON Lines file.

Every record carries ``schema_version``. A record is written and flushed (and fsynced) as
soon as the measurement ends, so a crash or ``kill -9`` loses nothing already finished.
A failed measurement is a record too, with ``status: "failed"`` and ``error``.

Fields (all records):
  schema_version  int, SCHEMA_VERSION
  record_id       str, unique
  run_id          str, groups the records of one invocation
  kind            "training" (images/sec), "kernel" (DeepBench-style), "job" (wall-clock)
  suite, experiment, model, scenario, data   str ("synthetic"/"real" for data)
  batch_size      int per device; global_batch int
  warmup, steps   int; repeat int (0-based repetition index)
  status          "ok" | "failed" | "interrupted"
  error           str | None
  images_per_sec  float | None (global batch x timed steps / wall-clock of the timed loop)
  step_times_s    list[float] (per timed step)
  elapsed_s       float | None (job launch to finish, includes build and data)
  metrics         dict[str, float] (extra measurements: tflops, gbps, time_per_call_s, ...)
  params          dict (what ran beyond the fields above: kernel shape, scenario options ...)
  claims          list[str] (published claim ids this experiment tests)
  topology        str (ironic-bm, nova-pci, magnum-k8s, vsphere-gpu, local)
  arm             str (label of the comparison arm, e.g. "native", "docker")
  host            str
  started_at, finished_at  ISO-8601 UTC strings
  fingerprint     dict (environment: see workloads.fingerprint)
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workloads.errors import InputError

SCHEMA_VERSION = 1

STATUSES = ("ok", "failed", "interrupted")
KINDS = ("training", "kernel", "job")

REQUIRED: dict[str, type | tuple[type, ...]] = {
    "schema_version": int,
    "record_id": str,
    "run_id": str,
    "kind": str,
    "suite": str,
    "experiment": str,
    "model": str,
    "scenario": str,
    "status": str,
}

OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "data": str,
    "batch_size": int,
    "global_batch": int,
    "warmup": int,
    "steps": int,
    "repeat": int,
    "error": (str, type(None)),
    "images_per_sec": (float, int, type(None)),
    "step_times_s": list,
    "elapsed_s": (float, int, type(None)),
    "metrics": dict,
    "params": dict,
    "claims": list,
    "topology": str,
    "arm": str,
    "host": str,
    "started_at": str,
    "finished_at": str,
    "fingerprint": dict,
}


class RecordError(ValueError):
    """A record that does not match the schema."""


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]


def make_record(**fields: Any) -> dict[str, Any]:
    """Build a record with defaults filled in, then validate it."""
    rec: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "record_id": uuid.uuid4().hex,
        "kind": "training",
        "scenario": "single",
        "status": "ok",
        "error": None,
        "metrics": {},
        "params": {},
        "claims": [],
        "step_times_s": [],
    }
    rec.update(fields)
    validate_record(rec)
    return rec


def validate_record(rec: dict[str, Any]) -> None:
    for key, typ in REQUIRED.items():
        if key not in rec:
            raise RecordError(f"record is missing required field {key!r}")
        if not isinstance(rec[key], typ):
            raise RecordError(f"record field {key!r} has type {type(rec[key]).__name__}")
    for key, value in rec.items():
        if key in REQUIRED:
            continue
        if key not in OPTIONAL:
            raise RecordError(f"record has unknown field {key!r}")
        typ = OPTIONAL[key]
        if not isinstance(value, typ) or (isinstance(value, bool) and typ is int):
            raise RecordError(f"record field {key!r} has type {type(value).__name__}")
    if rec["schema_version"] != SCHEMA_VERSION:
        raise RecordError(
            f"record schema_version {rec['schema_version']} is not {SCHEMA_VERSION}"
        )
    if rec["status"] not in STATUSES:
        raise RecordError(f"record status {rec['status']!r} is not one of {STATUSES}")
    if rec["kind"] not in KINDS:
        raise RecordError(f"record kind {rec['kind']!r} is not one of {KINDS}")
    if rec["status"] == "ok" and rec.get("error"):
        raise RecordError("a record with status 'ok' carries an error")


class RecordWriter:
    """Append records to a JSON Lines file; each one is flushed and fsynced when written."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise InputError(
                f"output path {str(self.path)!r} cannot be written: {exc.strerror}"
            ) from None
        self.count = 0

    def write(self, rec: dict[str, Any]) -> None:
        validate_record(rec)
        self._fh.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.count += 1

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_records(path: str | os.PathLike[str], strict: bool = False) -> Iterator[dict[str, Any]]:
    """Yield the records of a JSON Lines file.

    A truncated last line (a writer killed mid-write) is skipped unless ``strict``; a bad line
    anywhere else raises RecordError naming the file and line.
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if lineno == len(lines) and not strict:
                return
            raise RecordError(f"{path}:{lineno}: not a JSON record") from None
        if not isinstance(rec, dict):
            raise RecordError(f"{path}:{lineno}: not a JSON object")
        try:
            validate_record(rec)
        except RecordError as exc:
            raise RecordError(f"{path}:{lineno}: {exc}") from None
        yield rec


def read_records(paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[dict]:
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    out: list[dict[str, Any]] = []
    for p in paths:
        out.extend(iter_records(p))
    return out
