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

import hashlib
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
UNITS = {
    "images_per_sec": "images/sec",
    "elapsed_s": "elapsed time (s)",
    "tflops": "TFLOP/s",  # kernel records: absolute figures only
    "gbps": "GB/s",
    "time_per_call_s": "time per call (s)",
}
SLUG_MAX = 100  # figure file names: well under the 255 bytes a file name may have
LOG_RANGE = 50.0  # an absolute axis goes log when its largest bar is this many times the smallest
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


def _txt(s: str) -> str:
    """Text from records as plain text: a "$" would start matplotlib's TeX parser; control
    characters (CR, tab, ESC ...) are spaces, newlines stay line breaks."""
    return re.sub(r"[\x00-\x09\x0b-\x1f\x7f]", " ", s).replace("$", r"\$")


def _slug(*parts: str) -> str:
    """A file name from record fields: safe characters only, at most SLUG_MAX long (a long
    one keeps its start and a hash of the whole, so distinct groups stay distinct)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", "_".join(p for p in parts if p)).strip("-.")
    if len(slug) > SLUG_MAX:
        digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:12]
        slug = f"{slug[: SLUG_MAX - 13]}-{digest}"
    return slug or "figure"


def _fmt(v: float) -> str:
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def _arm_name(table: Table, arm: Any) -> str:
    flagged = ", flagged" if table.setting_flags.get(arm) else ""
    return _txt(f"{arm.label} ({SETTING_LABELS.get(table.settings[arm], '?')} as stated{flagged})")


def _ran_note(table: Table, rows: list[Row]) -> str:
    """One line under a figure's title: the device(s), image sizes and steps of its rows."""
    from report.environment import device_of

    arms = {r.arm for r in rows}
    devices = {device_of(rec) for a in arms for rec in table.records_per_arm.get(a, [])}
    sizes = sorted({s for r in rows for s in r.image_sizes})
    steps = sorted({s for r in rows for s in r.steps})
    return "; ".join(
        [
            ", ".join(sorted(devices)) or "device not recorded",
            "image size " + (", ".join(f"{s} px" for s in sizes) or "not recorded"),
            "timed steps " + (", ".join(str(s) for s in steps) or "not recorded"),
        ]
    )


def _save(fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png")
    _plt().close(fig)


def _whiskers(
    ax: Any,
    xs: list[float],
    mids: list[float],
    los: list[float],
    his: list[float],
    ns: list[int],
    draw: bool = True,
) -> None:
    """95 % CI whiskers where there are two values or more; a bar of one value gets "n=1"
    at its foot instead of a zero-width whisker that would look measured."""
    pts = [
        (x, m, lo, hi)
        for x, m, lo, hi, n in zip(xs, mids, los, his, ns, strict=True)
        if n > 1 and draw
    ]
    if pts:
        ax.errorbar(
            [p[0] for p in pts],
            [p[1] for p in pts],
            yerr=[[max(p[1] - p[2], 0.0) for p in pts], [max(p[3] - p[1], 0.0) for p in pts]],
            fmt="none",
            ecolor="#333333",
            elinewidth=0.8,
            capsize=2,
            zorder=4,
        )
    for x, n in zip(xs, ns, strict=True):
        if n < 3:
            ax.annotate(
                f"n={n}",
                (x, 0),
                xycoords=("data", "axes fraction"),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
                color="#8a1c1c",
                fontweight="bold",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1},
                zorder=6,
            )


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
        out.append(_txt(label))
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
    highs, overlaid = [1.0], False
    for i, arm in enumerate(arms):
        xs, hs, err_lo, err_hi, absval, tops, ns = [], [], [], [], [], [], []
        for j, key in enumerate(keys):
            r = index.get((key, arm))
            if r is None or r.norm is None:
                continue
            x = j - width * len(arms) / 2 + width * (i + 0.5)
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
        ax.bar(
            xs,
            hs,
            width=width * 0.92,
            color=COLORS[i % len(COLORS)],
            label=_arm_name(table, arm),
            zorder=3,
        )
        # the baseline over itself is 1 by definition: no whisker, it would look measured
        _whiskers(ax, xs, hs, err_lo, err_hi, ns, draw=arm != table.baseline)
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
    top = max(highs) * 1.25 + 0.05
    ax.set_ylim(0.0, top)  # from 0: a cut axis makes small differences look large
    ax.axhline(1.0, color="#666666", linewidth=0.8, linestyle="--", zorder=2)
    ax.set_xlim(-0.5, len(keys) - 0.5)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(_category_labels(keys), fontsize=8)
    ax.set_ylabel(
        _txt(f"{BAR_METRICS.get(metric, metric)} / {table.baseline.label}'s\n(ratio, 1 = baseline)")
    )
    ax.set_title(_txt(f"{title}\n{_ran_note(table, rows)}"), fontsize=9)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=7, loc="upper left", ncol=2, framealpha=0.9)
    _save(fig, path)
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


