"""Absolute figures, always: the median per model and arm in its unit, axis from 0 (or log
where the bars span LOG_RANGE), whiskers only where n >= 2."""

from __future__ import annotations

from pathlib import Path

from report.figures_common import (
    DPI,
    FIG_SIZE_IN,
    LOG_RANGE,
    UNITS,
    FigureFile,
    bar_groups,
    bar_width,
    bar_x,
    category_labels,
    draw_bars,
    plain,
    pyplot,
    ran_note,
    save_png,
    short_number,
    whiskers,
)
from report.table import Row, Table


def absolute_figure(
    table: Table, rows: list[Row], metric: str, title: str, path: Path
) -> FigureFile:
    """Medians in their unit per model and arm: drawn for any number of arms, from 0 (log
    when the bars span LOG_RANGE or more), n=1 and n=2 marked, whiskers only where n >= 2."""
    plt = pyplot()
    keys, arms, index = bar_groups(table, rows)
    fig, ax = plt.subplots(figsize=FIG_SIZE_IN, dpi=DPI, layout="constrained")
    width = bar_width(len(arms))
    meds = [r.summary.median for r in rows if r.summary.median > 0]
    log = bool(meds) and max(meds) / min(meds) >= LOG_RANGE
    for i, arm in enumerate(arms):
        pts = [(j, index[(k, arm)]) for j, k in enumerate(keys) if (k, arm) in index]
        xs = [bar_x(j, i, len(arms), width) for j, _ in pts]
        hs = [r.summary.median for _, r in pts]
        draw_bars(ax, table, i, arm, xs, hs, width)
        whiskers(
            ax,
            xs,
            hs,
            [r.summary.ci_lo for _, r in pts],
            [r.summary.ci_hi for _, r in pts],
            [r.summary.n for _, r in pts],
        )
        for x, (_, r) in zip(xs, pts, strict=True):
            ax.annotate(
                short_number(r.summary.median),
                (x, max(r.summary.ci_hi, r.summary.median)),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
                zorder=5,
            )
    tallest = max([r.summary.ci_hi for r in rows] + [r.summary.median for r in rows] + [0.0])
    if log:
        ax.set_yscale("log")
        ax.set_ylim(min(meds) / 2, tallest * 3)
    else:
        ax.set_ylim(0.0, tallest * 1.2 if tallest > 0 else 1.0)
    ax.set_xlim(-0.5, len(keys) - 0.5)
    ax.set_xticks(range(len(keys)))
    crowded = len(keys) > 6
    ax.set_xticklabels(
        category_labels(keys),
        fontsize=7 if crowded else 8,
        rotation=30 if crowded else 0,
        ha="right" if crowded else "center",
    )
    unit = UNITS.get(metric, metric)
    ax.set_ylabel(plain(f"{unit}, median" + (" (log scale)" if log else "")))
    ax.set_title(plain(f"{title}\n{ran_note(table, rows)}"), fontsize=9)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=7, loc="upper left", ncol=2, framealpha=0.9)
    save_png(fig, path)
    caption = (
        f"{title}. Bars: median over repetitions in {unit}, per arm (the setting each arm's "
        "records state); numbers: the medians; whiskers: 95 % bootstrap CI where n >= 2; n=1 "
        "and n=2 are marked at the foot of the bar."
        + (" Log scale: the values span more than 50x." if log else " Axis from 0.")
    )
    return FigureFile(path, title, caption)
