"""``gpulab validate <stack-file>``: check a ``Pulumi.<stack>.yaml`` without Pulumi.

Prints the validated settings (secrets only as "set") and exits 0, or prints one line naming
every bad ``gpulab:<key>`` and what it allows and exits 2.
"""

from __future__ import annotations

from pathlib import Path

import typer


def _resolve(stack: str) -> Path:
    """A path, or a stack name (``nova-pci`` -> ``Pulumi.nova-pci.yaml``)."""
    path = Path(stack)
    if not path.exists() and "/" not in stack and not stack.endswith((".yaml", ".yml")):
        named = Path(f"Pulumi.{stack}.yaml")
        if named.exists():
            return named
    return path


def validate_cmd(
    stack_file: str = typer.Argument(..., help="Pulumi.<stack>.yaml, or a stack name"),
) -> None:
    """Check a stack file's gpulab:* config (types, required keys, enums, CIDRs, counts)."""
    from dataclasses import fields

    from rich.console import Console
    from rich.table import Table

    from infra.config import BY_KEY, load_stack_file
    from infra.config.fields import SecretRef
    from infra.specs.topology import get as topology

    path = _resolve(stack_file)
    cfg = load_stack_file(path)
    typer.echo(f"{path}: valid {cfg.topology} stack, lab {cfg.lab}")
    table = Table()
    table.add_column("key")
    table.add_column("value")
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        spec = BY_KEY.get(f.name)
        if spec is None or cfg.topology not in spec.topologies or value in (None, (), {}):
            continue
        if isinstance(value, SecretRef) or spec.secret:
            shown = "(secret, set)"
        elif isinstance(value, tuple | list):
            shown = ", ".join(map(str, value))
        elif isinstance(value, dict):
            shown = ", ".join(f"{k}={v}" for k, v in value.items())
        else:
            shown = str(value).lower() if isinstance(value, bool) else str(value)
        table.add_row(f"gpulab:{f.name}", shown)
    for key, shown in topology(cfg.topology).describe(cfg):
        table.add_row(key, shown)
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate_cmd)
