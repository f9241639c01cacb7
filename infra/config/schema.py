"""The ``config:`` blocks of the Pulumi project files, written from the key table.

Pulumi checks a stack against its project's ``config:`` declarations before the program runs:
a declared type must match, a ``secret: true`` key must be encrypted. Two rules of the engine
decide what can be declared: a key of the project's namespace declared without a ``default``
is required in every stack, and a declared ``default`` is injected into every stack that lacks
the key. So a project file declares only what holds for each of its stacks:

- ``Pulumi.yaml`` (this repository's project, stacks of every topology of the registry): the
  keys every topology takes alike, required ones without a default, the others with the
  model's default;
- ``examples/<topology>/Pulumi.yaml`` (a one-topology project, the template of ``pulumi new``,
  beside the topology's example stack): that topology's keys that are required (no default,
  ``secret: true`` for secrets) or have a fixed default, outside the vSphere mode-specific
  ones; ``template.config`` asks for each required key, with the example's value as the
  default.

The remaining keys (optional without a fixed default, mode-specific, mappings) are checked by the
model alone. Usage: ``python -m infra.config.schema [--check]`` rewrites the files (or exits 1
naming the ones that differ); ``tests/pulumi/test_config_schema.py`` fails while they drift.
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path
from typing import Any

import yaml

from infra.config import raw_from_stack_file
from infra.config.model import keys
from infra.generated import sync
from infra.keys.key import Key
from infra.paths import PROJECT
from infra.topologies import Topology, get, registry

RUNTIME = {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}}
HEADER = (
    "# The config: block is written by `python -m infra.config.schema` from the key tables\n"
    "# (infra/config/fields.py, each topology's infra/topologies/<name>/args.py).\n"
)


def pulumi_type(spec: Key) -> dict[str, Any] | None:
    """The Pulumi config type of a key (None: a mapping, which Pulumi cannot type)."""
    if spec.secret:
        return {"type": "string"}
    core = typing.get_args(spec.value)[0]
    origin = typing.get_origin(core) or core
    if core is bool:
        return {"type": "boolean"}
    if core is int:
        return {"type": "integer"}
    if core is str:
        return {"type": "string"}
    if origin is tuple:
        return {"type": "array", "items": {"type": "string"}}
    return None


def _declare(spec: Key) -> dict[str, Any] | None:
    """The declaration of ``spec`` in a project whose stacks all take it so."""
    typ = pulumi_type(spec)
    if typ is None or spec.modes:
        return None
    entry: dict[str, Any] = {**typ, "description": spec.help}
    if spec.secret:
        entry["secret"] = True
    if spec.required:
        return entry
    if callable(spec.default) or spec.default is None:
        return None
    entry["default"] = list(spec.default) if isinstance(spec.default, tuple) else spec.default
    return entry


def project_config(topology: str | None = None) -> dict[str, Any]:
    """The ``config:`` block of the project of ``topology`` (None: the repository's, whose
    stacks are of every topology: only the keys that every topology takes alike)."""
    specs = [get(topology)] if topology else list(registry().values())
    tables = [{k.key: k for k in keys(spec)} for spec in specs]
    out: dict[str, Any] = {}
    for name, key in tables[0].items():
        if any(table.get(name) != key for table in tables[1:]):
            continue  # not in every topology, or not alike (another default)
        entry = _declare(key)
        if entry is not None:
            out[name] = entry
    if topology is not None:  # the project's stacks are of its topology
        out["topology"] = {**out["topology"], "default": topology}
    return out


def template_config(topology: str, example: dict[str, Any]) -> dict[str, Any]:
    """``template.config``: what ``pulumi new`` asks for, the example stack's values as
    defaults (secrets without one)."""
    out: dict[str, Any] = {}
    for key, entry in project_config(topology).items():
        if "default" in entry:
            continue
        ask: dict[str, Any] = {"description": entry["description"]}
        if entry.get("secret"):
            ask["secret"] = True
        elif isinstance(example.get(key), str | int | bool):
            value = example[key]
            ask["default"] = str(value).lower() if isinstance(value, bool) else str(value)
        out[f"gpulab:{key}"] = ask
    return out


def example_stack(spec: Topology) -> Path:
    """The topology's example stack (its spec's ``stack_file``, from the repository root)."""
    return PROJECT / spec.stack_file


def example_project(spec: Topology) -> Path | None:
    """The ``pulumi new`` template beside its example stack (None: its example is a stack of
    this repository's project, as ``Pulumi.local.yaml`` is)."""
    stack = example_stack(spec)
    if not spec.stack_file or stack.parent == PROJECT:
        return None
    return stack.parent / "Pulumi.yaml"


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)


def render_root() -> str:
    data = {
        "name": "gpulab",
        "description": "GPU deep-learning performance lab (" + ", ".join(registry()) + ")",
        "runtime": RUNTIME,
        "config": project_config(),
    }
    return HEADER + _dump(data)


def render_example(topology: str) -> str:
    spec = get(topology)
    example = raw_from_stack_file(example_stack(spec))
    folder = example_stack(spec).parent
    where = f"./{folder.relative_to(PROJECT)}" if folder.is_relative_to(PROJECT) else str(folder)
    data = {
        "name": "gpulab",
        "description": f"gpulab lab, topology {topology}: {spec.summary}",
        # no virtualenv: the python on PATH, i.e. the activated venv that has gpulab installed
        "runtime": {"name": "python", "options": {"toolchain": "pip"}},
        "config": project_config(topology),
        "template": {
            "description": f"A gpulab {topology} lab (pulumi new {where})",
            "config": template_config(topology, example),
        },
    }
    return HEADER + _dump(data)


def targets() -> dict[Path, str]:
    """Every generated file and its text."""
    out = {PROJECT / "Pulumi.yaml": render_root()}
    for spec in registry().values():
        project = example_project(spec)
        if project is not None and example_stack(spec).is_file():
            out[project] = render_example(spec.name)
    return out


def main(argv: list[str]) -> int:
    return sync(targets(), argv, PROJECT, "the key tables", "infra.config.schema")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
