"""``gpulab report``: result records -> a report normalized to a baseline, with verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from infra.cli.options import JsonOpt, add_examples, shown


def report_cmd(
    inputs: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="INPUT",
            help="Record files (*.jsonl, or *.parquet as `gpulab export --format parquet` "
            "writes them), results directories holding either, or stack-output summaries "
            "(*.json). Default: the results root ($GPULAB_RESULTS, else ./results).",
            show_default=False,
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            metavar="ARM",
            help="Baseline arm, TOPOLOGY or TOPOLOGY/ARM (default: ironic-bm, else local/native).",
            show_default=False,
        ),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out-dir",
            metavar="DIR",
            help="Where the report goes (default: <results root>/report, the results root "
            "being $GPULAB_RESULTS, else ./results).",
            show_default=False,
        ),
    ] = None,
    published: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Published results YAML (default: workloads/reference/).",
            show_default=False,
        ),
    ] = None,
    link_figures: Annotated[
        bool,
        typer.Option("--link-figures", help="Link the PNGs from the HTML instead of embedding."),
    ] = False,
    title: Annotated[str, typer.Option(metavar="TEXT", help="Report title.")] = "gpulab report",
    json_out: JsonOpt = False,
    pool: Annotated[
        bool, typer.Option("--pool", help="Pool repetitions of several runs on purpose.")
    ] = False,
) -> None:
    """Compare arms normalized to a baseline, judge the published claims, write HTML/MD/CSV.

    With --json, the numbers too: every result row (median, 95 % interval, ratio to the
    baseline and its interval, the estimate a verdict judges) and every claim's verdict with
    its checks. Exit 0 when the report is written, 2 on bad input (no records, an unreadable
    file)."""
    import os

    from rich.console import Console

    from infra.cli.errors import UsageError
    from infra.paths import RESULTS_ENV, results_root
    from report import build_report
    from report.render import console_report

    if not inputs:
        default = results_root()
        if not default.is_dir():
            where = f"${RESULTS_ENV} ({default})" if os.environ.get(RESULTS_ENV) else "./results"
            raise UsageError(
                f"no inputs given and {where} does not exist: name record files (*.jsonl, "
                "*.parquet), "
                "results directories or summaries (*.json)"
            )
        inputs = [default]
    if published is not None:  # checked before the output directory is made
        from workloads.inputs import read_input_text

        read_input_text(published, "published results")
    out = out_dir or results_root() / "report"
    res = build_report(
        inputs,
        out,
        baseline=baseline,
        published=published,
        embed_figures=not link_figures,
        title=title,
        pool=pool,
    )
    if json_out:
        from infra.cli.output import emit

        emit(report_data(res))
        return
    console = Console()
    console.print(console_report(res))  # what ran, then the checkable claims
    for note in res.problems:  # skipped lines, records without a setting (also in the report)
        console.print(shown(f"note: {note}"), markup=False, highlight=False)
    if res.excluded:
        reasons = ", ".join(sorted({e.reason for e in res.excluded}))
        console.print(f"left out: {len(res.excluded)} run(s) ({reasons}), listed in the report")
    console.print(
        shown(f"wrote {res.html}, {res.markdown}, {res.csv} and {len(res.figures)} figure(s)"),
        markup=False,
        highlight=False,
    )


def _pair(lo: float | None, hi: float | None) -> list[float | None] | None:
    return None if lo is None and hi is None else [lo, hi]


def row_data(row: Any) -> dict[str, Any]:
    """One result row (a line of the report's CSV) with its numbers: the median over its
    repetitions and 95 % interval, the ratio to the baseline (``norm``) and its interval, and
    the estimate a verdict judges (the mean of per-unit values and its t interval)."""
    s, k, est = row.summary, row.key, row.est
    interval = est.interval() if est is not None else None
    return {
        "suite": k.suite, "experiment": k.experiment, "model": k.model,
        "scenario": k.scenario, "data": k.data, "batch_size": k.batch_size,
        "variant": k.variant, "image_sizes": list(row.image_sizes), "steps": list(row.steps),
        "arm": row.arm.label, "setting": row.setting, "metric": row.metric,
        "n": s.n, "median": s.median, "ci95": _pair(s.ci_lo, s.ci_hi), "cv": s.cv,
        "cv_flag": s.cv_flag, "baseline_median": row.baseline_median,
        "ratio": row.norm, "ratio_ci95": _pair(row.norm_lo, row.norm_hi),
        "estimate": None if est is None else {
            "value": est.value, "ci95": list(interval) if interval else None, "n": est.n,
            "units": "study repeats" if row.study else "runs",
        },
    }  # fmt: skip


def report_data(res: Any) -> dict[str, Any]:
    """What ``gpulab report --json`` prints (docs/cli-json.schema.json, command report)."""
    from report.claims import verdict_data  # here: gpulab --help imports no report module

    return {
        "out_dir": res.out_dir,
        "html": res.html,
        "markdown": res.markdown,
        "csv": res.csv,
        "baseline": res.table.baseline.label,
        "figures": [{"path": f.path, "title": f.title} for f in res.figures],
        "rows": [row_data(r) for r in res.table.rows],
        "verdicts": [verdict_data(v) for v in res.verdicts],
        "banner": list(res.banner),
        "problems": list(res.problems),
        "excluded": [
            {"record_id": e.record_id, "reason": e.reason, "detail": e.detail} for e in res.excluded
        ],
    }


def register(app: typer.Typer) -> None:
    app.command("report")(
        add_examples(
            report_cmd,
            [
                "gpulab report",
                "gpulab report results/local --baseline local/native --out-dir /tmp/rep",
                "gpulab report results/nova-pci/*.jsonl --json",
            ],
        )
    )
