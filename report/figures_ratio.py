"""Ratio figures: bars per arm normalized to the baseline, with the paper's values (CLOSER
2018 figures 2-9); drawn only where a group has two arms or more (report.figures)."""

from __future__ import annotations

from pathlib import Path

from report.figures_common import (
    BAR_METRICS,
    DPI,
    FIG_SIZE_IN,
    PAPER_NAMES,
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
from report.published import Published
from report.table import Row, Table


def bar_figure(
    table: Table, pub: Published, rows: list[Row], metric: str, title: str, path: Path
) -> FigureFile:
    plt = pyplot()
    keys, arms, index = bar_groups(table, rows)
    fig, ax = plt.subplots(figsize=FIG_SIZE_IN, dpi=DPI, layout="constrained")
    width = bar_width(len(arms))
    highs, overlaid = [1.0], False
    for i, arm in enumerate(arms):
        xs, hs, err_lo, err_hi, absval, tops, ns = [], [], [], [], [], [], []
        for j, key in enumerate(keys):
            r = index.get((key, arm))
            if r is None or r.norm is None:
                continue
            x = bar_x(j, i, len(arms), width)
            xs.append(x)
            hs.append(r.norm)
            err_lo.append(r.norm_lo if r.norm_lo is not None else r.norm)
            err_hi.append(r.norm_hi if r.norm_hi is not None else r.norm)
            ns.append(r.summary.n)
            absval.append(r.summary.median)
            highs.append(r.norm_hi or r.norm)
            tops.append(max(r.norm_hi or r.norm, r.norm))
            fig_pub = pub.figure_for(key.base_experiment, metric)
            paper = (
                fig_pub.normalized().get(table.settings[arm], {}).get(key.model)
                if fig_pub
                else None
            )
            if paper is not None:
                lo, hi = paper
                highs.append(hi)
                tops[-1] = max(tops[-1], hi)
                label = (
                    None
                    if overlaid
                    else (
                        f"paper ({PAPER_NAMES.get(fig_pub.paper, fig_pub.paper)} fig. "  # type: ignore[union-attr]
                        f"{fig_pub.number}; range = approx)"  # type: ignore[union-attr]
                    )
                )
                overlaid = True
                if lo == hi:
                    ax.plot(
                        [x - width * 0.45, x + width * 0.45],
                        [lo, lo],
                        color="black",
                        linewidth=2.5,
                        label=label,
                        zorder=4,
                    )
                else:
                    xr = x + width * 0.3
                    ax.plot(
                        [xr, xr],
                        [lo, hi],
                        color="black",
                        linewidth=3,
                        label=label,
                        zorder=4,
                        solid_capstyle="butt",
                    )
        if not xs:
            continue
        draw_bars(ax, table, i, arm, xs, hs, width)
        # the baseline over itself is 1 by definition: no whisker, it would look measured
        whiskers(ax, xs, hs, err_lo, err_hi, ns, draw=arm != table.baseline)
        for x, top, v in zip(xs, tops, absval, strict=True):
            ax.text(
                x,
                top + 0.005,
                short_number(v),
                ha="center",
                va="bottom",
                fontsize=7,
                rotation=90 if len(arms) * len(keys) > 12 else 0,
                zorder=5,
            )
    top = max(highs) * 1.25 + 0.05
    ax.set_ylim(0.0, top)  # from 0: a cut axis makes small differences look large
    ax.axhline(1.0, color="#666666", linewidth=0.8, linestyle="--", zorder=2)
    ax.set_xlim(-0.5, len(keys) - 0.5)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(category_labels(keys), fontsize=8)
    ax.set_ylabel(
        plain(
            f"{BAR_METRICS.get(metric, metric)} / {table.baseline.label}'s\n(ratio, 1 = baseline)"
        )
    )
    ax.set_title(plain(f"{title}\n{ran_note(table, rows)}"), fontsize=9)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=7, loc="upper left", ncol=2, framealpha=0.9)
    save_png(fig, path)
    higher = "Lower" if metric == "images_per_sec" else "Higher"
    caption = (
        f"{title}. Bars: median over repetitions normalized to {table.baseline.label}; "
        f"numbers above bars: absolute medians; whiskers: 95 % bootstrap CI where n >= 2 "
        "(none on the baseline, 1 by definition) "
        f"(n=1, n=2 marked at the foot of the bar). {higher} "
        "values mean more degradation."
        + (" Black: the paper's normalized values." if overlaid else "")
    )
    return FigureFile(path, title, caption)
