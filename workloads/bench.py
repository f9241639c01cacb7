"""Run a suite: every repetition in its own process, one record per measurement.

The parent (this module) plans the measurements, starts ``python -m workloads _measure`` for each
repetition, follows its progress lines, and writes its record with :class:`RecordWriter` as soon
as it ends (flushed and fsynced, so ``kill -9`` of the parent loses no finished record; the
child dies with its parent). A child that fails, crashes or passes its ``timeout_s`` becomes a
``failed`` record with the error. Ctrl-C or SIGTERM stops the running child and writes it as
``interrupted``; records already written stay.

Child protocol (stdout of ``_measure``; everything else the child prints goes to stderr):
``@gpulab progress {"phase": "warmup"|"timed", "step": i, "total": n}`` and, last,
``@gpulab result {record fields}``. The job comes as one JSON object on stdin.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workloads import zygote
from workloads.paths import python_path
from workloads.records import RecordWriter, make_record, new_run_id
from workloads.scenarios import Job
from workloads.setting import Setting, setting_record_fields
from workloads.step import check_backend, default_backend
from workloads.suites import MAX_MEASUREMENTS, Entry, Suite
from workloads.zygote import Zygote, exported

PREFIX = "@gpulab "
STOP_GRACE_S = 10.0


@dataclass
class Event:
    """A progress event: ``start`` / ``step`` / ``finish`` of measurement ``index`` of ``total``."""

    kind: str
    index: int
    total: int
    entry: Entry
    repeat: int
    phase: str | None = None
    step: int = 0
    steps: int = 0
    record: dict[str, Any] | None = None


ProgressHook = Callable[[Event], None]


@dataclass
class BenchResult:
    """What a run wrote. ``records`` keeps the first MAX_MEASUREMENTS records (the documented
    cap of a plan; every record is in the file), ``written``/``failed`` count them all, so
    memory stays flat however long the plan is."""

    out: Path
    run_id: str
    records: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    written: int = 0
    failed_count: int = 0

    def add(self, record: dict[str, Any]) -> None:
        self.written += 1
        self.failed_count += record.get("status") == "failed"
        if len(self.records) < MAX_MEASUREMENTS:
            self.records.append(record)

    @property
    def failed(self) -> int:
        return self.failed_count

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 1 if self.failed else 0


class Interrupted(Exception):
    """SIGTERM (or SIGINT) arrived while a suite was running."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


