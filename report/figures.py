"""Figures (matplotlib, Agg backend, PNG of FIG_SIZE_PX pixels).

* One figure per (suite, scenario, data, metric) of training records, for images/sec and
  elapsed: bars per arm normalized to the baseline, the absolute median above each bar, the
  95 % CI as a whisker, and the paper's normalized value overlaid where a published figure
  matches (a black tick, or a black range where the paper's value is approx) -- CLOSER 2018
  figures 2-9. Scenarios ``shared`` and ``sharing`` get their own charts instead.
* Shared scenario: elapsed (and images/sec) degradation with a background job, per model and
  batch, bars per arm, with the paper's thresholds as dashed lines (CLOSER 2018 figure 10).
* N-way sharing: aggregate throughput ratio and completion-time ratio per arm, with the
  Bitfusion study's 3x and 1.17x as lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from report.mapping import SETTING_LABELS
from report.published import Published
from report.table import Row, Table

DPI = 100
FIG_SIZE_IN = (10.0, 5.0)
FIG_SIZE_PX = (int(FIG_SIZE_IN[0] * DPI), int(FIG_SIZE_IN[1] * DPI))
SPECIAL_SCENARIOS = ("shared", "sharing")
BAR_METRICS = {"images_per_sec": "imgs/sec", "elapsed_s": "elapsed time"}
COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")
PAPER_NAMES = {"closer2018": "CLOSER 2018"}
MODEL_ORDER = {"inception_v3": 0, "resnet50": 1, "alexnet": 2}  # the paper's x-axis order


@dataclass(frozen=True)
class FigureFile:
    path: Path
    title: str
    caption: str


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "_".join(p for p in parts if p)).strip("-")


def _fmt(v: float) -> str:
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def _arm_name(table: Table, arm: Any) -> str:
    return f"{arm.label} ({SETTING_LABELS.get(table.settings[arm], '?')})"


def _save(fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png")
    _plt().close(fig)


def _category_labels(keys: Sequence[Any]) -> list[str]:
    many_exp = len({k.experiment for k in keys}) > 1
    batches: dict[str, set[int]] = {}
    for k in keys:
        batches.setdefault(k.model, set()).add(k.batch_size)
    out = []
    for k in keys:
        label = k.model
        if len(batches[k.model]) > 1:
            label += f"\nbatch {k.batch_size}"
        if k.variant:
            label += f"\n{k.variant}"
        if many_exp:
            label = (
                k.experiment
                if label == k.model and k.model in k.experiment
                else (f"{k.experiment}\n{label}")
            )
        out.append(label)
    return out


def bar_figure(
    table: Table, pub: Published, rows: list[Row], metric: str, title: str, path: Path
) -> FigureFile:
    plt = _plt()
    keys = sorted(
        {r.key for r in rows},
        key=lambda k: (k.experiment, MODEL_ORDER.get(k.model, 9), k.model, k.batch_size, k.variant),
    )
    arms = [a for a in table.arms if any(r.arm == a for r in rows)]
    index = {(r.key, r.arm): r for r in rows}
    fig, ax = plt.subplots(figsize=FIG_SIZE_IN, dpi=DPI, layout="constrained")
    width = min(0.8 / max(len(arms), 1), 0.3)
    lows, highs, overlaid = [1.0], [1.0], False
    for i, arm in enumerate(arms):
        xs, hs, err_lo, err_hi, absval, tops = [], [], [], [], [], []
        for j, key in enumerate(keys):
            r = index.get((key, arm))
            if r is None or r.norm is None:
                continue
            x = j - width * len(arms) / 2 + width * (i + 0.5)
            xs.append(x)
            hs.append(r.norm)
            err_lo.append(max(r.norm - (r.norm_lo or r.norm), 0.0))
            err_hi.append(max((r.norm_hi or r.norm) - r.norm, 0.0))
            absval.append(r.summary.median)
            lows.append(r.norm_lo or r.norm)
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
                lows.append(lo)
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
        ax.bar(
            xs,
            hs,
            width=width * 0.92,
            color=COLORS[i % len(COLORS)],
            label=_arm_name(table, arm),
            yerr=[err_lo, err_hi],
            capsize=2,
            error_kw={"elinewidth": 0.8, "ecolor": "#333333"},
            zorder=3,
        )
        for x, top, v in zip(xs, tops, absval, strict=True):
            ax.text(
                x,
                top + 0.005,
                _fmt(v),
                ha="center",
                va="bottom",
                fontsize=7,
                rotation=90 if len(arms) * len(keys) > 12 else 0,
                zorder=5,
            )
    bottom = max(0.0, (int(min(lows) * 10) - 1) / 10)
    top = max(highs) + (max(highs) - bottom) * 0.25 + 0.05
    ax.set_ylim(bottom, top)
    ax.axhline(1.0, color="#666666", linewidth=0.8, linestyle="--", zorder=2)
    ax.set_xlim(-0.5, len(keys) - 0.5)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(_category_labels(keys), fontsize=8)
    ax.set_ylabel(f"{BAR_METRICS.get(metric, metric)}\n(normalized to {table.baseline.label})")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=7, loc="upper left", ncol=2, framealpha=0.9)
    _save(fig, path)
    higher = "Lower" if metric == "images_per_sec" else "Higher"
    caption = (
        f"{title}. Bars: median over repetitions normalized to {table.baseline.label}; "
        f"numbers above bars: absolute medians; whiskers: 95 % bootstrap CI. {higher} "
        "values mean more degradation."
        + (" Black: the paper's normalized values." if overlaid else "")
    )
    return FigureFile(path, title, caption)


def _simple_bars(
    table: Table,
    rows_by_panel: list[tuple[str, list[Row]]],
    refs: dict[str, list[Any]],
    title: str,
    path: Path,
    percent: bool,
) -> None:
    plt = _plt()
    panels = [(n, rs) for n, rs in rows_by_panel if rs]
    fig, axes = plt.subplots(
        1, len(panels), figsize=FIG_SIZE_IN, dpi=DPI, layout="constrained", squeeze=False
    )
    for ax, (name, rows) in zip(axes[0], panels, strict=True):
        keys = sorted(
            {r.key for r in rows},
            key=lambda k: (MODEL_ORDER.get(k.model, 9), k.model, -k.batch_size, k.variant),
        )
        arms = [a for a in table.arms if any(r.arm == a for r in rows)]
        index = {(r.key, r.arm): r for r in rows}
        width = min(0.8 / max(len(arms), 1), 0.3)
        for i, arm in enumerate(arms):
            pts = [(j, index[(k, arm)]) for j, k in enumerate(keys) if (k, arm) in index]
            xs = [j - width * len(arms) / 2 + width * (i + 0.5) for j, _ in pts]
            hs = [r.summary.median * (100 if percent else 1) for _, r in pts]
            ax.bar(
                xs,
                hs,
                width=width * 0.92,
                color=COLORS[i % len(COLORS)],
                label=_arm_name(table, arm),
                zorder=3,
            )
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
            [f"{k.model}\nbatch {k.batch_size}" if k.batch_size else k.model for k in keys],
            fontsize=8,
        )
        ax.set_ylabel(name)
        ax.grid(axis="y", alpha=0.3, zorder=0)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=10)
    _save(fig, path)


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


def all_figures(table: Table, pub: Published, out_dir: Path) -> list[FigureFile]:
    out: list[FigureFile] = []
    groups: dict[tuple[str, str, str, str], list[Row]] = {}
    for r in table.rows:
        if (
            r.metric in BAR_METRICS
            and r.key.scenario not in SPECIAL_SCENARIOS
            and table.kinds.get(r.key) in ("training", "job")
            and r.norm is not None
        ):
            groups.setdefault((r.key.suite, r.key.scenario, r.key.data, r.metric), []).append(r)
    for (suite, scenario, data, metric), rows in sorted(groups.items()):
        exps = sorted({r.key.experiment for r in rows})
        name = exps[0] if len(exps) == 1 else f"{scenario}, {data or 'default'} data"
        title = f"{suite}: {name} — {BAR_METRICS[metric]}"
        path = out_dir / f"{_slug(suite, scenario, data, metric)}.png"
        out.append(bar_figure(table, pub, rows, metric, title, path))
    for fn, name in ((shared_figure, "shared_degradation"), (sharing_figure, "sharing")):
        f = fn(table, out_dir / f"{name}.png")
        if f is not None:
            out.append(f)
    return out
