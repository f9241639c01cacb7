"""Figures drawn by forked worker processes (report/figures.py ``draw``) are the figures drawn in
the report's own process: the same files, titles, captions, order and bytes.

``draw`` does not fork while another Python thread runs. A test process may hold threads that
earlier tests left (a sampler, a server's thread), so the tests that need the fork pretend to
be single-threaded (``threading.active_count`` -> 1) and check, from the pids that drew, that
the figures really came from other processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from infra.signals import deferred, stop_signals
from report import build_report
from report import figures as figures_mod
from report.figures import FigureFile
from tests.report import synth
from workloads.errors import InputError


def _report(
    tmp: Path, threads: str, monkeypatch: pytest.MonkeyPatch, src: Path
) -> list[FigureFile]:
    monkeypatch.setenv("GPULAB_REPORT_THREADS", threads)
    return build_report([src.parent], tmp / f"out-{threads}").figures


def _single_threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threading, "active_count", lambda: 1)


@pytest.mark.integration
def test_parallel_figures_are_the_same_bytes_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = synth.write(
        tmp_path / "in" / "records.jsonl",
        [r for r in synth.closer() if r["experiment"].startswith("single")],
    )
    _single_threaded(monkeypatch)
    pids = tmp_path / "pids"
    real_tasks = figures_mod.figure_tasks

    def noting_pid(fn: Any) -> Any:
        def drawn(*args: Any) -> Any:
            (pids / str(os.getpid())).touch()
            return fn(*args)

        return drawn

    def tasks_spy(*a: Any) -> list[Any]:
        return [(noting_pid(fn), args) for fn, args in real_tasks(*a)]

    monkeypatch.setattr(figures_mod, "figure_tasks", tasks_spy)
    pids.mkdir()
    one = _report(tmp_path, "1", monkeypatch, src)
    assert [p.name for p in pids.iterdir()] == [str(os.getpid())]
    shutil.rmtree(pids)
    pids.mkdir()
    two = _report(tmp_path, "2", monkeypatch, src)
    drawers = {int(p.name) for p in pids.iterdir()}
    assert len(one) >= figures_mod.PARALLEL_FROM
    assert drawers and os.getpid() not in drawers and len(drawers) <= 2  # two forked workers
    assert [(f.path.name, f.title, f.caption) for f in one] == [
        (f.path.name, f.title, f.caption) for f in two
    ]
    for a, b in zip(one, two, strict=True):
        assert a.path.parent != b.path.parent
        assert a.path.read_bytes() == b.path.read_bytes(), a.path.name


def test_workers_follow_the_report_threads_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_REPORT_THREADS", "3")
    assert figures_mod.workers() == 3
    monkeypatch.setenv("GPULAB_REPORT_THREADS", "64")
    assert figures_mod.workers() == figures_mod.MAX_WORKERS
    monkeypatch.delenv("GPULAB_REPORT_THREADS")  # unset: the CPUs, capped
    assert 1 <= figures_mod.workers() <= figures_mod.MAX_WORKERS
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("GPULAB_REPORT_THREADS", bad)
        with pytest.raises(InputError, match=rf"^\$GPULAB_REPORT_THREADS .* got '{bad}'$"):
            figures_mod.workers()


def test_cli_report_with_a_bad_threads_setting_is_one_line_and_builds_nothing(
    tmp_path: Path,
) -> None:
    """As a user runs it: ``GPULAB_REPORT_THREADS=two gpulab report ...``: exit 2, one line
    naming the variable, no output directory made."""
    src = synth.write(tmp_path / "in" / "records.jsonl", synth.closer()[:10])
    env = dict(os.environ, GPULAB_REPORT_THREADS="two")
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("gpulab")), "report", str(src), "--out-dir", "rep"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "$GPULAB_REPORT_THREADS" in lines[0] and "'two'" in lines[0]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (tmp_path / "rep").exists()


def test_an_error_in_a_worker_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    _single_threaded(monkeypatch)

    def boom(x: int) -> None:
        raise ValueError(f"figure {x} failed")

    tasks = [(boom, (i,)) for i in range(figures_mod.PARALLEL_FROM)]
    with pytest.raises(ValueError, match=r"^figure [0-3] failed$"):  # the first that failed
        figures_mod.draw(tasks, 2)  # type: ignore[arg-type]


def _stop_handlers() -> list[Any]:
    return [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]


def test_the_drawing_workers_stop_signals_are_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``gpulab study run`` draws its report under its own stop-signal handlers, inside a block
    that holds signals back (infra.signals): a worker forked with them survived the pool's
    SIGTERM while it waited on the queue's lock, and the study hung after its last unit."""
    _single_threaded(monkeypatch)
    tasks = [(_stop_handlers, ()) for _ in range(figures_mod.PARALLEL_FROM)]
    with stop_signals(), deferred():
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
        got: Any = figures_mod.draw(tasks, 2)  # type: ignore[arg-type]
        here = _stop_handlers()
    assert got == [[signal.SIG_DFL] * 3] * figures_mod.PARALLEL_FROM
    assert here != [signal.SIG_DFL] * 3  # the command's own handlers stay


