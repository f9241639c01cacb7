"""A lab's directory as a Pulumi project: ``Pulumi.yaml`` and ``__main__.py`` beside the stack
file, so ``gpulab up mylab`` works where ``Pulumi.mylab.yaml`` is (Pulumi reads a stack's config
only from ``Pulumi.<stack>.yaml`` in its project directory).

``gpulab init`` writes them with the stack file; ``gpulab up`` writes them, saying so on
stderr, the first time it brings up a stack from a directory without ``Pulumi.yaml`` (once the
Pulumi CLI is found: a command that stops early changes nothing). A directory that has a
``Pulumi.yaml`` already (the checkout, an example made with ``pulumi new``) is left as it is.

- ``Pulumi.yaml``: project ``gpulab``, the Python runtime of the gpulab that wrote it (its
  virtualenv, when it runs in one, so the engine, the program and the dynamic-provider host
  import this gpulab), and the ``config:`` declarations every topology takes alike
  (:func:`infra.config.schema.project_config`), so stacks of any topology can live in it.
- ``__main__.py``: runs the gpulab Pulumi program of the gpulab installed in that Python.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ENTRY = '''"""Entry point of a gpulab lab project (written by gpulab): runs the gpulab Pulumi
program of the gpulab installed in this project's Python (Pulumi.yaml, runtime)."""

import runpy

from infra.paths import PROJECT

runpy.run_path(str(PROJECT / "__main__.py"), run_name="__main__")
'''

HEADER = (
    "# A gpulab lab project (written by gpulab): `gpulab up STACK` (or `pulumi up -s STACK`)\n"
    "# builds the lab of Pulumi.<STACK>.yaml here. The config: block declares the keys every\n"
    "# topology takes alike (python -m infra.config.schema), so stacks of any topology fit.\n"
)


def runtime() -> dict[str, Any]:
    """The Python runtime of this gpulab: its virtualenv when it runs in one (an absolute path,
    so the engine's language and provider hosts use it from any directory)."""
    options: dict[str, Any] = {"toolchain": "pip"}
    if sys.prefix != sys.base_prefix:
        options["virtualenv"] = sys.prefix
    return {"name": "python", "options": options}


def project_text() -> str:
    """The text of a lab project's ``Pulumi.yaml``."""
    import yaml

    from infra.config.schema import project_config
    from infra.topologies import registry

    data = {
        "name": "gpulab",
        "description": "gpulab lab (" + ", ".join(registry()) + ")",
        "runtime": runtime(),
        "config": project_config(),
    }
    return HEADER + yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)


def missing(directory: Path) -> list[Path]:
    """The project files ``directory`` lacks (none when it has a ``Pulumi.yaml``); a
    ``__main__.py`` of another program there is refused (Pulumi would run it)."""
    from infra.errors import UsageError

    if (directory / "Pulumi.yaml").is_file():
        return []
    entry = directory / "__main__.py"
    if entry.exists() and entry.read_text(encoding="utf-8", errors="replace") != ENTRY:
        raise UsageError(
            f"{directory} has a __main__.py of its own and no Pulumi.yaml: Pulumi would run "
            "that program; keep the stack file in a directory of its own"
        )
    return [p for p in (directory / "Pulumi.yaml", entry) if not p.exists()]


def write(directory: Path) -> list[Path]:
    """Make ``directory`` a gpulab lab project: write the files it lacks, each whole or not at
    all (workloads.files); return them."""
    from workloads.files import write_text

    written = missing(directory)
    texts = {"Pulumi.yaml": project_text(), "__main__.py": ENTRY}
    for path in written:
        write_text(path, texts[path.name])
    return written
