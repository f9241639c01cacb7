"""Figures (matplotlib, Agg backend, PNG of FIG_SIZE_PX pixels).

* Absolute, always: per (suite, scenario, data, metric), the median per model and arm in its
  unit (images/sec, elapsed s; kernels: TFLOP/s, GB/s, time per call), axis from 0 or log
  when the bars span LOG_RANGE, whiskers only where n >= 2, n=1 and n=2 marked.
* Ratio, only where a group has two arms or more: bars per arm normalized to the baseline
  (axis from 0), the absolute median above each bar, the 95 % CI as a whisker (not on the
  baseline, 1 by definition), and the paper's normalized value overlaid where a published
  figure matches (a black tick, or a black range where the paper's value is approx) --
  CLOSER 2018 figures 2-9. Scenarios ``shared`` and ``sharing`` get their own charts instead.
* Shared scenario: elapsed (and images/sec) degradation with a background job, per model and
  batch, bars per arm, with the paper's thresholds as dashed lines (CLOSER 2018 figure 10).
* N-way sharing: aggregate throughput ratio and completion-time ratio per arm, with the
  Bitfusion study's 3x and 1.17x as lines.

Every title's second line says what ran (device, image sizes, timed steps); arms are labelled
with the setting their records state. Text from records is plain (no TeX, no control
characters) and file names are safe and bounded (``file_slug``).

Drawing is the report's largest fixed cost (about half a second a figure, most of it text
layout), so with 4 figures or more, more than one CPU and no other Python thread running
(a thread's held lock would stay held in a forked child) the figures are drawn by forked
worker processes (as many as ``$GPULAB_REPORT_THREADS``, report.cpus, at most 4),
which inherit the table instead of receiving it; the PNGs are the same bytes either way.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from report.cpus import report_threads
from report.figures_absolute import absolute_figure
from report.figures_common import (
    BAR_METRICS,
    FIG_SIZE_PX,
    SPECIAL_SCENARIOS,
    UNITS,
    FigureFile,
    file_slug,
    pyplot,
)
from report.figures_ratio import bar_figure
from report.figures_special import shared_figure, sharing_figure
from report.published import Published
from report.table import Row, Table

__all__ = ["FIG_SIZE_PX", "FigureFile", "all_figures"]


def _arms_in(rows: list[Row]) -> int:
    return len({r.arm for r in rows})


Task = tuple[Callable[..., FigureFile | None], tuple[Any, ...]]
PARALLEL_FROM = 4  # figures; fewer are drawn in this process (a fork costs ~10 ms)
MAX_WORKERS = 4
_TASKS: list[Task] = []  # set before the fork; the workers index it
WARM_UP = "gpulab-figures-warm-up"  # the thread of warm_up()


def all_figures(table: Table, pub: Published, out_dir: Path) -> list[FigureFile]:
    """Absolute figures always; ratio figures only where a group has two arms or more."""
    tasks = figure_tasks(table, pub, out_dir)
    return [f for f in draw(tasks, workers()) if f is not None]


def figure_tasks(table: Table, pub: Published, out_dir: Path) -> list[Task]:
    """Every figure to draw, in the report's order, as (function, arguments)."""
    out: list[Task] = []
    groups: dict[tuple[str, str, str, str], list[Row]] = {}
    absolute: dict[tuple[str, str, str, str], list[Row]] = {}  # kernels: no ratio figure
    for r in table.rows:
        if (
            r.metric in BAR_METRICS
            and r.key.scenario not in SPECIAL_SCENARIOS
            and table.kinds.get(r.key) in ("training", "job")
        ):
            groups.setdefault((r.key.suite, r.key.scenario, r.key.data, r.metric), []).append(r)
        elif r.metric in UNITS and table.kinds.get(r.key) == "kernel":
            absolute.setdefault((r.key.suite, r.key.scenario, r.key.data, r.metric), []).append(r)
    for (suite, scenario, data, metric), rows in sorted(absolute.items()):
        title = f"{suite}: {scenario} — {UNITS[metric]}"
        path = out_dir / f"{file_slug(suite, scenario, data, metric)}_absolute.png"
        out.append((absolute_figure, (table, rows, metric, title, path)))
    for (suite, scenario, data, metric), rows in sorted(groups.items()):
        exps = sorted({r.key.experiment for r in rows})
        name = exps[0] if len(exps) == 1 else f"{scenario}, {data or 'default'} data"
        slug = file_slug(suite, scenario, data, metric)
        title = f"{suite}: {name} — {UNITS[metric]}"
        path = out_dir / f"{slug}_absolute.png"
        out.append((absolute_figure, (table, rows, metric, title, path)))
        normed = [r for r in rows if r.norm is not None]
        if _arms_in(normed) >= 2:
            title = f"{suite}: {name} — {BAR_METRICS[metric]} relative to {table.baseline.label}"
            out.append((bar_figure, (table, pub, normed, metric, title, out_dir / f"{slug}.png")))
    out.append((shared_figure, (table, out_dir / "shared_degradation.png")))
    out.append((sharing_figure, (table, out_dir / "sharing.png")))
    return out


