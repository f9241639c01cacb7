"""What every figure shares: size, units, colours, safe text and file names, whiskers,
the "what ran" line under each title. The figures themselves: report.figures_absolute,
report.figures_ratio, report.figures_special; report.figures draws them all."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from report.mapping import SETTING_LABELS
from report.table import Row, Table
from workloads.files import replacing

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


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plain(s: str) -> str:
    """Text from records as plain text: a "$" would start matplotlib's TeX parser; control
    characters (CR, tab, ESC ...) are spaces, newlines stay line breaks."""
    return re.sub(r"[\x00-\x09\x0b-\x1f\x7f]", " ", s).replace("$", r"\$")


def file_slug(*parts: str) -> str:
    """A file name from record fields: safe characters only, at most SLUG_MAX long (a long
    one keeps its start and a hash of the whole, so distinct groups stay distinct)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", "_".join(p for p in parts if p)).strip("-.")
    if len(slug) > SLUG_MAX:
        digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:12]
        slug = f"{slug[: SLUG_MAX - 13]}-{digest}"
    return slug or "figure"


def short_number(v: float) -> str:
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def arm_legend(table: Table, arm: Any) -> str:
    flagged = ", flagged" if table.setting_flags.get(arm) else ""
    return plain(f"{arm.label} ({SETTING_LABELS.get(table.settings[arm], '?')} as stated{flagged})")


def arms_of(table: Table, rows: list[Row]) -> list[Any]:
    """The table's arms that have a row among ``rows``, in the table's order."""
    return [a for a in table.arms if any(r.arm == a for r in rows)]


def bar_groups(table: Table, rows: list[Row]) -> tuple[list[Any], list[Any], dict[Any, Row]]:
    """The categories of a bar figure in the paper's order (experiment, model as MODEL_ORDER,
    batch, variant), its arms, and each (category, arm)'s row."""
    keys = sorted(
        {r.key for r in rows},
        key=lambda k: (k.experiment, MODEL_ORDER.get(k.model, 9), k.model, k.batch_size, k.variant),
    )
    return keys, arms_of(table, rows), {(r.key, r.arm): r for r in rows}


def bar_width(arms: int) -> float:
    """The width of one arm's bar when ``arms`` bars share a category."""
    return min(0.8 / max(arms, 1), 0.3)


def bar_x(category: int, arm: int, arms: int, width: float) -> float:
    """Where arm number ``arm`` of ``arms`` stands in category number ``category``."""
    return category - width * arms / 2 + width * (arm + 0.5)


def draw_bars(
    ax: Any, table: Table, number: int, arm: Any, xs: list[float], hs: list[float], width: float
) -> None:
    """Arm number ``number``'s bars: its colour, its name in the legend."""
    ax.bar(
        xs,
        hs,
        width=width * 0.92,
        color=COLORS[number % len(COLORS)],
        label=arm_legend(table, arm),
        zorder=3,
    )


def ran_note(table: Table, rows: list[Row]) -> str:
    """One line under a figure's title: the device(s), image sizes and steps of its rows;
    sizes below a model's full input size say REDUCED."""
    from report.environment import device_of, full_image_size

    arms = {r.arm for r in rows}
    devices = {device_of(rec) for a in arms for rec in table.records_per_arm.get(a, [])}
    sizes = sorted({s for r in rows for s in r.image_sizes})
    steps = sorted({s for r in rows for s in r.steps})
    reduced = sorted(
        {
            f"{r.key.model} {full} px"
            for r in rows
            for full in [full_image_size(r.key.model)]
            if full is not None and any(s < full for s in r.image_sizes)
        }
    )
    size = ", ".join(f"{s} px" for s in sizes) or "not recorded"
    if reduced:
        size += f" (REDUCED; full: {', '.join(reduced)})"
    return "; ".join(
        [
            ", ".join(sorted(devices)) or "device not recorded",
            "image size " + size,
            "timed steps " + (", ".join(str(s) for s in steps) or "not recorded"),
        ]
    )


def save_png(fig: Any, path: Path) -> None:
    """The PNG whole at ``path`` or, when it cannot be written, the previous file and an
    OutputError naming it (workloads.files)."""
    try:
        with replacing(path) as tmp:
            fig.savefig(tmp, dpi=DPI, format="png")
    finally:
        pyplot().close(fig)


def whiskers(
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


def category_labels(keys: Sequence[Any]) -> list[str]:
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
        out.append(plain(label))
    return out
