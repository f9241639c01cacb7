"""``gpulab study run|status|report <study>``: a paper reproduction as one command."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from infra.cli.options import (
    BaseImageOpt,
    DockerHostOpt,
    DockerOpt,
    DockerPythonOpt,
    PythonMode,
    ReportOpt,
    ResultsDirOpt,
)

study_app = typer.Typer(
    help="Studies: arms (stack + execution environment) x repeats, one verdict report.",
    no_args_is_help=True,
)

StudyArg = Annotated[
    str, typer.Argument(help="A study file, or a built-in study's name (studies/<name>.yaml).")
]
StrictOpt = Annotated[
    bool,
    typer.Option("--strict", help="Stop (exit 1, one line) when the arms' fingerprints differ."),
]


def _err_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


@study_app.command("run")
def run_cmd(
    study: StudyArg,
    keep: Annotated[
        bool, typer.Option("--keep", help="Leave the labs up at the end (no teardown).")
    ] = False,
    fail_fast: Annotated[
        bool, typer.Option("--fail-fast", help="Stop at the first failed unit.")
    ] = False,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh", help="Start over: the previous run's directory is moved aside, not reused."
        ),
    ] = False,
    on_local: Annotated[
        bool,
        typer.Option(
            "--on-local",
            help="Run every arm on this machine (the local topology) in its execution "
            "environment; arms whose environment needs a lab are skipped.",
        ),
    ] = False,
    suite: Annotated[
        str | None,
        typer.Option(help="Every arm runs this suite instead (a name or a .yaml path)."),
    ] = None,
    results_dir: ResultsDirOpt = None,
    docker: DockerOpt = True,
    docker_host: DockerHostOpt = None,
    base_image: BaseImageOpt = None,
    docker_python: DockerPythonOpt = PythonMode.image,
    report: ReportOpt = True,
    strict: StrictOpt = False,
) -> None:
    """Run a study: every arm and repeat in the study's order, build or reuse each arm's lab,
    measure, rebuild when the study asks, tear down at the end (unless --keep), then the
    report. Resumable: after Ctrl-C, SIGTERM, a crash or a failed arm, run it again and it
    carries on with the units not finished, keeping every finished record. One run of a study
    at a time: a second run (or --fresh, or report) meanwhile says who runs it and exits 2.
    Exit 0 when every unit is done or skipped, 1 when one failed, 2 on bad input, 130 when
    interrupted by Ctrl-C (SIGINT), 143 by SIGTERM (129 SIGHUP)."""
    from infra.cli.errors import fail, stopping_on_signals
    from infra.errors import UsageError
    from infra.paths import results_root
    from infra.study.driver import Driver, RunOptions, StudyInterrupted, check_ansible, localize
    from infra.study.lock import acquire
    from infra.study.model import load_study, resolve_suite

    st = load_study(study)
    if suite is not None:
        try:
            suite = resolve_suite("", "", suite, st.path.parent, {})
        except UsageError as exc:
            raise UsageError("--suite: " + str(exc).split(": ", 2)[-1]) from None
    opts = RunOptions(
        keep=keep,
        fail_fast=fail_fast,
        fresh=fresh,
        on_local=on_local,
        suite=suite,
        docker=docker,
        docker_host=docker_host,
        base_image=base_image,
        python_mode=docker_python.value,
    )
    check_ansible(localize(st, opts))  # before the lock and the journal are written
    err = _err_console()
    root = results_root(results_dir)
    command = "study run" + (" --fresh" if fresh else "")
    with stopping_on_signals(), acquire(root, st.name, command):  # one run at a time
        driver = Driver(st, root, opts, err)
        try:
            j = driver.run()
        except StudyInterrupted as exc:
            fail(str(exc))
            raise typer.Exit(exc.exit_code) from None
        counts = j.counts()
        err.print(
            f"study {st.name}: {counts['done']} done, {counts['failed']} failed, "
            f"{counts['skipped']} skipped, {counts['pending'] + counts['running']} not run "
            f"({j.path})",
            highlight=False,
        )
        if report:
            _report(j, strict)
    if counts["failed"] or counts["pending"] or counts["running"]:
        raise typer.Exit(1)


def _report(j: Any, strict: bool, embed: bool = True) -> None:
    from rich.console import Console
    from rich.table import Table

    from infra.cli.errors import fail
    from infra.study.verdicts import NotPaired, build

    try:
        rep = build(j, strict=strict, embed=embed)
    except NotPaired as exc:
        fail(str(exc))
        raise typer.Exit(1) from None
    out = Console(soft_wrap=True)
    arms = Table(title=f"study {j.data['study']}: arms")
    for col in (
        "arm",
        "stack",
        "exec env",
        "done",
        "failed",
        "skipped",
        "missing",
        "records",
        "why",
    ):
        arms.add_column(col)
    for a in rep.arms:
        arms.add_row(
            a["arm"],
            a["stack"],
            a["exec_env"],
            *(str(a[k]) for k in ("done", "failed", "skipped", "missing", "records")),
            "; ".join(a["reasons"]),
        )
    out.print(arms)
    table = Table(title=f"study {j.data['study']}: verdicts (baseline arm {j.data['baseline']})")
    for col in ("claim", "verdict", "label", "measured", "warnings"):
        table.add_column(col, overflow="fold")
    for v in rep.verdicts:
        table.add_row(v.claim, v.verdict, v.label, v.measured, "; ".join(v.warnings))
    out.print(table)
    for w in rep.warnings:
        out.print(f"paired-arm warning, arm {w.arm}: {w.text}", markup=False, highlight=False)
    if rep.missing:
        out.print(f"arms without a finished unit: {', '.join(rep.missing)}", highlight=False)
    for t in rep.teardown:
        if t["status"] == "left":
            out.print(f"left after teardown: {t['stack']} ({t['reason']})", markup=False)
    if rep.note:
        out.print(rep.note, markup=False, highlight=False)
    if rep.html is not None:
        out.print(f"report:  {rep.html} ({len(rep.figures)} figures)", highlight=False)
    out.print(f"study:   {rep.out_dir / 'study.md'}", highlight=False)


@study_app.command("status")
def status_cmd(study: StudyArg, results_dir: ResultsDirOpt = None) -> None:
    """Where a study stands: each unit's status and reason, the order and seed, and who runs
    it now (a `study run` in progress holds its lock; status never waits for it)."""
    from rich.console import Console
    from rich.table import Table

    from infra.paths import results_root
    from infra.study.lock import describe, holder_now
    from infra.study.model import load_study
    from infra.study.state import find_journal

    st = load_study(study)
    root = results_root(results_dir)
    j = find_journal(root, st.name)
    table = Table(title=f"study {st.name} ({j.path})")
    for col in ("#", "arm", "repeat", "status", "records", "s", "why"):
        table.add_column(col)
    for i, u in enumerate(j.order(), 1):
        e = j.unit(u)
        table.add_row(
            str(i),
            u.arm,
            str(u.repeat),
            e["status"],
            "" if e.get("records") is None else str(e["records"]),
            str(e.get("elapsed_s") or ""),
            e.get("reason") or "",
        )
    out = Console()
    out.print(table)
    c = j.counts()
    seed = j.data.get("seed")
    out.print(
        f"{c['done']} done, {c['failed']} failed, {c['skipped']} skipped, "
        f"{c['pending'] + c['running']} not run; order {j.data.get('order_kind', '?')}"
        + (f", seed {seed}" if seed is not None else ""),
        highlight=False,
    )
    holder = holder_now(root, st.name)
    if holder:
        out.print(f"in use now by {describe(holder)}", highlight=False, markup=False)


@study_app.command("report")
def report_cmd(
    study: StudyArg, results_dir: ResultsDirOpt = None, strict: StrictOpt = False
) -> None:
    """The study's report from its finished units: the report of `gpulab report` normalized to
    the baseline arm, plus the arms done/failed/missing, the paired-arm warnings and one
    verdict per claim over the study's repeats ("method check" on records without a GPU)."""
    from infra.cli.errors import fail
    from infra.paths import results_root
    from infra.study.lock import acquire
    from infra.study.model import load_study
    from infra.study.state import find_journal, unit_file_problems

    st = load_study(study)
    root = results_root(results_dir)
    j = find_journal(root, st.name)
    with acquire(root, st.name, "study report"):  # never beside a run writing the study
        j = find_journal(root, st.name)
        problems = unit_file_problems(j)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            again = f"`gpulab study run {st.name}` runs it again"
            fail(f"study {st.name}: {problems[0]}{more}; {again}")
            raise typer.Exit(1)
        c = j.counts()
        if not c["done"]:
            fail(
                f"study {st.name}: no unit has finished ({c['failed']} failed, {c['skipped']} "
                f"skipped, {c['pending'] + c['running']} not run): nothing to report; "
                f"`gpulab study status {st.name}` says why"
            )
            raise typer.Exit(1)
        _report(j, strict)


EXAMPLES: dict[Any, list[str]] = {
    run_cmd: ["gpulab study run local-first-run",
              "gpulab study run closer2018 --on-local --suite smoke"],
    status_cmd: ["gpulab study status local-first-run"],
    report_cmd: ["gpulab study report local-first-run --strict"],
}  # fmt: skip


def register(app: typer.Typer) -> None:
    from infra.cli.options import add_examples

    for fn, examples in EXAMPLES.items():
        add_examples(fn, examples)
    app.add_typer(study_app, name="study")
