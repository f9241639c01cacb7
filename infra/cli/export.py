"""``gpulab export``: records to Parquet or OpenMetrics text, optionally to a Pushgateway."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infra.cli.options import add_examples, bounded, shown
from report.pushgateway import DEFAULT_TIMEOUT_S, PASSWORD_ENV, USER_ENV


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
            help="Also push the gauges to this Prometheus Pushgateway (job gpulab). "
            f"Credentials: ${USER_ENV} and ${PASSWORD_ENV}, else ~/.netrc (never in the URL).",
            show_default=False,
        ),
    ] = None,
    push_timeout: Annotated[
        int,
        bounded(
            "--push-timeout",
            1,
            600,
            "Seconds the whole push may take: name lookup, connection and answer",
            metavar="SECONDS",
        ),
    ] = DEFAULT_TIMEOUT_S,
) -> None:
    """Write the records as Parquet, or their medians as OpenMetrics (optionally pushed).

    --format parquet writes one row per record to --out FILE; --format openmetrics the
    medians per run, group and arm as gauges, to --out FILE and/or --pushgateway URL."""
    from infra.errors import UsageError
    from report.export import FORMATS, export, exposition
    from report.load import load_records
    from report.pushgateway import credentials, gateway, push

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    if out is None and pushgateway is None:
        raise UsageError("--out FILE is required (or --pushgateway URL)")
    if pushgateway is not None:  # checked before anything is read or written
        credentials(gateway(pushgateway).host)
    problems: list[str] = []
    if out is not None:
        n = export(inputs, fmt, out, problems)
        typer.echo(shown(f"wrote {n} record(s) to {out} ({fmt})"), err=True)
    if pushgateway is not None:
        records = load_records(inputs, [] if out is not None else problems)
        body = exposition(records, openmetrics=False).encode("utf-8")
        push(body, pushgateway, timeout=push_timeout)
        typer.echo(f"pushed to {gateway(pushgateway).url}", err=True)
    for note in problems:
        typer.echo(shown(f"note: {note}"), err=True)


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
