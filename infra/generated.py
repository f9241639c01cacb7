"""Files generated from the tables (the ``config:`` block of ``Pulumi.yaml`` and of the example
projects, the tables of ``docs/topologies.md``): one way to rewrite them or to check that they
are current (``--check``, as CI runs it)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from workloads.files import write_text


def sync(
    targets: Mapping[Path, str], argv: list[str], root: Path, source: str, command: str
) -> int:
    """Write every target whose text differs, exit code 0; with ``--check`` in ``argv`` write
    nothing and, when one differs, name them (relative to ``root``) and say to run ``command``
    (``python -m <command>``), exit code 1."""
    stale = [
        path
        for path, text in targets.items()
        if not (path.is_file() and path.read_text(encoding="utf-8") == text)
    ]
    if "--check" not in argv:
        for path in stale:
            write_text(path, targets[path])
        return 0
    if stale:
        names = ", ".join(str(p.relative_to(root)) for p in stale)
        print(f"gpulab: error: {names} differ from {source}: run python -m {command}",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0
