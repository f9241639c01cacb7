"""``gpulab report``: result records -> a report normalized to a baseline, with verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infra.cli.options import JsonOpt, add_examples, print_json, shown


def report_cmd(
    inputs: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="INPUT...",
            help="Record files (*.jsonl, or *.parquet as `gpulab export --format parquet` "
            "writes them), results directories holding either, or stack-output summaries "
            "(*.json). Default: ./results.",
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
            "--out-dir", metavar="DIR", help="Output directory [default: results/report]."
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

    Exit 0 when the report is written, 2 on bad input (no records, an unreadable file)."""
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
                f"no inputs given and {where} does not exist: name record files (*.jsonl, "
                "*.parquet), "
                "results directories or summaries (*.json)"
            )
        inputs = [default]
    if published is not None:  # checked before the output directory is made
        from workloads.inputs import read_input_text

        read_input_text(published, "published results")
    out = out_dir or Path("results/report")
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
        print_json(
            {
                "html": str(res.html),
                "markdown": str(res.markdown),
                "csv": str(res.csv),
                "figures": [{"path": str(f.path), "title": f.title} for f in res.figures],
                "verdicts": [
                    {"claim": v.claim, "verdict": v.verdict, "text": v.text} for v in res.verdicts
                ],
                "banner": list(res.banner),
                "problems": list(res.problems),
                "excluded": [
                    {"record_id": e.record_id, "reason": e.reason, "detail": e.detail}
                    for e in res.excluded
                ],
            }
        )
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