def _stop(proc: subprocess.Popen[str]) -> None:
    """Stop a child's whole process group: SIGTERM, then SIGKILL after a grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def _fork(env: dict[str, str], stderr: int) -> Any:
    """A measuring process forked from the run's zygote (workloads/zygote.py) with piped
    stdin and stdout, or None (none answers: the caller starts its own interpreter)."""
    stdin_r, stdin_w = zygote.pipe_in()
    stdout_w, stdout_r = zygote.pipe_out()
    try:
        proc = zygote.spawn(env, stdin_r, stdout_w, stderr)
    finally:
        os.close(stdin_r)
        os.close(stdout_w)
    if proc is None:
        stdin_w.close()
        stdout_r.close()
        return None
    proc.stdin, proc.stdout = stdin_w, stdout_r
    return proc


def _tail(path: Path, lines: int = 3, limit: int = 600) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    keep = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(keep)[-limit:]


def job_env(backend: str) -> dict[str, str]:
    """The environment of a measuring process (and of the zygote it is forked from)."""
    env = dict(os.environ)
    env["KERAS_BACKEND"] = backend
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONPATH"] = python_path(env)
    return env


def run_job(
    job: Job,
    python: str = sys.executable,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run ``job`` in a child process; returns the child's record fields (status set)."""
    env = job_env(job.backend)
    job.launched_at = time.time()
    result: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="gpulab-job-") as tmp:
        # the job's TMPDIR too: what its processes leave (TensorFlow's autograph modules of a
        # killed process) goes with the directory
        env["TMPDIR"] = tmp
        errpath = Path(tmp) / "stderr.log"
        with open(errpath, "w", encoding="utf-8") as err:
            proc: Any = _fork(env, err.fileno()) or subprocess.Popen(
                [python, "-m", "workloads", "_measure"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
                start_new_session=True,
                preexec_fn=zygote.die_with_parent,
            )
        try:
            assert proc.stdin is not None and proc.stdout is not None
            with contextlib.suppress(BrokenPipeError):  # a child gone at once: no result below
                proc.stdin.write(json.dumps(job.to_json()))
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
            lines: queue.Queue[str | None] = queue.Queue()
            stdout = proc.stdout

            def pump() -> None:
                for line in stdout:
                    lines.put(line)
                lines.put(None)

            threading.Thread(target=pump, name="child-stdout", daemon=True).start()
            deadline = time.monotonic() + job.timeout_s
            while True:
                try:
                    line = lines.get(timeout=0.25)
                except queue.Empty:
                    if time.monotonic() > deadline:
                        _stop(proc)
                        return {
                            "status": "failed",
                            "error": f"timed out after {job.timeout_s:g} s (timeout_s)",
                            "elapsed_s": time.time() - job.launched_at,
                        }
                    continue
                if line is None:
                    break
                if not line.startswith(PREFIX):
                    continue
                kind, _, payload = line[len(PREFIX) :].partition(" ")
                with contextlib.suppress(json.JSONDecodeError):
                    if kind == "progress" and on_progress is not None:
                        on_progress(json.loads(payload))
                    elif kind == "result":
                        result = json.loads(payload)
            rc = proc.wait()
        except BaseException:
            _stop(proc)
            raise
        if result is not None:
            return result
        why = _tail(errpath) or "no output"
        return {
            "status": "failed",
            "error": f"measurement process exited with code {rc} and no result: {why}",
            "elapsed_s": time.time() - job.launched_at,
        }


def _record(
    suite: Suite,
    entry: Entry,
    repeat: int,
    job: Job,
    fields: dict[str, Any],
    run_id: str,
    topology: str,
    arm: str,
    setting: Setting | None = None,
) -> dict[str, Any]:
    params = {
        "image_size": entry.image_size,
        "options": dict(entry.options),
        "backend": job.backend,
        "timeout_s": entry.timeout_s,
        # where the suite differs from its paper (workloads/suites/<suite>.yaml deviations)
        "suite_deviations": list(suite.deviations),
    }
    params.update(fields.pop("params", None) or {})
    fingerprint = fields.pop("fingerprint", None) or {}
    rec: dict[str, Any] = {
        "run_id": run_id,
        "suite": suite.name,
        "experiment": entry.experiment,
        "model": entry.model,
        "scenario": entry.scenario,
        "data": entry.data,
        "batch_size": entry.batch,
        "global_batch": entry.batch,
        "warmup": entry.warmup,
        "steps": entry.steps,
        "repeat": repeat,
        "claims": list(entry.claims),
        "topology": topology,
        "arm": arm,
        "host": fingerprint.get("host") or socket.gethostname(),
        "images_per_sec": None,
        "elapsed_s": None,
    }
    rec.update(fields)
    rec["params"] = params
    rec["fingerprint"] = fingerprint
    rec.update(setting_record_fields(setting, fingerprint))
    rec.setdefault("finished_at", _iso(time.time()))
    rec.setdefault("started_at", _iso(job.launched_at))
    return make_record(**rec)


def _iso(t: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


def run_bench(
    suite: Suite,
    out: str | os.PathLike[str],
    *,
    topology: str = "local",
    arm: str = "native",
    backend: str | None = None,
    progress: ProgressHook | None = None,
    python: str = sys.executable,
    run_id: str | None = None,
    setting: Setting | None = None,
    sync_every: int | str | None = None,
    process_start: str | None = None,
) -> BenchResult:
    """Run every repetition of every entry of ``suite``; append records to ``out``.

    ``setting``: where it runs, as the lab states it (workloads.setting); None: the records
    carry no setting. ``sync_every``: timed steps per host sync (workloads.timing: ``auto``,
    ``tf_cnn`` or an int; default ``$GPULAB_SYNC_EVERY``, else auto). ``process_start``:
    ``exec`` or ``fork`` (workloads/zygote.py; default the suite's)."""
    backend = check_backend(backend or default_backend())
    timing = job_timing(sync_every)
    writer = RecordWriter(out)  # an unwritable path fails here, before anything runs
    result = BenchResult(Path(out), run_id or new_run_id())
    plan = iter_plan(suite)
    emit = progress or (lambda event: None)
    old_term = signal.getsignal(signal.SIGTERM)
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        signal.signal(signal.SIGTERM, _raise_interrupted)
    own = None
    try:
        fork = (process_start or suite.process_start) == "fork"
        if fork and zygote.inherited(backend):  # a study's, serving each of its units
            given: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        else:
            own = Zygote.start(backend, job_env(backend), python) if fork else None
            given = exported(own)
        with given:
            _run_plan(
                suite, plan, writer, result, topology, arm, backend, python, emit, setting, timing
            )
    except (KeyboardInterrupt, Interrupted):
        result.interrupted = True  # between measurements: nothing was running
    finally:
        if own is not None:
            own.close()
        if in_main:
            signal.signal(signal.SIGTERM, old_term)
        writer.close()
    return result


MIN_TIMED_ENV = "GPULAB_MIN_TIMED_S"


def job_timing(sync_every: int | str | None = None) -> dict[str, Any]:
    """The timing settings every job of a run gets: ``sync_every`` (the argument, else
    ``$GPULAB_SYNC_EVERY``, else auto) and ``min_timed_s`` (``$GPULAB_MIN_TIMED_S``, else 1 s:
    a shorter timed window is flagged in ``params.timing.short_window``). InputError on a bad
    value, naming it."""
    from workloads.bench_options import check_sync_every
    from workloads.errors import InputError

    k = check_sync_every(sync_every or os.environ.get("GPULAB_SYNC_EVERY") or "auto")
    text = os.environ.get(MIN_TIMED_ENV, "").strip() or "1"
    try:
        min_timed = float(text)
    except ValueError:
        min_timed = -1.0
    if not min_timed >= 0 or min_timed == float("inf"):
        raise InputError(f"{MIN_TIMED_ENV} must be a number of seconds >= 0, got {text[:40]!r}")
    return {"sync_every": k, "min_timed_s": min_timed}


def iter_plan(suite: Suite) -> Iterator[tuple[Entry, int]]:
    """The measurements of ``suite`` in order, (entry, repeat), produced one at a time: the
    plan is never held as a list (memory stays flat whatever the repeat counts)."""
    for entry in suite.entries:
        yield from ((entry, r) for r in range(entry.repeats))


def _run_plan(
    suite: Suite,
    plan: Iterator[tuple[Entry, int]],
    writer: RecordWriter,
    result: BenchResult,
    topology: str,
    arm: str,
    backend: str,
    python: str,
    emit: ProgressHook,
    setting: Setting | None = None,
    timing: dict[str, Any] | None = None,
) -> None:
    total = suite.measurements
    for index, (entry, repeat) in enumerate(plan):
        job = Job(
            suite=suite.name,
            experiment=entry.experiment,
            model=entry.model,
            scenario=entry.scenario,
            data=entry.data,
            batch=entry.batch,
            steps=entry.steps,
            warmup=entry.warmup,
            repeat=repeat,
            image_size=entry.image_size,
            claims=list(entry.claims),
            options=dict(entry.options),
            backend=backend,
            timeout_s=entry.timeout_s,
            **(timing or {}),
        )
        emit(Event("start", index, total, entry, repeat))
        done = {"phase": None, "step": 0}

        def on_progress(
            p: dict[str, Any],
            index: int = index,
            entry: Entry = entry,
            repeat: int = repeat,
            done: dict[str, Any] = done,
        ) -> None:
            done.update(phase=p.get("phase"), step=p.get("step", 0))
            emit(
                Event(
                    "step",
                    index,
                    total,
                    entry,
                    repeat,
                    p.get("phase"),
                    int(p.get("step", 0)),
                    int(p.get("total", 0)),
                )
            )

        try:
            fields = run_job(job, python, on_progress)
        except (KeyboardInterrupt, Interrupted) as exc:
            name = exc.args[0] if isinstance(exc, Interrupted) else "SIGINT"
            fields = {
                "status": "interrupted",
                "error": f"interrupted by {name} during {done['phase'] or 'start-up'}"
                f" (step {done['step']})",
                "elapsed_s": time.time() - job.launched_at,
            }
            result.interrupted = True
        rec = _record(suite, entry, repeat, job, fields, result.run_id, topology, arm, setting)
        writer.write(rec)
        result.add(rec)
        emit(Event("finish", index, total, entry, repeat, record=rec))
        if result.interrupted:
            break
