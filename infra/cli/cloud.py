"""``gpulab preflight`` and ``gpulab audit``: the cloud-side checks of one stack as a table.

Exit codes: 0 every check passed, 1 at least one failed (the table says what to fix),
2 bad input (stack file missing or invalid).
"""

from __future__ import annotations

from typing import Any

import typer

from infra.cli.options import JsonOpt, add_examples
from infra.cli.stack_ref import StackArg, StackOpt, resolve


def render_checks(rows: list[Any], title: str, console: Any = None) -> int:
    """Print ``rows`` (infra.clouds.Check) as one rich table; return the number of failures."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    table = Table(title=title, show_lines=False, expand=False)
    table.add_column("check", style="bold", overflow="fold")
    table.add_column("result", no_wrap=True)
    table.add_column("detail", overflow="fold")
    table.add_column("fix", overflow="fold")
    for r in rows:
        result = "[green]PASS[/green]" if r.passed else "[red]FAIL[/red]"
        table.add_row(escape(r.name), result, escape(r.detail), "" if r.passed else escape(r.fix))
    console.print(table)
    failed = sum(1 for r in rows if not r.passed)
    summary = f"{len(rows)} checks, {failed} failed"
    console.print(f"[red]{summary}[/red]" if failed else f"[green]{summary}[/green]")
    return failed


def _checks(kind: str, stack: str | None, stack_opt: str | None, as_json: bool, **kw: Any) -> None:
    """Run preflight or audit on the stack; print the table (or JSON); exit 1 on a failure."""
    from infra import preflight as checks
    from infra.config import load_stack_file

    ref = resolve(stack, stack_opt)
    cfg = load_stack_file(ref.file)
    rows = getattr(checks, kind)(cfg, **kw)
    failed = sum(1 for r in rows if not r.passed)
    if as_json:
        from infra.cli import output

        data = {
            "stack": ref.name,
            "topology": cfg.topology,
            "lab": cfg.lab,
            "checks": [
                {"name": r.name, "passed": r.passed, "detail": r.detail, "fix": r.fix} for r in rows
            ],
            "failed": failed,
        }
        if not failed:
            output.emit(data)
            return
        first = next(r for r in rows if not r.passed)
        message = f"{kind}: {failed} of {len(rows)} checks failed (first: {first.name})"
        output.emit_failure(data, message, 1)
    else:
        render_checks(rows, f"{kind} {ref.file.name} ({cfg.topology}, lab {cfg.lab})")
    if failed:
        raise typer.Exit(1)


def preflight_cmd(
    stack: StackArg = None,
    stack_opt: StackOpt = None,
    provide: bool = typer.Option(
        False,
        "--provide",
        help="first move manageable Ironic nodes of the lab's resource class to available",
    ),
    json_out: JsonOpt = False,
) -> None:
    """Check that the cloud can hold the stack's topology before `gpulab up`.

    Exit 0 when every check passed, 1 when one failed (the table says what to fix), 2 on bad
    input."""
    _checks("preflight", stack, stack_opt, json_out, provide=provide)


def audit_cmd(
    stack: StackArg = None, stack_opt: StackOpt = None, json_out: JsonOpt = False
) -> None:
    """List what of the lab is left in the cloud after `gpulab down`.

    Exit 0 when nothing is left, 1 when something is (the table names it), 2 on bad input."""
    _checks("audit", stack, stack_opt, json_out)


def register(app: typer.Typer) -> None:
    app.command("preflight")(
        add_examples(
            preflight_cmd, ["gpulab preflight local", "gpulab preflight -s nova-pci --json"]
        )
    )
    app.command("audit")(add_examples(audit_cmd, ["gpulab audit nova-pci --json"]))
