"""``gpulab run local`` and ``gpulab up|measure|down|rebuild|status|outputs <stack>``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from infra.cli.options import (
    BaseImageOpt,
    DockerHostOpt,
    DockerOpt,
    DockerPythonOpt,
    JsonOpt,
    PythonMode,
    ReportOpt,
    ResultsDirOpt,
    StateUrlOpt,
    add_examples,
    print_json,
)
from infra.cli.stack_ref import StackArg, StackOpt, pick, resolve_value

if TYPE_CHECKING:
    from rich.console import Console

    from infra.automation import Lab

T = TypeVar("T")

run_app = typer.Typer(help="Run a lab's workloads without the Pulumi engine.", no_args_is_help=True)


EXAMPLES = {
    "up": ["gpulab up local", "gpulab up -s nova-pci --state-url file://~/.pulumi-state",
           "gpulab up ./Pulumi.local.yaml --refresh > outputs.json"],
    "measure": ["gpulab measure local", "gpulab measure -s nova-pci"],
    "down": ["gpulab down local"],
    "rebuild": ["gpulab rebuild local"],
    "status": ["gpulab status local"],
    "outputs": ["gpulab outputs local --json | jq .hosts"],
}  # fmt: skip


@run_app.command("local")
def run_local_cmd(
    suite: Annotated[
        str, typer.Option(help="Suite name under workloads/suites/ or a .yaml path.")
    ] = "smoke",
    stack: Annotated[
        str,
        typer.Option("-s", "--stack", metavar="NAME", help="Results go to <results-dir>/<NAME>/."),
    ] = "local",
    results_dir: ResultsDirOpt = None,
    docker: DockerOpt = True,
    docker_host: DockerHostOpt = None,
    base_image: BaseImageOpt = None,
    docker_python: DockerPythonOpt = PythonMode.image,
    report: ReportOpt = True,
) -> None:
    """Run a suite natively and, when a Docker engine is reachable, in a container too.

    Exit 0 when every measurement is ok, 1 when one failed, 2 on bad input, 130 on Ctrl-C,
    143 on SIGTERM (the runner is stopped with gpulab; the records so far stay).
    """

    from rich.console import Console

    from infra.cli.errors import stopping_on_signals
    from infra.local_run import run_local
    from infra.paths import results_root
    from infra.summary import summary_table

    console = Console()
    with stopping_on_signals():  # SIGTERM, SIGHUP stop the runner as Ctrl-C does (143, 129)
        run = run_local(
            stack=stack,
            suite=suite,
            docker=docker,
            docker_host=docker_host,
            base_image=base_image,
            python_mode=docker_python.value,
            results_root=results_root(results_dir),
            console=console,
        )
    results = run.summary["results"]
    console.print(summary_table(results, title=f"{stack} {run.run_id}"))
    for ratio in results.get("ratios", []):
        if ratio["ratio"] is not None:
            console.print(
                f"{ratio['arm']}/{ratio['base']} images/sec, {ratio['model']} "
                f"({ratio['scenario']}, batch {ratio['batch_size']}): {ratio['ratio']:.3f}"
            )
    console.print(f"records: {run.records_path}\nsummary: {run.summary_path}")
    if report:
        _report_local(run, console)
    if any(a.rc == 130 for a in run.arms):
        raise typer.Exit(130)
    if results["status"] != "ok" or any(a.rc != 0 for a in run.arms):
        raise typer.Exit(1)


def _report_local(run: Any, console: Any) -> None:
    """The run's report, normalized to its native arm; a report problem never fails the run."""
    from report import build_report
    from workloads.errors import InputError

    out_dir = run.records_path.with_name(f"{run.run_id}.report")
    try:
        rep = build_report(
            [run.records_path],
            out_dir,
            baseline="local/native",
            title=f"gpulab local run {run.run_id}",
        )
    except InputError as exc:
        console.print(f"[yellow]gpulab: no report for this run: {exc}[/yellow]", soft_wrap=True)
        return
    console.print(f"report:  {rep.html} ({len(rep.figures)} figures)")


def _lab(stack: str, state_url: str | None) -> tuple[Lab, Console]:
    """The Lab of ``stack`` (a name or a path, see infra/cli/stack_ref.py), run in the stack
    file's directory (made a gpulab project on its first up: infra/cli/lab_project.py);
    engine and progress lines go to stderr, so stdout holds only the command's result."""
    from rich.console import Console

    from infra.automation import Lab
    from infra.cli import lab_project
    from infra.errors import UsageError

    ref = resolve_value(stack)
    if not ref.pulumi_named:
        raise UsageError(
            f"stack file {str(ref.file)!r}: Pulumi reads a stack's config only from "
            f"Pulumi.<stack>.yaml; rename it to Pulumi.{ref.name}.yaml"
        )
    console = Console(stderr=True)
    env = {"PULUMI_BACKEND_URL": state_url} if state_url else {}

    def echo(line: str) -> None:
        console.print(line.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)

    def make_project() -> None:
        written = lab_project.write(ref.project)
        names = ", ".join(p.name for p in written)
        echo(f"==> made {ref.project} a gpulab lab project: wrote {names}")

    lab = Lab(ref.name, repo=ref.project, on_output=echo, env=env, make_project=make_project)
    return lab, console


RefreshOpt = Annotated[
    bool,
    typer.Option(
        "--refresh",
        help="First read every resource back from the lab (hosts, the Ansible and workload "
        "runs' recorded results), so drift is seen before the update.",
    ),
]


