"""One stack resolver for every ``gpulab`` command that acts on a stack.

A stack is given as a positional ``STACK`` or as ``-s/--stack STACK`` (not both), and is:

- a name (``local``, ``nova-pci``): ``Pulumi.<name>.yaml`` in the current directory when it is
  there, else in the gpulab project (the directory of ``Pulumi.yaml`` that ``gpulab up`` uses);
- a path to a stack file (``examples/Pulumi.nova-pci.yaml``, ``./lab.yaml``): anything that
  contains a ``/`` or ends in ``.yaml``/``.yml``, or names an existing file. Its stack name is
  ``<name>`` of ``Pulumi.<name>.yaml`` (else the file's stem); its project is its directory when
  that holds a ``Pulumi.yaml``, else the gpulab project.

Use from a command module::

    from infra.cli.stack_ref import StackArg, StackOpt, resolve

    def cmd(stack: StackArg = None, stack_opt: StackOpt = None) -> None:
        ref = resolve(stack, stack_opt)  # ref.name, ref.file, ref.project

Bad input (no stack, both forms, a name with no stack file) is a UsageError: one line, exit 2.
A path that does not exist is passed on, so the loader's message names the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from infra.errors import UsageError
from infra.paths import PROJECT

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_FILE = re.compile(r"^Pulumi\.(.+)\.ya?ml$")

StackArg = Annotated[
    str | None,
    typer.Argument(
        metavar="STACK",
        help="Stack name (Pulumi.<name>.yaml here or in the project) or a stack file path.",
        show_default=False,
    ),
]
StackOpt = Annotated[
    str | None,
    typer.Option(
        "-s",
        "--stack",
        metavar="NAME|FILE",
        help="The stack, as an option (same as the positional STACK).",
        show_default=False,
    ),
]


@dataclass(frozen=True)
class StackRef:
    """A resolved stack: its name, its stack file, and the Pulumi project directory."""

    name: str
    file: Path
    project: Path


def _project_of(path: Path) -> Path:
    parent = path.absolute().parent
    return parent if (parent / "Pulumi.yaml").is_file() else PROJECT


def known_stacks(*dirs: Path) -> list[str]:
    names: set[str] = set()
    for d in dirs:
        names.update(m[1] for p in d.glob("Pulumi.*.y*ml") if (m := _FILE.match(p.name)))
    return sorted(names)


def resolve_value(value: str, cwd: Path | None = None) -> StackRef:
    """The :class:`StackRef` that ``value`` (a name or a path) means."""
    cwd = cwd or Path.cwd()
    path = Path(value)
    if "/" in value or value.endswith((".yaml", ".yml")) or (cwd / path).is_file():
        full = path if path.is_absolute() else cwd / path
        m = _FILE.match(path.name)
        return StackRef(m[1] if m else path.stem, full, _project_of(full))
    if not _NAME.match(value):
        raise UsageError(
            f"stack {value[:60]!r} is not a stack name (letters, digits, '-', '_', '.') "
            "nor a path to a stack file"
        )
    for project in dict.fromkeys((cwd, PROJECT)):
        file = project / f"Pulumi.{value}.yaml"
        if file.is_file():
            return StackRef(
                value, file, project if (project / "Pulumi.yaml").is_file() else PROJECT
            )
    known = known_stacks(cwd, PROJECT)
    raise UsageError(
        f"stack {value!r} has no stack file Pulumi.{value}.yaml (here or in {PROJECT}); "
        f"known stacks: {', '.join(known) or 'none'}"
    )


def pick(positional: str | None, option: str | None = None) -> str:
    """The stack value given as ``STACK`` or ``-s/--stack`` (exactly one of them)."""
    if positional is not None and option is not None and positional != option:
        raise UsageError(f"give the stack once: STACK {positional!r} or --stack {option!r}")
    value = positional if positional is not None else option
    if value is None or not value.strip():
        raise UsageError("no stack given: name one (gpulab <command> local, or -s/--stack NAME)")
    return value


def resolve(positional: str | None, option: str | None = None, cwd: Path | None = None) -> StackRef:
    """The stack given as ``STACK`` or ``-s/--stack`` (exactly one of them), resolved."""
    return resolve_value(pick(positional, option), cwd)
