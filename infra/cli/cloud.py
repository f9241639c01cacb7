"""``gpulab preflight`` and ``gpulab audit``: the cloud-side checks of one stack as a table.

Exit codes: 0 every check passed, 1 at least one failed (the table says what to fix),
2 bad input (stack file missing or invalid).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

STACK_FILE = typer.Argument(..., help="Pulumi.<stack>.yaml of the lab", show_default=False)


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


def _load(stack_file: Path) -> Any:
    from infra.config import load_stack_file

    return load_stack_file(stack_file)


def preflight_cmd(
    stack_file: Path = STACK_FILE,
    provide: bool = typer.Option(
        False,
        "--provide",
        help="first move manageable Ironic nodes of the lab's resource class to available",
    ),
) -> None:
    """Check that the cloud can hold the stack's topology before `pulumi up`."""
    from infra.preflight import preflight

    cfg = _load(stack_file)
    rows = preflight(cfg, provide=provide)
    if render_checks(rows, f"preflight {stack_file.name} ({cfg.topology}, lab {cfg.lab})"):
        raise SystemExit(1)  # infra.cli.main drops typer.Exit codes (reported to the lead)


def audit_cmd(stack_file: Path = STACK_FILE) -> None:
    """List what of the lab is left in the cloud after `pulumi destroy`."""
    from infra.preflight import audit

    cfg = _load(stack_file)
    rows = audit(cfg)
    if render_checks(rows, f"audit {stack_file.name} ({cfg.topology}, lab {cfg.lab})"):
        raise SystemExit(1)  # infra.cli.main drops typer.Exit codes (reported to the lead)


def register(app: typer.Typer) -> None:
    app.command("preflight")(preflight_cmd)
    app.command("audit")(audit_cmd)
