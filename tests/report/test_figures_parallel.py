"""Figures drawn by forked worker processes (report/figures.py ``draw``) are the figures drawn in
the report's own process: the same files, titles, captions, order and bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from report import build_report
from report import figures as figures_mod
from report.figures import FigureFile
from tests.report import synth


def _report(
    tmp: Path, threads: str, monkeypatch: pytest.MonkeyPatch, src: Path
) -> list[FigureFile]:
    monkeypatch.setenv("GPULAB_REPORT_THREADS", threads)
    return build_report([src.parent], tmp / f"out-{threads}").figures


def test_parallel_figures_are_the_same_bytes_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = synth.write(
        tmp_path / "in" / "records.jsonl",
        [r for r in synth.closer() if r["experiment"].startswith("single")],
    )
    drawn_by: list[int] = []
    real_draw = figures_mod.draw

    def spy(tasks: list[Any], n: int) -> list[FigureFile | None]:
        drawn_by.append(n)
        return real_draw(tasks, n)

    monkeypatch.setattr(figures_mod, "draw", spy)
    one = _report(tmp_path, "1", monkeypatch, src)
    two = _report(tmp_path, "2", monkeypatch, src)
    assert drawn_by == [1, 2]
    assert len(one) >= figures_mod.PARALLEL_FROM  # so the second report really forked
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
    monkeypatch.setenv("GPULAB_REPORT_THREADS", "0")  # not a count: the CPUs, capped
    assert 1 <= figures_mod.workers() <= figures_mod.MAX_WORKERS


def test_an_error_in_a_worker_reaches_the_caller() -> None:
    def boom(x: int) -> None:
        raise ValueError(f"figure {x} failed")

    tasks = [(boom, (i,)) for i in range(figures_mod.PARALLEL_FROM)]
    with pytest.raises(ValueError, match="figure 0 failed"):
        figures_mod.draw(tasks, 2)  # type: ignore[arg-type]


def test_with_another_thread_running_the_figures_are_drawn_here() -> None:
    """A progress display's thread may hold the stdout lock at the fork: no fork then."""
    import os
    import threading

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
    figures_mod.draw(tasks, 2)  # type: ignore[arg-type]  # forked: nothing comes back here
    assert len(pids) == figures_mod.PARALLEL_FROM
