"""Killing a running suite: ``kill -9`` loses no finished record; SIGTERM keeps the finished
ones and writes the running one as ``interrupted``. Real processes, real TensorFlow; each with
the measuring processes started as their own interpreters (``exec``) and forked from the
run's zygote (``fork``, workloads/zygote.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.parts import REPO
from workloads.records import iter_records

pytestmark = [pytest.mark.tf, pytest.mark.slow]


START = pytest.mark.parametrize("start", ["exec", "fork"])


def start_suite(tmp_path: Path, start: str) -> tuple[subprocess.Popen, Path]:
    quick = {"model": "mnist_cnn", "batch": 16, "steps": 3, "warmup": 1, "repeats": 1}
    suite = tmp_path / "kill.yaml"
    suite.write_text(
        yaml.safe_dump(
            {
                "process_start": start,
                "experiments": [
                    {"experiment": "quick-1", **quick},
                    {"experiment": "quick-2", **quick},
                    {"experiment": "long", **quick, "steps": 1_000_000, "timeout_s": 300},
                    {"experiment": "never", **quick},
                ],
            }
        )
    )
    out = tmp_path / "records.jsonl"
    tmp = tmp_path / "tmp"  # kill -9 leaves the running job's temporary directory behind
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "workloads", "bench", "--suite", str(suite), "--out", str(out)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    return proc, out


def wait_for(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "Z"  # a zombie is dead too


def measuring(pid: int) -> list[int]:
    """The runner's measuring processes: its children (exec), or its zygote's (fork)."""
    kids = children(pid)
    if len(kids) == 1 and b"_zygote" in Path(f"/proc/{kids[0]}/cmdline").read_bytes():
        return children(kids[0])
    return kids


def running_long_child(proc: subprocess.Popen, out: Path) -> int:
    wait_for(lambda: lines(out) >= 2, 120, "two finished records")
    wait_for(lambda: measuring(proc.pid) != [], 30, "the third measurement's process")
    (child,) = measuring(proc.pid)
    time.sleep(2.0)  # let it get going (model build, steps)
    return child


@START
def test_kill_9_loses_no_finished_record(tmp_path, start):
    proc, out = start_suite(tmp_path, start)
    try:
        child = running_long_child(proc, out)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        records = list(iter_records(out, strict=True))  # every line a whole valid record
        assert [r["experiment"] for r in records] == ["quick-1", "quick-2"]
        assert all(r["status"] == "ok" for r in records)
        wait_for(lambda: gone(child), 15, "the orphaned measurement process to die")
        # the job's directory stays (its parent was killed): the measuring process's own
        # temporary files (autograph's modules) are in it, not beside it
        assert [p.name[:11] for p in (tmp_path / "tmp").iterdir()] == ["gpulab-job-"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@START
def test_sigterm_keeps_records_and_marks_the_running_one(tmp_path, start):
    proc, out = start_suite(tmp_path, start)
    try:
        child = running_long_child(proc, out)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
        assert rc == 130, proc.stderr.read() if proc.stderr else ""
        records = list(iter_records(out, strict=True))
        assert [r["experiment"] for r in records] == ["quick-1", "quick-2", "long"]
        assert [r["status"] for r in records] == ["ok", "ok", "interrupted"]
        assert "SIGTERM" in records[2]["error"]
        assert records[2]["elapsed_s"] > 2
        assert gone(child)
        assert list((tmp_path / "tmp").iterdir()) == []  # the job's temporary directory too
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