def _run(fn: Callable[[], T], console: Any = None) -> T:
    """Run a lifecycle call; an engine failure is one line on stderr and exit 1 (then, after
    a failed up/measure, the partial run found on disk); an interrupt exits 130 (SIGINT) or 143
    (SIGTERM) after saying where the finished records are. See docs/lifecycle.md, exit codes."""
    from infra.automation import LabError, LabInterrupted
    from infra.cli.errors import EXIT_FAILED, EXIT_INTERRUPTED, fail

    try:
        return fn()
    except LabInterrupted as exc:
        fail(str(exc))
        _show_runs(console, [line for run in exc.runs for line in run.lines()], "kept on disk")
        raise typer.Exit(128 + exc.signum if exc.signum else EXIT_INTERRUPTED) from None
    except LabError as exc:
        fail(str(exc))
        if exc.partial is not None:
            _show_runs(console, exc.partial.lines(), "partial results on disk")
        raise typer.Exit(EXIT_FAILED) from None


def _show_runs(console: Any, lines: list[str], title: str) -> None:
    if console is None:
        return
    if not lines:
        console.print(f"{title}: no workload run wrote records", markup=False, highlight=False)
        return
    console.print(f"{title}:", markup=False, highlight=False)
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _show(console: Console, data: Any, as_json: bool) -> None:
    """The result on stdout: the JSON envelope with ``--json`` (infra/cli/output.py), plain
    JSON when stdout is not a terminal (``gpulab up local > outputs.json``), else highlighted
    JSON."""
    import sys

    if as_json:
        from infra.cli.output import emit

        emit(data)
    elif not sys.stdout.isatty():
        print_json(data)
    else:
        from rich.console import Console

        Console().print_json(data=data, default=str, sort_keys=True)


def down(
    stack: StackArg = None,
    stack_opt: StackOpt = None,
    state_url: StateUrlOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Destroy the lab's resources; results and the stack file stay.

    The last outputs are saved first to <results root>/<stack>/outputs-<time>-down.json."""
    lab, _console = _lab(pick(stack, stack_opt), state_url)
    saved = _run(lab.down)
    if json_out:
        from infra.cli.output import emit

        emit({"stack": lab.stack_name, "destroyed": True, "outputs_saved": saved})
        return
    typer.echo(f"destroyed {lab.stack_name}" + (f"; last outputs kept in {saved}" if saved else ""))


def _lab_command(
    name: str, doc: str, call: Callable[[Lab, bool], Any], refresh: bool = False
) -> Callable[..., None]:
    """A command that runs ``call(lab, refresh)`` and prints its result as JSON (``--refresh``
    only where ``refresh``)."""

    def command(
        stack: StackArg = None,
        stack_opt: StackOpt = None,
        state_url: StateUrlOpt = None,
        refresh_opt: RefreshOpt = False,
        json_out: JsonOpt = False,
    ) -> None:
        lab, console = _lab(pick(stack, stack_opt), state_url)
        _show(console, _run(lambda: call(lab, refresh_opt), console), json_out)

    command.__name__, command.__doc__ = name, doc
    if not refresh:
        sig = inspect.signature(command, eval_str=True)
        params = [p for p in sig.parameters.values() if p.name != "refresh_opt"]
        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return command


UP_DOC = """Build or update the lab, configure its hosts, measure; print the outputs.

The topology's hosts (vGPU attach on vsphere-gpu vgpu), then the site Ansible run
(playbooks/site.yml) on every host, then one workload run per execution environment, one
after another on the same GPUs; records are fetched to <results root>/<stack>/
($GPULAB_RESULTS, else ./results). The engine runs in the stack file's directory; one without
a Pulumi.yaml becomes a gpulab lab project first (Pulumi.yaml and __main__.py are written
there, and the command says so). The outputs go to stdout as JSON (engine lines to stderr).
Unchanged parts are not re-run; `gpulab measure` re-runs only the workloads.

Exit 1 on a failed step (one line naming the host and the step, then the finished hosts'
records on disk; what was made stays for `gpulab down`), 2 on bad input (the Pulumi CLI
missing among it: the line says how to install it), 130 on Ctrl-C, 143 on SIGTERM (the
engine stops after the steps in flight; the lab and the records stay)."""

MEASURE_DOC = """Measure a built lab again without rebuilding it (only the workload runs re-run).

Sets gpulab:measure_id to a fresh UTC time id in Pulumi.<stack>.yaml and runs up; the records
go to <results root>/<stack>/. Prints the outputs as JSON."""

up = _lab_command("up", UP_DOC, lambda lab, r: lab.up(refresh=r), refresh=True)
measure = _lab_command("measure", MEASURE_DOC, lambda lab, r: lab.measure(refresh=r), refresh=True)
rebuild = _lab_command(
    "rebuild",
    "Destroy, then up again with the same stack config.\n\nPrints the outputs as JSON.",
    lambda lab, _r: lab.rebuild(),
)
status = _lab_command(
    "status",
    "The stack's last update and what its outputs hold.\n\nPrinted as JSON: the last "
    "update's kind, result, times and resource changes, the output names, the host count.",
    lambda lab, _r: lab.status(),
)
outputs = _lab_command(
    "outputs",
    "The stack outputs (secrets masked).\n\nPrinted as JSON; when the last up failed in a "
    "workload run, also results_partial: that run's finished records as found in "
    "<results root>/<stack>/.",
    lambda lab, _r: lab.outputs(),
)


add_examples(
    run_local_cmd,
    ["gpulab run local",
     "gpulab run local --suite catalogue-smoke --no-docker --results-dir /tmp/res"],
)  # fmt: skip


def register(app: typer.Typer) -> None:
    app.add_typer(run_app, name="run")
    for fn in (up, measure, down, rebuild, status, outputs):
        app.command(fn.__name__)(add_examples(fn, EXAMPLES[fn.__name__]))
