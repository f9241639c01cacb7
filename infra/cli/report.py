"""``gpulab report``: result records -> a report normalized to a baseline, with verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

VERDICT_STYLE = {"reproduced": "green", "not reproduced": "red", "not measured": "dim"}


def report_cmd(
    inputs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Record files (*.jsonl), results directories, or stack-output summaries "
            "(*.json). Default: ./results.",
            show_default=False,
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="Baseline arm, TOPOLOGY or TOPOLOGY/ARM (default: ironic-bm, else local/native).",
            show_default=False,
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Output directory.")] = Path("results/report"),
    published: Annotated[
        Path | None,
        typer.Option(
            help="Published results YAML (default: workloads/reference/).", show_default=False
        ),
    ] = None,
    link_figures: Annotated[
        bool,
        typer.Option("--link-figures", help="Link the PNGs from the HTML instead of embedding."),
    ] = False,
    title: Annotated[str, typer.Option(help="Report title.")] = "gpulab report",
) -> None:
    """Compare arms normalized to a baseline, judge the published claims, write HTML/MD/CSV."""
    from rich.console import Console

    from infra.cli.errors import UsageError
    from report import build_report
    from report.render import console_report

    if not inputs:
        import os

        from infra.paths import RESULTS_ENV, results_root

        default = results_root()
        if not default.is_dir():
            where = f"${RESULTS_ENV} ({default})" if os.environ.get(RESULTS_ENV) else "./results"
            raise UsageError(
                f"no inputs given and {where} does not exist: name record files (*.jsonl), "
                "results directories or summaries (*.json)"
            )
        inputs = [default]
    if published is not None:  # checked before the output directory is made
        from workloads.inputs import read_input_text

        read_input_text(published, "published results")
    res = build_report(
        inputs,
        out,
        baseline=baseline,
        published=published,
        embed_figures=not link_figures,
        title=title,
    )
    console = Console()
    console.print(console_report(res))  # what ran, then the checkable claims
    for note in res.problems:  # skipped lines, records without a setting (also in the report)
        console.print(f"note: {note}", markup=False, highlight=False)
    if res.excluded:
        reasons = ", ".join(sorted({e.reason for e in res.excluded}))
        console.print(f"left out: {len(res.excluded)} run(s) ({reasons}), listed in the report")
    console.print(f"wrote {res.html}, {res.markdown}, {res.csv} and {len(res.figures)} figure(s)")


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
