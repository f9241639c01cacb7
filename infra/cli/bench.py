"""``gpulab bench``: run a suite or one model on this machine, with progress and a results table.

Same options as ``python -m workloads bench`` (see workloads/__main__.py); the runner does the
work, each repetition in its own process. Heavy imports stay inside the command.
"""

from __future__ import annotations

from typing import Any

import typer

from infra.cli.errors import UsageError

BACKENDS = ("tensorflow", "jax", "torch")


def _int_option(name: str, value: str | None) -> int | None:
    """Parse an integer option here, so a bad value is one line naming it (not a click error).

    The ranges (workloads.suites.MAX_*) are checked with the suite, naming the option."""
    from infra.cli.options import int_option

    return int_option(name, value, -(10**18), 10**18)


def register(app: typer.Typer) -> None:
    @app.command(
        "bench",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def bench(
        ctx: typer.Context,
        suite: str | None = typer.Option(None, "--suite", help="suite name or .yaml path"),
        model: str | None = typer.Option(None, "--model", help="one model instead of a suite"),
        batch: str | None = typer.Option(
            None, "--batch", metavar="N", help="per-device batch (at most 65536)"
        ),
        steps: str | None = typer.Option(
            None, "--steps", metavar="T", help="timed steps (100; at most 1000000)"
        ),
        warmup: str | None = typer.Option(
            None, "--warmup", metavar="W", help="warm-up steps (10; at most 100000)"
        ),
        repeats: str | None = typer.Option(
            None,
            "--repeats",
            metavar="R",
            help="repetitions (1; at most 1000, and 10000 measurements in all)",
        ),
        image_size: str | None = typer.Option(
            None, "--image-size", metavar="PX", help="input px (at most 4096)"
        ),
        out: str | None = typer.Option(
            None, "--out", help="JSON Lines file to append to (default results/bench-<run>.jsonl)"
        ),
        topology: str = typer.Option("local", "--topology", help="topology label"),
        arm: str = typer.Option("native", "--arm", help="comparison-arm label"),
        backend: str | None = typer.Option(None, "--backend", help="tensorflow, jax or torch"),
    ) -> None:
        """Measure training throughput (tf_cnn_benchmarks method) and write result records."""
        if ctx.args:
            raise UsageError(f"unknown option or argument {ctx.args[0]!r} for gpulab bench")
        if (suite is None) == (model is None):
            raise UsageError("give exactly one of --suite NAME or --model M")
        if backend is not None and backend not in BACKENDS:
            raise UsageError(f"unknown --backend {backend!r} (known: {', '.join(BACKENDS)})")
        from workloads.bench import run_bench
        from workloads.records import RecordWriter, new_run_id
        from workloads.setting import LOCAL_NATIVE, make_setting
        from workloads.suites import resolve_suite

        chosen = resolve_suite(
            suite,
            model,
            _int_option("--batch", batch),
            _int_option("--steps", steps),
            _int_option("--warmup", warmup),
            _int_option("--repeats", repeats),
            _int_option("--image-size", image_size),
        )
        run_id = new_run_id()
        out_path = out or f"results/bench-{run_id}.jsonl"
        RecordWriter(out_path).close()  # an unwritable --out fails before the progress display
        with _ProgressView(chosen.measurements) as view:
            result = run_bench(
                chosen,
                out_path,
                topology=topology,
                arm=arm,
                backend=backend,
                progress=view.update,
                run_id=run_id,
                setting=make_setting(*LOCAL_NATIVE),
            )
        print_table(result.records, f"{chosen.name} ({result.run_id})")
        typer.echo(f"{len(result.records)} record(s) -> {result.out}", err=True)
        if result.interrupted:
            typer.echo("interrupted: finished records kept", err=True)
        if result.exit_code:
            raise typer.Exit(result.exit_code)


class _ProgressView:
    """A rich progress display: one bar over measurements, one over the running one's steps."""

    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.overall = self.progress.add_task("measurements", total=total)
        self.current = self.progress.add_task("starting", total=1, visible=False)

    def __enter__(self) -> _ProgressView:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def update(self, event: Any) -> None:
        entry = event.entry
        what = (
            entry.experiment
            if entry.model in entry.experiment
            else (f"{entry.experiment} {entry.model}")
        )
        name = f"{what} #{event.repeat}"
        if event.kind == "start":
            self.progress.update(
                self.current,
                description=f"{name}: starting",
                completed=0,
                total=event.entry.warmup + event.entry.steps,
                visible=True,
            )
        elif event.kind == "step":
            done = event.step if event.phase == "warmup" else event.entry.warmup + event.step
            self.progress.update(self.current, description=f"{name}: {event.phase}", completed=done)
        elif event.kind == "finish":
            status = event.record["status"] if event.record else "?"
            self.progress.update(self.current, description=f"{name}: {status}")
            self.progress.advance(self.overall)


def print_table(records: list[dict[str, Any]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("experiment", no_wrap=True)
    table.add_column("model", no_wrap=True)
    for col in ("rep", "batch", "px"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("images/sec", justify="right", no_wrap=True)
    table.add_column("elapsed s", justify="right", no_wrap=True)
    table.add_column("note", no_wrap=True, max_width=48)
    for r in records:
        ips = r.get("images_per_sec")
        elapsed = r.get("elapsed_s")
        style = {"ok": "green", "failed": "red", "interrupted": "yellow"}.get(r["status"], "")
        table.add_row(
            r["experiment"],
            r["model"],
            str(r.get("repeat", "")),
            str(r.get("global_batch", "")),
            str((r.get("params") or {}).get("image_size") or ""),
            f"[{style}]{r['status']}[/{style}]",
            f"{ips:,.1f}" if ips is not None else "-",
            f"{elapsed:.1f}" if elapsed is not None else "-",
            r.get("error") or "",
        )
    console = Console()
    if not console.is_terminal:  # a log or a pipe: do not squeeze the table into 80 columns
        console = Console(width=140)
    console.print(table)