def test_with_another_thread_running_the_figures_are_drawn_here() -> None:
    """A progress display's thread may hold the stdout lock at the fork: no fork then."""

    pids: list[int] = []
    tasks = [(lambda: pids.append(os.getpid()), ()) for _ in range(figures_mod.PARALLEL_FROM)]
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        figures_mod.draw(tasks, 2)  # type: ignore[arg-type]
    finally:
        stop.set()
        t.join()
    assert pids == [os.getpid()] * figures_mod.PARALLEL_FROM


def test_single_threaded_the_figures_are_drawn_by_forked_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _single_threaded(monkeypatch)
    pids: list[int] = []
    tasks = [(lambda: pids.append(os.getpid()), ()) for _ in range(figures_mod.PARALLEL_FROM)]
    figures_mod.draw(tasks, 2)  # type: ignore[arg-type]
    assert pids == []  # appended in the workers' copies of the list, not here


@pytest.mark.integration
def test_the_warm_up_runs_beside_the_scan_and_is_joined_before_the_fork(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """build_report starts the matplotlib warm-up thread before it reads the records, and
    draw() waits for it, so the workers fork from a process without it."""
    import report.build as build_mod

    src = synth.write(tmp_path / "in" / "records.jsonl", synth.closer()[:60])
    _single_threaded(monkeypatch)
    started: list[threading.Thread | None] = []
    at_fork: list[list[str]] = []
    real_warm, real_context = figures_mod.warm_up, figures_mod.multiprocessing.get_context

    def warm_spy() -> threading.Thread | None:
        started.append(real_warm())
        return started[-1]

    def context_spy(method: str | None = None) -> Any:
        at_fork.append([t.name for t in threading.enumerate()])
        return real_context(method)

    monkeypatch.setattr(build_mod, "warm_up", warm_spy)
    monkeypatch.setattr(figures_mod.multiprocessing, "get_context", context_spy)
    _report(tmp_path, "2", monkeypatch, src)
    (thread,) = started
    assert thread is not None and thread.name == figures_mod.WARM_UP
    assert not thread.is_alive()
    assert at_fork and figures_mod.WARM_UP not in at_fork[0]


def test_no_warm_up_where_the_figures_are_drawn_in_the_report_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GPULAB_REPORT_THREADS", "1")
    assert figures_mod.warm_up() is None
    monkeypatch.setenv("GPULAB_REPORT_THREADS", "2")
    t = figures_mod.warm_up()
    assert t is not None
    t.join(timeout=60)
    assert not t.is_alive()
    import matplotlib

    assert matplotlib.get_backend().lower() == "agg"  # the thread really drew


def test_a_warm_up_left_running_is_finished_before_the_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A report that failed after starting the warm-up leaves it running (its error is not
    held up); the next draw() waits for it rather than fork beside it."""
    _single_threaded(monkeypatch)
    release = threading.Event()
    left = threading.Thread(target=release.wait, name=figures_mod.WARM_UP, daemon=True)
    left.start()
    threading.Timer(0.5, release.set).start()
    pids: list[int] = []
    tasks = [(lambda: pids.append(os.getpid()), ()) for _ in range(figures_mod.PARALLEL_FROM)]
    figures_mod.draw(tasks, 2)  # type: ignore[arg-type]
    assert not left.is_alive()
    assert pids == []  # still drawn by forked workers, after the warm-up ended


def test_a_report_that_fails_waits_for_the_figure_warm_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed report must not exit while the warm-up thread is inside matplotlib (the
    interpreter aborts then: exit -6 instead of the one-line error)."""
    import report.build as build

    started, release = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []

    def warm() -> threading.Thread:
        def body() -> None:
            started.set()
            release.wait(5)

        t = threading.Thread(target=body, daemon=True)
        t.start()
        threads.append(t)
        return t

    def failing_load(*_: object) -> object:
        started.wait(5)
        threading.Timer(0.2, release.set).start()
        raise InputError("no records")

    monkeypatch.setattr(build, "warm_up", warm)
    monkeypatch.setattr(build, "_duckdb", failing_load)
    with pytest.raises(InputError):
        build.build_report([tmp_path / "x.jsonl"], tmp_path / "out")
    assert threads and not threads[0].is_alive()
