"""Figures drawn by forked workers (report.figures.draw) are the figures one process draws.

Nothing is mocked except how many workers report.figures._workers grants (set to 1 and to 2
by monkeypatch, so both paths run on any machine); the figures are real matplotlib PNGs of
the paper-like synthetic set, compared pixel by pixel.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from report import figures
from report.build import _duckdb
from report.figures_common import FigureFile
from report.published import load_published
from report.table import Table
from tests.report import synth


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    d = tmp_path_factory.mktemp("records")
    src = synth.write(d / "records.jsonl", synth.paper_like())
    return _duckdb([src], None, False, []).table


def _draw(table: Table, out: Path, workers: int, mp: pytest.MonkeyPatch) -> list[FigureFile]:
    mp.setattr(figures, "_workers", lambda n: workers)
    return figures.all_figures(table, load_published(None), out)


def test_two_workers_draw_the_same_figures_in_the_same_order(
    table: Table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = _draw(table, tmp_path / "one", 1, monkeypatch)
    two = _draw(table, tmp_path / "two", 2, monkeypatch)
    assert len(one) >= figures.PARALLEL_MIN  # enough figures that a report shares them out
    assert [(f.path.name, f.title, f.caption) for f in one] == [
        (f.path.name, f.title, f.caption) for f in two
    ]
    for f in one:
        a = matplotlib.image.imread(f.path)
        b = matplotlib.image.imread(tmp_path / "two" / f.path.name)
        assert a.shape == b.shape and np.array_equal(a, b), f.path.name
    assert not figures._JOBS  # the jobs are dropped once drawn


def test_a_worker_error_reaches_the_caller(tmp_path: Path) -> None:
    def boom(path: Path) -> FigureFile | None:
        raise ValueError(f"cannot draw {path.name}")

    jobs: list[figures.Job] = [
        (boom, (tmp_path / f"{i}.png",)) for i in range(figures.PARALLEL_MIN)
    ]
    with pytest.raises(ValueError, match=r"cannot draw 0\.png"):
        figures.draw(jobs)
    assert not figures._JOBS


def test_few_figures_or_one_thread_stay_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPULAB_REPORT_THREADS", raising=False)
    assert figures._workers(figures.PARALLEL_MIN - 1) == 1
    monkeypatch.setenv("GPULAB_REPORT_THREADS", "1")
    assert figures._workers(16) == 1
    monkeypatch.setenv("GPULAB_REPORT_THREADS", "64")
    assert 1 <= figures._workers(16) <= 16
