"""``gpulab validate STACK``: check a ``Pulumi.<stack>.yaml`` without Pulumi.

Prints the validated settings (secrets only as "set") and exits 0, or prints one line naming
every bad ``gpulab:<key>`` and what it allows and exits 2. A valid stack's topology may add
warning lines (``gpulab: warning: ...`` on stderr; ``warnings`` in the JSON): what the lab will
not do although its keys read as if it would.
"""

from __future__ import annotations

from typing import Any

import typer

from infra.cli.options import JsonOpt, add_examples, print_json
from infra.cli.stack_ref import StackArg, StackOpt, resolve


def validate_cmd(
    stack: StackArg = None, stack_opt: StackOpt = None, json_out: JsonOpt = False
) -> None:
    """Check a stack file's gpulab:* config (types, required keys, enums, CIDRs, counts).

    Exit 0 when valid (the settings are printed, secrets only as "set"; warnings, such as a
    security group the cloud does not enforce, on stderr), 2 naming every bad key
    otherwise."""
    from rich.console import Console
    from rich.table import Table

    from infra.config import load_stack_file
    from infra.topologies import get as topology

    ref = resolve(stack, stack_opt)
    cfg = load_stack_file(ref.file)
    rows = settings(cfg)
    warnings = topology(cfg.topology).warnings(cfg.args)
    if json_out:
        print_json(
            {
                "stack": ref.name,
                "file": str(ref.file),
                "valid": True,
                "topology": cfg.topology,
                "lab": cfg.lab,
                "settings": dict(rows),
                "warnings": warnings,
            }
        )
        return
    typer.echo(f"{ref.file}: valid {cfg.topology} stack, lab {cfg.lab}")
    table = Table()
    table.add_column("key")
    table.add_column("value")
    for key, shown in rows:
        table.add_row(key, shown)
    Console().print(table)
    for line in warnings:
        typer.echo(f"gpulab: warning: {line}", err=True)


def settings(cfg: Any) -> list[tuple[str, str]]:
    """The stack's set ``gpulab:*`` keys as shown text (secrets, and the secret role inputs of
    ``gpulab:site``, as "(secret, set)"), then the topology's own lines."""
    from infra.config import SecretRef
    from infra.config.roles import secret_role_inputs
    from infra.topologies import get as topology

    secret_inputs = secret_role_inputs()  # no_log role inputs (gpulab:site): never shown
    rows: list[tuple[str, str]] = []
    for spec, value in cfg.items():
        if value in (None, (), {}):
            continue
        if isinstance(value, SecretRef) or spec.secret:
            shown = "(secret, set)"
        elif isinstance(value, tuple | list):
            shown = ", ".join(map(str, value))
        elif isinstance(value, dict):
            shown = ", ".join(
                f"{k}={'(secret, set)' if k in secret_inputs else v}" for k, v in value.items()
            )
        else:
            shown = str(value).lower() if isinstance(value, bool) else str(value)
        rows.append((f"gpulab:{spec.key}", shown))
    rows += list(topology(cfg.topology).describe(cfg.args))
    return rows


def register(app: typer.Typer) -> None:
    app.command("validate")(
        add_examples(
            validate_cmd,
            ["gpulab validate local", "gpulab validate ./Pulumi.nova-pci.yaml --json"],
        )
    )
