"""The scenarios with their own charts: shared (degradation with a background job, CLOSER
2018 figure 10) and N-way sharing (aggregate throughput and completion-time ratios)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from report.figures_common import (
    DPI,
    FIG_SIZE_IN,
    MODEL_ORDER,
    FigureFile,
    arms_of,
    bar_width,
    bar_x,
    draw_bars,
    plain,
    pyplot,
    save_png,
)
from report.table import Row, Table


def _simple_bars(
    table: Table,
    rows_by_panel: list[tuple[str, list[Row]]],
    refs: dict[str, list[Any]],
    title: str,
    path: Path,
    percent: bool,
) -> None:
    plt = pyplot()
    panels = [(n, rs) for n, rs in rows_by_panel if rs]
    fig, axes = plt.subplots(
        1, len(panels), figsize=FIG_SIZE_IN, dpi=DPI, layout="constrained", squeeze=False
    )
    for ax, (name, rows) in zip(axes[0], panels, strict=True):
        keys = sorted(
            {r.key for r in rows},
            key=lambda k: (MODEL_ORDER.get(k.model, 9), k.model, -k.batch_size, k.variant),
        )
        arms = arms_of(table, rows)
        index = {(r.key, r.arm): r for r in rows}
        width = bar_width(len(arms))
        for i, arm in enumerate(arms):
            pts = [(j, index[(k, arm)]) for j, k in enumerate(keys) if (k, arm) in index]
            xs = [bar_x(j, i, len(arms), width) for j, _ in pts]
            hs = [r.summary.median * (100 if percent else 1) for _, r in pts]
            draw_bars(ax, table, i, arm, xs, hs, width)
            for x, h in zip(xs, hs, strict=True):
                ax.text(
                    x,
                    h,
                    f"{h:.1f}%" if percent else f"{h:.2f}",
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    zorder=5,
                )
        tallest = max([0.0] + [r.summary.median * (100 if percent else 1) for r in rows])
        for value, label in refs.get(name, []):
            ax.axhline(value, color="black", linestyle="--", linewidth=0.9, zorder=4)
            ax.text(
                -0.45,
                value,
                label,
                ha="left",
                va="bottom",
                fontsize=7,
                zorder=6,
                clip_on=True,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
            )
            tallest = max(tallest, value)
        ax.set_ylim(0, tallest * 1.4 if tallest > 0 else 1)
        ax.set_xlim(-0.5, len(keys) - 0.5)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(
            [plain(f"{k.model}\nbatch {k.batch_size}" if k.batch_size else k.model) for k in keys],
            fontsize=8,
        )
        ax.set_ylabel(plain(name))
        ax.grid(axis="y", alpha=0.3, zorder=0)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=10)
    save_png(fig, path)


def shared_figure(table: Table, path: Path) -> FigureFile | None:
    panels = [
        (
            "degradation on elapse time (%)",
            [r for r in table.rows if r.metric == "elapsed_degradation"],
        ),
        (
            "degradation on imgs/sec (%)",
            [r for r in table.rows if r.metric == "images_per_sec_degradation"],
        ),
    ]
    if not panels[0][1] and not panels[1][1]:
        return None
    refs = {
        panels[0][0]: [
            (10, "10 % (AlexNet b32, container/VM)"),
            (20, "20 % (batch-32 models)"),
            (30, "30 % (AlexNet b512, over)"),
        ]
    }
    title = "Shared host: degradation with a background job (as CLOSER 2018 fig. 10)"
    _simple_bars(table, panels, refs, title, path, percent=True)
    return FigureFile(
        path,
        title,
        f"{title}. Bars: median degradation over repetitions "
        "(with background / alone - 1); dashed: the paper's thresholds.",
    )


def sharing_figure(table: Table, path: Path) -> FigureFile | None:
    panels = [
        (
            "aggregate throughput ratio",
            [r for r in table.rows if r.metric == "aggregate_throughput_ratio"],
        ),
        ("completion time ratio", [r for r in table.rows if r.metric == "completion_time_ratio"]),
    ]
    if not panels[0][1] and not panels[1][1]:
        return None
    refs = {panels[0][0]: [(3.0, "paper: about 3x")], panels[1][0]: [(1.17, "paper: 1.17x")]}
    title = "N-way GPU sharing: N concurrent jobs against one (Bitfusion study: 4 x 25 %)"
    _simple_bars(table, panels, refs, title, path, percent=False)
    return FigureFile(
        path, title, f"{title}. Bars: medians over repetitions; dashed: the published values."
    )