def absolute_figure(
    table: Table, rows: list[Row], metric: str, title: str, path: Path
) -> FigureFile:
    """Medians in their unit per model and arm: drawn for any number of arms, from 0 (log
    when the bars span LOG_RANGE or more), n=1 and n=2 marked, whiskers only where n >= 2."""
    plt = _plt()
    keys = sorted(
        {r.key for r in rows},
        key=lambda k: (k.experiment, MODEL_ORDER.get(k.model, 9), k.model, k.batch_size, k.variant),
    )
    arms = [a for a in table.arms if any(r.arm == a for r in rows)]
    index = {(r.key, r.arm): r for r in rows}
    fig, ax = plt.subplots(figsize=FIG_SIZE_IN, dpi=DPI, layout="constrained")
    width = min(0.8 / max(len(arms), 1), 0.3)
    meds = [r.summary.median for r in rows if r.summary.median > 0]
    log = bool(meds) and max(meds) / min(meds) >= LOG_RANGE
    for i, arm in enumerate(arms):
        pts = [(j, index[(k, arm)]) for j, k in enumerate(keys) if (k, arm) in index]
        xs = [j - width * len(arms) / 2 + width * (i + 0.5) for j, _ in pts]
        hs = [r.summary.median for _, r in pts]
        ax.bar(
            xs,
            hs,
            width=width * 0.92,
            color=COLORS[i % len(COLORS)],
            label=_arm_name(table, arm),
            zorder=3,
        )
        _whiskers(
            ax,
            xs,
            hs,
            [r.summary.ci_lo for _, r in pts],
            [r.summary.ci_hi for _, r in pts],
            [r.summary.n for _, r in pts],
        )
        for x, (_, r) in zip(xs, pts, strict=True):
            ax.annotate(
                _fmt(r.summary.median),
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
        _category_labels(keys),
        fontsize=7 if crowded else 8,
        rotation=30 if crowded else 0,
        ha="right" if crowded else "center",
    )
    unit = UNITS.get(metric, metric)
    ax.set_ylabel(_txt(f"{unit}, median" + (" (log scale)" if log else "")))
    ax.set_title(_txt(f"{title}\n{_ran_note(table, rows)}"), fontsize=9)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=7, loc="upper left", ncol=2, framealpha=0.9)
    _save(fig, path)
    caption = (
        f"{title}. Bars: median over repetitions in {unit}, per arm (the setting each arm's "
        "records state); numbers: the medians; whiskers: 95 % bootstrap CI where n >= 2; n=1 "
        "and n=2 are marked at the foot of the bar."
        + (" Log scale: the values span more than 50x." if log else " Axis from 0.")
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
            [_txt(f"{k.model}\nbatch {k.batch_size}" if k.batch_size else k.model) for k in keys],
            fontsize=8,
        )
        ax.set_ylabel(_txt(name))
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


def _arms_in(rows: list[Row]) -> int:
    return len({r.arm for r in rows})


def all_figures(table: Table, pub: Published, out_dir: Path) -> list[FigureFile]:
    """Absolute figures always; ratio figures only where a group has two arms or more."""
    out: list[FigureFile] = []
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
        out.append(absolute_figure(table, rows, metric, title, path))
    for (suite, scenario, data, metric), rows in sorted(groups.items()):
        exps = sorted({r.key.experiment for r in rows})
        name = exps[0] if len(exps) == 1 else f"{scenario}, {data or 'default'} data"
        slug = _slug(suite, scenario, data, metric)
        title = f"{suite}: {name} — {UNITS[metric]}"
        out.append(absolute_figure(table, rows, metric, title, out_dir / f"{slug}_absolute.png"))
        normed = [r for r in rows if r.norm is not None]
        if _arms_in(normed) >= 2:
            title = f"{suite}: {name} — {BAR_METRICS[metric]} relative to {table.baseline.label}"
            out.append(bar_figure(table, pub, normed, metric, title, out_dir / f"{slug}.png"))
    for fn, name in ((shared_figure, "shared_degradation"), (sharing_figure, "sharing")):
        f = fn(table, out_dir / f"{name}.png")
        if f is not None:
            out.append(f)
    return out
