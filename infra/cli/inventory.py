"""``gpulab inventory STACK [--out FILE]``: the Ansible inventory the lab uses, as YAML.

The hosts come from the stack's ``hosts`` output (the Pulumi state, or ``--outputs FILE``: a
saved ``gpulab outputs --json`` or ``results/<stack>/outputs-*.json``); the inventory is built
by :func:`infra.ansible.inventory.build_inventory`, the code the lab's Ansible runs use, with
the site run's variables (``gpulab_topology``, ``gpulab_lab``, ``gpulab_exec_envs`` and the
stack's ``gpulab:site``) under ``all.vars``. So one play can be rerun by hand::

    gpulab inventory local --out inventory.yml
    ansible-playbook -i inventory.yml playbooks/site.yml

Every string in it carries YAML's ``!unsafe`` tag: host fields from the stack outputs and the
site values are data that Ansible never renders as a template (the only templates are the fixed
expressions the inventory builder writes itself). The host fields are checked first
(:func:`infra.ansible.inventory.check_host`: address, login name, port, which ``ansible_*``
variables): a bad one is refused in one line, exit 2. The file is written whole or not at all
(:mod:`workloads.files`).

Secrets (the vGPU license token, every secret role input of ``gpulab:site``) are never written:
pass them with ``-e`` yourself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from infra.cli.errors import UsageError
from infra.cli.options import StateUrlOpt, add_examples
from infra.cli.stack_ref import StackArg, StackOpt, StackRef, resolve

HEADER = (
    "# Ansible inventory of stack {stack} (gpulab inventory), from {source}.\n"
    "# Use: ansible-playbook -i {out} playbooks/site.yml\n"
)


def _hosts_from_file(path: Path) -> list[dict[str, Any]]:
    from workloads.inputs import read_input_text

    try:
        data = json.loads(read_input_text(path, "outputs file"))
    except json.JSONDecodeError as exc:
        raise UsageError(f"outputs file {str(path)!r} is not JSON (line {exc.lineno})") from None
    return _hosts_of(data, f"outputs file {str(path)!r}")


def _hosts_of(outputs: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(outputs, dict) and {"ok", "command", "data"} <= set(outputs):
        outputs = outputs["data"]  # the envelope of `gpulab outputs --json`
    hosts = outputs.get("hosts") if isinstance(outputs, dict) else None
    if not isinstance(hosts, list) or not all(isinstance(h, dict) for h in hosts):
        raise UsageError(f"{where} has no 'hosts' list (run `gpulab up` first)")
    return hosts


def _hosts_from_state(ref: StackRef, state_url: str | None) -> list[dict[str, Any]]:
    from infra.automation import Lab, LabError

    env = {"PULUMI_BACKEND_URL": state_url} if state_url else {}
    lab = Lab(ref.name, repo=ref.project, on_output=lambda _l: None, env=env)
    try:
        outputs = lab.outputs()
    except LabError as exc:
        raise UsageError(str(exc)) from None
    return _hosts_of(outputs, f"stack {ref.name!r}")


def inventory_of(ref: StackRef, hosts: list[dict[str, Any]]) -> dict[str, Any]:
    """The inventory dict the lab's runs use, with the site run's variables (no secrets)."""
    from infra.ansible.inventory import InventoryError, build_inventory
    from infra.config import load_stack_file
    from infra.dynamic import execution_envs, site_variables
    from infra.hosts import Host

    cfg = load_stack_file(ref.file)
    try:
        objs = [Host.from_output(dict(h)) for h in hosts]
        return build_inventory(objs, site_variables(cfg, execution_envs(cfg)))
    except (InventoryError, TypeError, ValueError) as exc:
        raise UsageError(f"stack {ref.name!r}: hosts output: {exc}") from None


def inventory_cmd(
    stack: StackArg = None,
    stack_opt: StackOpt = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="FILE", help="Write the YAML here (default: stdout)."),
    ] = None,
    outputs: Annotated[
        Path | None,
        typer.Option(
            "--outputs",
            metavar="FILE",
            help="Read the hosts from saved outputs (gpulab outputs --json, or "
            "results/<stack>/outputs-*.json) instead of the Pulumi state.",
        ),
    ] = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Write the Ansible inventory the lab uses (no secrets).

    Hosts, groups gpu_path_*, the site run's variables; every value marked !unsafe (data,
    never a template). Exit 0 when written, 2 on bad input (no stack, no hosts output, a host
    field that is not what it claims to be, an output file that cannot be written)."""
    from infra.ansible.untrusted import dump_unsafe_yaml
    from workloads.files import write_text

    ref = resolve(stack, stack_opt)
    if out is not None and out.is_dir():
        raise UsageError(f"--out {str(out)!r} is a directory, not a file")
    hosts = _hosts_from_file(outputs) if outputs else _hosts_from_state(ref, state_url)
    inv = inventory_of(ref, hosts)
    source = f"outputs file {outputs}" if outputs else "the Pulumi state"
    header = HEADER.format(stack=ref.name, source=_one_line(source), out=_one_line(out or "FILE"))
    text = header + dump_unsafe_yaml(inv)
    if out is None:
        typer.echo(text, nl=False)
        return
    write_text(out, text)  # whole or not at all; one line naming the path when it cannot
    typer.echo(f"wrote {out} ({len(inv['all']['hosts'])} host(s))", err=True)


def _one_line(value: object) -> str:
    """A path for the header comment: no newline can end the comment early."""
    return str(value).encode("unicode_escape").decode("ascii")


def register(app: typer.Typer) -> None:
    app.command("inventory")(
        add_examples(
            inventory_cmd,
            [
                "gpulab inventory local --out inventory.yml",
                "ansible-playbook -i inventory.yml playbooks/site.yml",
                "gpulab inventory nova-pci --outputs results/nova-pci/outputs-X-up.json",
            ],
        )
    )
