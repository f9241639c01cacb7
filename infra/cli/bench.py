"""``gpulab bench``: run a suite or one model on this machine, with progress and a results table.

Same options as ``python -m workloads bench``, generated from ``workloads/bench_options.py``;
the runner does the work, each repetition in its own process. Heavy imports stay inside the
command.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer

from infra.cli.errors import UsageError
from infra.cli.options import add_examples, bench_parameters, with_parameters

EXAMPLES = [
    "gpulab bench --model resnet50 --steps 20 --warmup 2",
    "gpulab bench --suite smoke --out results/smoke.jsonl --json > smoke.json",
    "gpulab bench --model mnist_cnn --keras-backend jax",
]


def bench(ctx: typer.Context, **given: Any) -> None:
    """Measure training throughput (tf_cnn_benchmarks method) and write result records.

    The options are the runner's (python -m workloads bench), defined once in
    workloads/bench_options.py. Exit 0 when every measurement is ok, 1 when one failed (its
    record says why), 2 on bad input, 130 on Ctrl-C (finished records kept)."""
    if ctx.args:
        raise UsageError(f"unknown option or argument {ctx.args[0]!r} for gpulab bench")
    from workloads.bench_options import finish

    json_out = bool(given.pop("json_out", False))
    opts = finish({k: getattr(v, "value", v) for k, v in given.items()})  # Enum -> its value
    from workloads.bench import run_bench
    from workloads.records import RecordWriter, new_run_id
    from workloads.setting import LOCAL_NATIVE, make_setting, setting_from_options
    from workloads.suites import resolve_suite

    chosen = resolve_suite(
        opts["suite"], opts["model"], opts["batch"], opts["steps"], opts["warmup"],
        opts["repeats"], opts["image_size"],
    )  # fmt: skip
    setting = setting_from_options(opts["gpu_path"], opts["exec_env"], opts["sharing"])
    run_id = new_run_id()
    out_path = opts["out"] or f"results/bench-{run_id}.jsonl"
    RecordWriter(out_path).close()  # an unwritable --out fails before the progress display
    with _ProgressView(chosen.measurements) as view:
        result = run_bench(
            chosen,
            out_path,
            topology=opts["topology"],
            arm=opts["arm"],
            backend=opts["keras_backend"],
            progress=view.update,
            run_id=run_id,
            setting=setting or make_setting(*LOCAL_NATIVE),
            sync_every=opts["sync_every"],
        )
    if json_out:
        _emit(result)
    else:
        print_table(result.records, f"{chosen.name} ({result.run_id})")
    typer.echo(f"{len(result.records)} record(s) -> {result.out}", err=True)
    if result.interrupted:
        typer.echo("interrupted: finished records kept", err=True)
    if result.exit_code:
        raise typer.Exit(result.exit_code)


def _emit(result: Any) -> None:
    """The run as the JSON envelope: ok when every measurement is (else the failed count)."""
    from infra.cli import output

    data = {
        "run_id": result.run_id,
        "out": result.out,
        "exit_code": result.exit_code,
        "interrupted": result.interrupted,
        "records": result.records,
    }
    if not result.exit_code:
        output.emit(data)
        return
    bad = [r for r in result.records if r.get("status") != "ok"]
    what = "interrupted" if result.interrupted else f"{len(bad)} of {len(result.records)} failed"
    output.emit_failure(data, f"bench {result.run_id}: {what} (records in {result.out})",
                        result.exit_code)  # fmt: skip


def register(app: typer.Typer) -> None:
    from infra.cli.options import JsonOpt

    json_param = inspect.Parameter(
        "json_out", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonOpt
    )
    fn = with_parameters(bench, [json_param, *bench_parameters()])
    add_examples(fn, EXAMPLES)
    app.command(
        "bench",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )(fn)


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


# A record's time, split (docs/results-schema.md): start-up (launch to the first step: the
# interpreter, imports, the model build), warm-up (the first, compiling steps) and the timed
# window that images/sec is measured over; elapsed_s, the job's whole wall time, would hide
# a 20 s start-up beside a 5-step rate.
TIME_COLUMNS = ("start-up s", "warm-up s", "timed s")
TIME_FIELDS = ("startup_s", "first_step_s", "timed_s")


def time_cells(record: dict[str, Any]) -> list[str]:
    """The record's start-up, warm-up and timed seconds as table cells ("-": not measured)."""
    cells = []
    for name in TIME_FIELDS:
        value = record.get(name)
        cells.append(f"{value:.2f}" if isinstance(value, int | float) else "-")
    return cells


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
    for col in TIME_COLUMNS:
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("note", no_wrap=True, max_width=48)
    for r in records:
        ips = r.get("images_per_sec")
        style = {"ok": "green", "failed": "red", "interrupted": "yellow"}.get(r["status"], "")
        table.add_row(
            r["experiment"],
            r["model"],
            str(r.get("repeat", "")),
            str(r.get("global_batch", "")),
            str((r.get("params") or {}).get("image_size") or ""),
            f"[{style}]{r['status']}[/{style}]",
            f"{ips:,.1f}" if ips is not None else "-",
            *time_cells(r),
            r.get("error") or "",
        )
    console = Console()
    if not console.is_terminal:  # a log or a pipe: do not squeeze the table into 80 columns
        console = Console(width=140)
    console.print(table)