def workers() -> int:
    """Processes that draw: report.cpus (``$GPULAB_REPORT_THREADS``), at most MAX_WORKERS."""
    return min(report_threads(), MAX_WORKERS)


def draw(tasks: list[Task], n: int) -> list[FigureFile | None]:
    """Each task's figure, in order: here when there are few, else in ``n`` forked workers."""
    for t in threading.enumerate():  # the report's warm-up (or one a failed report left)
        if t.name == WARM_UP and t is not threading.current_thread():
            t.join()
    if (
        n < 2
        or len(tasks) < PARALLEL_FROM
        or "fork" not in multiprocessing.get_all_start_methods()
        or threading.active_count() > 1  # a thread's held lock (a progress display writing to
        # stdout) would stay held in a forked child
    ):
        return [fn(*args) for fn, args in tasks]
    global _TASKS
    _TASKS = tasks
    pool = multiprocessing.get_context("fork").Pool(
        min(n, len(tasks)), initializer=_default_signals
    )
    try:
        out = pool.map(_draw_one, range(len(tasks)), chunksize=1)
        pool.close()  # the workers leave when the queue is empty: no signal needed
        return out
    except BaseException:
        pool.terminate()  # SIGTERM: the workers' default action ends them wherever they are
        raise
    finally:
        pool.join()
        _TASKS = []


def _default_signals() -> None:
    """A drawing worker's stop signals back to the defaults: a fork inherits the command's
    handlers (infra.signals: raise, or hold back while a journal write runs), with which a
    worker blocked on the pool's queue lock survived the pool's SIGTERM and the report waited
    for it for ever."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def warm_up() -> threading.Thread | None:
    """Start a thread that imports matplotlib and draws one small throwaway figure (fonts,
    text layout, the PNG writer), which :func:`draw` waits for; None where the figures
    will not be drawn by forked workers. The report starts it before reading the records:
    DuckDB releases the GIL while it reads, so the thread runs beside the scan, and the
    workers forked later inherit a warm matplotlib instead of each paying for the first
    figure (about a second)."""
    if workers() < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    t = threading.Thread(target=_warm, name=WARM_UP, daemon=True)
    t.start()
    return t


def _warm() -> None:
    import io

    try:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(3, 2), dpi=40, layout="constrained")
        ax.bar([0, 1], [1.0, 2.0], label="a")
        ax.annotate("1.0", (0, 1.0), xytext=(0, 2), textcoords="offset points", fontsize=7)
        ax.set_xticks([0, 1], ["a", "b"], fontsize=7)
        ax.set_title("t\nu", fontsize=9)
        ax.set_yscale("log")
        ax.legend(fontsize=7)
        fig.savefig(io.BytesIO(), format="png")
        plt.close(fig)
    except Exception:  # a warm-up only: the real figures report their own errors
        return


def _draw_one(i: int) -> FigureFile | None:
    fn, args = _TASKS[i]
    return fn(*args)
