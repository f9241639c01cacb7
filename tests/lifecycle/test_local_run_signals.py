"""``gpulab run local`` stopped by a signal, as a user (or a batch system) stops it: the runner
child ends with gpulab, whatever signal gpulab gets, and the exit code is the signal's
(143 for SIGTERM, 130 for Ctrl-C, 129 when the terminal closes); the records finished so far
stay."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.study.cli import LONG_SUITE, descendants, gpulab_argv, start, wait_gone, wait_measuring

pytestmark = [pytest.mark.slow, pytest.mark.tf]


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)]
)
def test_a_stop_signal_ends_the_runner_with_gpulab(tmp_path: Path, sig: int, code: int) -> None:
    results = tmp_path / "results"
    argv = gpulab_argv(
        "run", "local", "--suite", str(LONG_SUITE), "--no-docker", "--no-report",
        "--results-dir", str(results),
    )  # fmt: skip
    proc = start(argv, tmp_path)
    try:
        wait_measuring(proc)
        tree = descendants(proc.pid)
        proc.send_signal(sig)  # to gpulab alone (`kill <pid>`), not to its process group
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = wait_gone(tree, 5)
    name = signal.Signals(sig).name
    print(f"\n[run local, {name}] exit {proc.returncode}; left {left}; {err.strip()}")
    assert proc.returncode == code, err[-2000:]
    assert left == []
    assert "Traceback" not in err
    (records,) = (results / "local").glob("*.jsonl")
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gpulab: error: run {records.stem} ")
    assert f"interrupted by {name}: the runner stopped; " in lines[0]
    assert lines[0].endswith(f"record(s) kept in {records}")
