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
  status          "ok" | "failed" | "interrupted" | "skipped" (a scenario the backend cannot run;
                  error says why)
  error           str | None
  images_per_sec  float | None (global batch x timed steps / wall-clock of the timed loop)
  step_times_s    list[float] (per block of sync_every timed steps: its time / its steps;
                  per step when sync_every is 1)
  elapsed_s       float | None (job launch to finish, includes build and data)
  sync_every      int (K: timed steps per host synchronization; part of the pairing)
  startup_s       float | None (job launch to the first step's start)
  first_step_s    float | None (the warm-up: first, compiling, step(s) before the window)
  timed_s         float | None (the timed window: first reading after the warm-up sync
                  to the sync after the last step)
  block_times_s   list[float] (wall time of each block of sync_every timed steps)
  metrics         dict[str, float] (extra measurements: tflops, gbps, time_per_call_s, ...)
  params          dict (what ran beyond the fields above: kernel shape, scenario options ...)
  claims          list[str] (published claim ids this experiment tests)
  topology        str (the gpulab:topology of the lab, one of docs/topologies.md)
  arm             str (label of the comparison arm, e.g. "native", "docker")
  gpu_path, exec_env, virtualization, sharing
                  str, schema 2: the setting as the lab states it (workloads.setting); the
                  report groups by ``virtualization``. Absent (schema 1, or a run given no
                  gpu_path): the report says so and groups the record as "unknown setting".
  setting_flags   list[str], schema 2: where the fingerprint disagrees with the setting
  host            str
  started_at, finished_at  ISO-8601 UTC strings
  fingerprint     dict (environment: see workloads.fingerprint)

Schema 1 records (no setting fields) stay readable (READABLE_VERSIONS).

Crash safety: before each append, :class:`RecordWriter` makes sure the file ends in a newline.
A torn last line (a writer killed mid-line) is moved to ``<file>.partial`` with a warning; a
last line that is a whole record missing only its newline gets the newline. Readers never drop
a line silently: each skipped line is reported with file and line number (to ``problems`` when
given, else as a :class:`RecordWarning`).
"""

from __future__ import annotations

import json
import os
import re
import uuid
import warnings
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workloads.errors import InputError
from workloads.finite import refuse_nonfinite
from workloads.json_bounded import MAX_JSON_DEPTH, JSONDepthError, check_json_depth, loads_json

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)

STATUSES = ("ok", "failed", "interrupted", "skipped")
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
    "gpu_path": str,
    "exec_env": str,
    "virtualization": str,
    "sharing": str,
    "setting_flags": list,
    "sync_every": int,
    "startup_s": (float, int, type(None)),
    "first_step_s": (float, int, type(None)),
    "timed_s": (float, int, type(None)),
    "block_times_s": list,
}
STRING_LISTS = ("claims", "setting_flags")  # lists whose items are strings (claim ids, flags)
# the timing fields (workloads.timing.record_fields): optional, null where not measured
TIMING_FIELDS = ("sync_every", "startup_s", "first_step_s", "timed_s", "block_times_s")
SETTING_FIELDS = ("gpu_path", "exec_env", "virtualization", "sharing")
VIRTUALIZATIONS = ("none", "container", "vm", "container-in-vm")


class RecordError(ValueError):
    """A record that does not match the schema."""


class RecordWarning(UserWarning):
    """A line of a record file that was skipped or moved aside (file and line named)."""


Problems = list[str] | None


def _report(problems: Problems, message: str) -> None:
    if problems is None:
        warnings.warn(message, RecordWarning, stacklevel=3)
    else:
        problems.append(message)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]


RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")


def run_id_from_env(environ: Mapping[str, str] | None = None) -> str:
    """The run id a lab gives its hosts (``GPULAB_RUN_ID``, set by the workload_run role to
    the WorkloadRun's id, so every host of one run writes the same run id), else a new one."""
    given = (os.environ if environ is None else environ).get("GPULAB_RUN_ID", "")
    if not given:
        return new_run_id()
    if not RUN_ID_RE.match(given):
        raise InputError(
            f"GPULAB_RUN_ID {given[:70]!r} is not a run id (up to 64 letters, digits, "
            "'.', '_', ':' or '-')"
        )
    return given


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
    for key in STRING_LISTS:
        for i, item in enumerate(rec.get(key) or ()):
            if not isinstance(item, str):
                raise RecordError(
                    f"record field {key}[{i}] has type {type(item).__name__}, not a string"
                )
    if rec["schema_version"] not in READABLE_VERSIONS:
        raise RecordError(
            f"record schema_version {rec['schema_version']} is not one of {READABLE_VERSIONS}"
        )
    present = [k for k in SETTING_FIELDS if k in rec]
    if present and len(present) != len(SETTING_FIELDS):
        missing = ", ".join(k for k in SETTING_FIELDS if k not in rec)
        raise RecordError(f"record carries part of the setting: {missing} missing")
    if present and rec["virtualization"] not in VIRTUALIZATIONS:
        raise RecordError(
            f"record virtualization {rec['virtualization']!r} is not one of {VIRTUALIZATIONS}"
        )
    if rec["status"] not in STATUSES:
        raise RecordError(f"record status {rec['status']!r} is not one of {STATUSES}")
    if rec["kind"] not in KINDS:
        raise RecordError(f"record kind {rec['kind']!r} is not one of {KINDS}")
    if rec["status"] == "ok" and rec.get("error"):
        raise RecordError("a record with status 'ok' carries an error")


def _is_record_line(data: bytes) -> bool:
    try:
        rec = loads_json(data.decode("utf-8"))
    except ValueError:  # not UTF-8, not JSON, too deep, a number too long
        return False
    if not isinstance(rec, dict):
        return False
    try:
        validate_record(rec)
    except RecordError:
        return False
    return True


def repair_tail(path: str | os.PathLike[str]) -> str | None:
    """Make ``path`` end in a newline before an append; a message when something was done.

    A last line that is a whole valid record gets its newline; anything else after the last
    newline (a torn write) is appended to ``<path>.partial`` and cut from ``path``.
    """
    p = Path(path)
    try:
        fh = open(p, "rb+")  # noqa: SIM115
    except FileNotFoundError:
        return None
    with fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return None
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return None
        start, pos = 0, size
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            fh.seek(pos)
            i = fh.read(step).rfind(b"\n")
            if i >= 0:
                start = pos + i + 1
                break
        fh.seek(start)
        frag = fh.read()
        if _is_record_line(frag):
            fh.seek(size)
            fh.write(b"\n")
            fh.flush()
            os.fsync(fh.fileno())
            return None
        partial = p.with_name(p.name + ".partial")
        with open(partial, "ab") as out:
            out.write(frag + b"\n")
            out.flush()
            os.fsync(out.fileno())
        fh.truncate(start)
        fh.flush()
        os.fsync(fh.fileno())
    return (
        f"{p}: torn last line ({len(frag)} bytes at byte {start}, a writer killed mid-line) "
        f"moved to {partial}"
    )


class RecordWriter:
    """Append records to a JSON Lines file; each one is flushed and fsynced when written.

    Before each append the file is made to end in a newline (:func:`repair_tail`), so a record
    is never glued onto a torn line left by a killed writer.
    """

    def __init__(self, path: str | os.PathLike[str], problems: Problems = None) -> None:
        self.path = Path(path)
        self.problems = problems
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise InputError(
                f"output path {str(self.path)!r} cannot be written: {exc.strerror}"
            ) from None
        self.count = 0

    def write(self, rec: dict[str, Any]) -> None:
        """Append ``rec``. A value that is not a finite number (NaN, infinity, a float that
        overflowed) is not JSON: the record is written as failed, with an error naming the
        field (:func:`refuse_nonfinite`), and the value as null."""
        validate_record(rec)
        try:
            line = json.dumps(rec, sort_keys=True, default=str, allow_nan=False) + "\n"
        except ValueError:
            rec = refuse_nonfinite(rec)
            validate_record(rec)
            line = json.dumps(rec, sort_keys=True, default=str, allow_nan=False) + "\n"
        try:
            moved = repair_tail(self.path)
        except OSError as exc:
            raise InputError(f"{self.path}: cannot check its last line: {exc.strerror}") from None
        if moved:
            _report(self.problems, moved)
        self._fh.write(line)
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


def _glued(line: str) -> tuple[int, dict[str, Any]] | None:
    """(fragment length, the whole record after it) for a torn fragment glued to a record on
    one line (an append made without a newline check), else None."""
    i = line.find("{", 1)
    while i > 0:
        try:
            rec = json.loads(line[i:])
        except (ValueError, RecursionError):
            rec = None
        if isinstance(rec, dict) and "schema_version" in rec and "record_id" in rec:
            return i, rec
        i = line.find("{", i + 1)
    return None


def parse_lines(
    path: str | os.PathLike[str], text: str, problems: Problems = None, strict: bool = False
) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) of each non-empty line of a record file.

    Lines end at ``\n`` only: a JSON string may hold U+2028 or U+0085, which
    ``str.splitlines`` would take for line ends. A line that is not JSON is skipped and
    reported (``problems`` or a RecordWarning) naming file and line, or raises RecordError
    when ``strict``. A line holding a torn fragment glued to a whole record yields that
    record (the fragment is reported). A line nested deeper than MAX_JSON_DEPTH levels raises
    RecordError naming file and line.
    """
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()  # the newline that ends the last line
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            check_json_depth(line)
        except JSONDepthError:
            raise RecordError(
                f"{path}:{lineno}: JSON nested deeper than {MAX_JSON_DEPTH} levels"
            ) from None
        try:
            yield lineno, json.loads(line)
            continue
        except json.JSONDecodeError:
            pass
        except ValueError:  # JSON, but an integer of more digits than Python converts
            raise RecordError(f"{path}:{lineno}: holds a number too long to read") from None
        if strict:
            raise RecordError(f"{path}:{lineno}: not a JSON record")
        glued = _glued(line)
        if glued is not None:
            _report(
                problems,
                f"{path}:{lineno}: torn fragment of {glued[0]} chars before a "
                "record skipped; the record after it is kept",
            )
            yield lineno, glued[1]
            continue
        where = "last line, a writer killed mid-line" if lineno == len(lines) else "not JSON"
        _report(problems, f"{path}:{lineno}: skipped ({len(line)} chars, {where})")


def iter_records(
    path: str | os.PathLike[str], strict: bool = False, problems: Problems = None
) -> Iterator[dict[str, Any]]:
    """Yield the records of a JSON Lines file.

    A line that is not JSON (a torn write) is skipped and reported with file and line (see
    :func:`parse_lines`), or raises RecordError when ``strict``; a JSON line that is not a
    valid record raises RecordError naming the file and line.
    """
    text = Path(path).read_text(encoding="utf-8")
    for lineno, rec in parse_lines(path, text, problems, strict):
        if not isinstance(rec, dict):
            raise RecordError(f"{path}:{lineno}: not a JSON object")
        try:
            validate_record(rec)
        except RecordError as exc:
            raise RecordError(f"{path}:{lineno}: {exc}") from None
        yield rec


def read_records(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], problems: Problems = None
) -> list[dict[str, Any]]:
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    out: list[dict[str, Any]] = []
    for p in paths:
        out.extend(iter_records(p, problems=problems))
    return out
