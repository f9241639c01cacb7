"""One stack resolver for every ``gpulab`` command that acts on a stack.

A stack is given as a positional ``STACK`` or as ``-s/--stack STACK`` (not both), and is:

- a name (``local``, ``nova-pci``): ``Pulumi.<name>.yaml`` in the current directory when it is
  there, else in the gpulab project (the checkout's directory of ``Pulumi.yaml``);
- a path to a stack file (``examples/nova-pci/Pulumi.nova-pci.yaml``, ``./lab.yaml``): anything
  that contains a ``/`` or ends in ``.yaml``/``.yml``, or names an existing file. Its stack name
  is ``<name>`` of ``Pulumi.<name>.yaml`` (else the file's stem);
- a directory holding one stack file (``examples/nova-pci``): that file.

The stack's Pulumi project is the directory of its file: ``gpulab up`` runs the engine there
(and, when it has no ``Pulumi.yaml`` yet, makes it a gpulab project first:
:mod:`infra.cli.lab_project`). So ``validate``, ``preflight`` and ``up`` of one name read the
same file, wherever the command runs.

Use from a command module::

    from infra.cli.stack_ref import StackArg, StackOpt, resolve

    def cmd(stack: StackArg = None, stack_opt: StackOpt = None) -> None:
        ref = resolve(stack, stack_opt)  # ref.name, ref.file, ref.project

Bad input (no stack, both forms, a name with no stack file) is a UsageError: one line naming
where it looked, exit 2. A path that does not exist is passed on, so the loader's message
names the file.
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
        help="Stack name (Pulumi.<name>.yaml here, else in the gpulab project) or a stack "
        "file's path.",
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
    """A resolved stack: its name and its stack file; its Pulumi project is the file's
    directory."""

    name: str
    file: Path

    @property
    def project(self) -> Path:
        return self.file.parent

    @property
    def pulumi_named(self) -> bool:
        """The file is ``Pulumi.<name>.yaml``, the only name Pulumi reads a stack's config from."""
        return self.file.name == f"Pulumi.{self.name}.yaml"


def known_stacks(*dirs: Path) -> list[str]:
    names: set[str] = set()
    for d in dirs:
        names.update(m[1] for p in d.glob("Pulumi.*.y*ml") if (m := _FILE.match(p.name)))
    return sorted(names)


def _in_directory(path: Path) -> Path:
    found = sorted(p for p in path.glob("Pulumi.*.y*ml") if _FILE.match(p.name))
    if len(found) == 1:
        return found[0]
    names = ", ".join(p.name for p in found)
    raise UsageError(
        f"stack directory {str(path)!r} holds "
        + (f"several stack files ({names}): name one" if found else "no Pulumi.<stack>.yaml")
    )


def resolve_value(value: str, cwd: Path | None = None) -> StackRef:
    """The :class:`StackRef` that ``value`` (a name or a path) means."""
    cwd = cwd or Path.cwd()
    path = Path(value).expanduser()
    full = path if path.is_absolute() else cwd / path
    if full.is_dir() and ("/" in value or known_stacks(full)):
        full = _in_directory(full)
        return StackRef(_FILE.match(full.name)[1], full)  # type: ignore[index]  # matched above
    if "/" in value or value.endswith((".yaml", ".yml")) or full.is_file():
        m = _FILE.match(full.name)
        return StackRef(m[1] if m else full.stem, full)
    if not _NAME.match(value):
        raise UsageError(
            f"stack {value[:60]!r} is not a stack name (letters, digits, '-', '_', '.') "
            "nor a path to a stack file"
        )
    places = list(dict.fromkeys((cwd, PROJECT)))
    for place in places:
        file = place / f"Pulumi.{value}.yaml"
        if file.is_file():
            return StackRef(value, file)
    known = ", ".join(known_stacks(*places)) or "none"
    init = f"(`gpulab init TOPOLOGY -s {value}` writes one)"
    if cwd == PROJECT:
        raise UsageError(
            f"stack {value!r} has no stack file Pulumi.{value}.yaml: looked in {cwd} (here, the "
            f"gpulab project); known stacks: {known} {init}"
        )
    raise UsageError(
        f"stack {value!r} has no stack file Pulumi.{value}.yaml: looked in {cwd} (here) and "
        f"{PROJECT} (the gpulab project); known stacks: {known} {init}"
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
