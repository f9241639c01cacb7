"""``gpulab compare``: two runs (or two periods) side by side, fingerprint and throughput."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infra.cli.options import JsonOpt, add_examples


def compare_cmd(
    run_a: Annotated[
        str | None,
        typer.Argument(
            help="Run id, record file (*.jsonl, *.parquet) or results directory (A).",
            show_default=False,
        ),
    ] = None,
    run_b: Annotated[
        str | None,
        typer.Argument(
            help="Run id, record file (*.jsonl, *.parquet) or results directory (B).",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="DATE",
            help="Compare by date: records started before DATE (A) against those from DATE on "
            "(B), read from --inputs.",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until", metavar="DATE", help="With --since: B ends before DATE.", show_default=False
        ),
    ] = None,
    inputs: Annotated[
        list[Path] | None,
        typer.Option(
            "--inputs",
            metavar="PATH",
            help="With --since: record files (*.jsonl, *.parquet) or directories (default: the "
            "results root).",
            show_default=False,
        ),
    ] = None,
    pool: Annotated[
        bool,
        typer.Option("--pool", help="Pool the records of several runs within a side."),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Two runs (or two periods) side by side: fingerprint and throughput per paired group.

    For each group (suite, experiment, model, scenario, batch) and arm found on both sides:
    the medians, the ratio B / A with its 95 % bootstrap interval, and whether the change is
    significant. Exit 0 when at least one group pairs, 1 when none does (the line says why:
    the arms or the groups differ, or their settings do), 2 on bad input."""
    from infra.errors import UsageError
    from infra.paths import results_root
    from report.compare import by_date, compare, load_side, parse_date

    root = results_root()
    if since is not None:
        if run_a or run_b:
            raise UsageError("give RUN_A RUN_B or --since DATE, not both")
        start = parse_date("--since", since)
        end = parse_date("--until", until) if until else None
        a, b = by_date(list(inputs or [root]), start, end)
        if not a or not b:
            raise UsageError(
                f"--since {since}: {len(a)} record(s) before and {len(b)} from then on; "
                "both sides need records"
            )
        res = compare(f"before {since}", a, f"from {since}" + (f" until {until}" if until else ""),
                      b, pool)  # fmt: skip
    else:
        if not run_a or not run_b:
            raise UsageError("name two runs (RUN_A RUN_B) or a date (--since DATE)")
        la, a = load_side(run_a, root)
        lb, b = load_side(run_b, root)
        res = compare(la, a, lb, b, pool)
    if json_out:
        from infra.cli import output

        if res.unpaired:
            output.emit_failure(res.as_json(), res.unpaired, 1)
            raise typer.Exit(1)
        output.emit(res.as_json())
        return
    _print(res)
    if res.unpaired:
        from infra.cli.errors import fail

        fail(res.unpaired)
        raise typer.Exit(1)


def _print(res: object) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from report.compare import Comparison

    assert isinstance(res, Comparison)
    console = Console()
    console.print(Text(f"A: {res.a_label} ({res.a_records} records, runs {', '.join(res.a_runs)})"))
    console.print(Text(f"B: {res.b_label} ({res.b_records} records, runs {', '.join(res.b_runs)})"))
    if res.fingerprint:
        fp = Table(title="Environment differences")
        for col in ("field", "A", "B"):
            fp.add_column(col)
        for f, a, b in res.fingerprint:
            fp.add_row(Text(f), Text(a), Text(b))
        console.print(fp)
    else:
        console.print("Environment: no difference in the fingerprints")
    if not res.changes:
        return
    t = Table(title="Throughput per paired group (B / A)")
    for col in ("group", "arm", "metric", "n A", "n B", "median A", "median B", "B/A",
                "95 % CI", "significant"):  # fmt: skip
        t.add_column(col)
    for c in res.changes:
        ci = f"[{c.lo:.3f}, {c.hi:.3f}]" if c.lo is not None and c.hi is not None else "—"
        sig = "yes" if c.significant else (c.note or "no")
        t.add_row(
            Text(f"{c.key.suite}/{c.key.experiment} {c.key.label()}"),
            Text(c.arm.label),
            Text(c.metric),
            str(c.n_a),
            str(c.n_b),
            f"{c.median_a:.4g}" if c.median_a is not None else "—",
            f"{c.median_b:.4g}" if c.median_b is not None else "—",
            f"{c.ratio:.3f}" if c.ratio is not None else "—",
            ci,
            Text(sig),
        )
    console.print(t)
    console.print(Text(f"method: {res.method}"))


def register(app: typer.Typer) -> None:
    app.command("compare")(
        add_examples(
            compare_cmd,
            [
                "gpulab compare 20261101T0900Z-a1b2c3 20261108T0900Z-d4e5f6",
                "gpulab compare results/old.jsonl results/new.jsonl --json",
                "gpulab compare --since 2026-11-01 --until 2026-11-08",
            ],
        )
    )
