"""``gpulab validate STACK``: check a ``Pulumi.<stack>.yaml`` without Pulumi.

Prints the validated settings (secrets only as "set") and exits 0, or prints one line naming
every bad ``gpulab:<key>`` and what it allows (placeholders of the examples among them) and
exits 2. ``--json``: the settings with their types (numbers, booleans, lists, mappings;
secrets as ``"[secret]"``), or the list of problems.
"""

from __future__ import annotations

from typing import Any

import typer

from infra.cli.options import JsonOpt, add_examples
from infra.cli.stack_ref import StackArg, StackOpt, resolve


def validate_cmd(
    stack: StackArg = None, stack_opt: StackOpt = None, json_out: JsonOpt = False
) -> None:
    """Check a stack file's gpulab:* config (types, required keys, enums, CIDRs, counts).

    Exit 0 when valid (the settings are printed, secrets only as "set"), 2 naming every bad
    key at once otherwise (a placeholder of the examples among them)."""
    from infra.cli import output
    from infra.config import ConfigError, load_stack_file

    ref = resolve(stack, stack_opt)
    try:
        cfg = load_stack_file(ref.file)
    except ConfigError as exc:
        if json_out:
            data = {"stack": ref.name, "file": ref.file, "valid": False, "problems": exc.problems}
            output.emit_failure(data, str(exc), 2)
        raise
    if json_out:
        output.emit(
            {
                "stack": ref.name,
                "file": ref.file,
                "valid": True,
                "topology": cfg.topology,
                "lab": cfg.lab,
                "settings": typed_settings(cfg),
                "topology_settings": dict(_topology_rows(cfg)),
            }
        )
        return
    from rich.console import Console
    from rich.table import Table

    typer.echo(f"{ref.file}: valid {cfg.topology} stack, lab {cfg.lab}")
    table = Table()
    table.add_column("key")
    table.add_column("value")
    for key, shown in settings(cfg):
        table.add_row(key, shown)
    Console().print(table)


def _set_values(cfg: Any) -> list[tuple[Any, Any]]:
    """(key spec, value) of every set ``gpulab:*`` key, secrets and secret role inputs of
    ``gpulab:site`` replaced by :data:`infra.cli.output.SECRET`."""
    from infra.cli.output import SECRET
    from infra.config import SecretRef
    from infra.config.roles import secret_role_inputs

    secret_inputs = secret_role_inputs()  # no_log role inputs (gpulab:site): never shown
    out: list[tuple[Any, Any]] = []
    for spec, value in cfg.items():
        if value in (None, (), {}):
            continue
        if isinstance(value, SecretRef) or spec.secret:
            value = SECRET
        elif isinstance(value, dict):
            value = {k: SECRET if k in secret_inputs else v for k, v in value.items()}
        out.append((spec, value))
    return out


def _topology_rows(cfg: Any) -> list[tuple[str, str]]:
    from infra.topologies import get as topology

    return list(topology(cfg.topology).describe(cfg.args))


def typed_settings(cfg: Any) -> dict[str, Any]:
    """``gpulab:<key>`` -> its validated value, typed (secrets as "[secret]")."""
    from infra.cli.output import plain

    return {f"gpulab:{spec.key}": plain(value) for spec, value in _set_values(cfg)}


def settings(cfg: Any) -> list[tuple[str, str]]:
    """The stack's set ``gpulab:*`` keys as shown text (secrets, and the secret role inputs of
    ``gpulab:site``, as "(secret, set)"), then the topology's own lines."""
    from infra.cli.output import SECRET

    def text(value: Any) -> str:
        if value == SECRET:
            return "(secret, set)"
        if isinstance(value, tuple | list):
            return ", ".join(map(str, value))
        if isinstance(value, dict):
            return ", ".join(
                f"{k}={'(secret, set)' if v == SECRET else v}" for k, v in value.items()
            )
        return str(value).lower() if isinstance(value, bool) else str(value)

    rows = [(f"gpulab:{spec.key}", text(value)) for spec, value in _set_values(cfg)]
    return rows + _topology_rows(cfg)


def register(app: typer.Typer) -> None:
    app.command("validate")(
        add_examples(
            validate_cmd,
            ["gpulab validate local", "gpulab validate ./Pulumi.nova-pci.yaml --json"],
        )
    )
