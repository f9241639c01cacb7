"""``gpulab export``: records to Parquet or OpenMetrics text, optionally to a Pushgateway."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infra.cli.options import add_examples


def export_cmd(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            help="Record files (*.jsonl), results directories or summaries.", show_default=False
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="parquet|openmetrics",
            help="parquet: one row per record; openmetrics: medians per run, group "
            "and arm as gauges.",
        ),
    ] = "parquet",
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="FILE", help="Output file.", show_default=False),
    ] = None,
    pushgateway: Annotated[
        str | None,
        typer.Option(
            "--pushgateway",
            metavar="URL",
            help="Also push the gauges to this Prometheus Pushgateway (job gpulab).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write the records' table (Parquet) or their medians (OpenMetrics) to --out FILE."""
    from infra.errors import UsageError
    from report.export import FORMATS, export, push
    from report.load import load_records

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    if out is None and pushgateway is None:
        raise UsageError("--out FILE is required (or --pushgateway URL)")
    problems: list[str] = []
    if out is not None:
        n = export(inputs, fmt, out, problems)
        typer.echo(f"wrote {n} record(s) to {out} ({fmt})", err=True)
    if pushgateway is not None:
        push(load_records(inputs, []), pushgateway)
        typer.echo(f"pushed to {pushgateway}", err=True)
    for note in problems:
        typer.echo(f"note: {note}", err=True)


def register(app: typer.Typer) -> None:
    app.command("export")(
        add_examples(
            export_cmd,
            [
                "gpulab export results --format parquet --out results.parquet",
                "gpulab export results/local --format openmetrics --out gpulab.prom",
                "gpulab export results --format openmetrics --out m.txt "
                "--pushgateway http://pushgateway:9091",
            ],
        )
    )
