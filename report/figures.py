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
characters) and file names are safe and bounded (``_slug``).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from report.figures_absolute import absolute_figure
from report.figures_common import (
    BAR_METRICS,
    FIG_SIZE_PX,
    SPECIAL_SCENARIOS,
    UNITS,
    FigureFile,
    _slug,
)
from report.figures_ratio import bar_figure
from report.figures_special import shared_figure, sharing_figure
from report.published import Published
from report.table import Row, Table

__all__ = ["FIG_SIZE_PX", "FigureFile", "all_figures", "draw"]


def _arms_in(rows: list[Row]) -> int:
    return len({r.arm for r in rows})


Job = tuple[Callable[..., FigureFile | None], tuple[Any, ...]]
PARALLEL_MIN = 6  # fewer figures are drawn in this process: a worker's start costs more
_JOBS: list[Job] = []  # the figures the forked workers draw (inherited, not pickled)


def _draw(i: int) -> FigureFile | None:
    fn, args = _JOBS[i]
    return fn(*args)


def _workers(n: int) -> int:
    """How many processes draw ``n`` figures: the CPUs this process may use (at most
    GPULAB_REPORT_THREADS, the report's DuckDB threads), 1 where fork is not available."""
    if n < PARALLEL_MIN or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    limit = os.environ.get("GPULAB_REPORT_THREADS")
    return max(1, min(n, cpus or 1, int(limit) if limit else n))


def draw(jobs: list[Job]) -> list[FigureFile | None]:
    """Each job's figure, in the jobs' order. Matplotlib draws in one process at a time
    (about half a second of CPU per figure, whatever the number of records), so many figures
    are shared out among forked workers, one per CPU; each writes its own PNG."""
    workers = _workers(len(jobs))
    if workers == 1:
        return [fn(*args) for fn, args in jobs]
    from report.figures_common import _plt

    _plt()  # matplotlib imported once, before the fork
    _JOBS[:] = jobs
    try:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            return list(pool.map(_draw, range(len(jobs))))
    finally:
        _JOBS.clear()


def all_figures(table: Table, pub: Published, out_dir: Path) -> list[FigureFile]:
    """Absolute figures always; ratio figures only where a group has two arms or more."""
    jobs: list[Job] = []
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
        path = out_dir / f"{_slug(suite, scenario, data, metric)}_absolute.png"
        jobs.append((absolute_figure, (table, rows, metric, title, path)))
    for (suite, scenario, data, metric), rows in sorted(groups.items()):
        exps = sorted({r.key.experiment for r in rows})
        name = exps[0] if len(exps) == 1 else f"{scenario}, {data or 'default'} data"
        slug = _slug(suite, scenario, data, metric)
        title = f"{suite}: {name} — {UNITS[metric]}"
        path = out_dir / f"{slug}_absolute.png"
        jobs.append((absolute_figure, (table, rows, metric, title, path)))
        normed = [r for r in rows if r.norm is not None]
        if _arms_in(normed) >= 2:
            title = f"{suite}: {name} — {BAR_METRICS[metric]} relative to {table.baseline.label}"
            jobs.append((bar_figure, (table, pub, normed, metric, title, out_dir / f"{slug}.png")))
    for fn, name in ((shared_figure, "shared_degradation"), (sharing_figure, "sharing")):
        jobs.append((fn, (table, out_dir / f"{name}.png")))
    return [f for f in draw(jobs) if f is not None]
