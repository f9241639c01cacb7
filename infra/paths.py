"""Where results go: one rule for every command, the Pulumi program and the dynamic providers.

``$GPULAB_RESULTS`` if set, else ``results/`` under the current directory; a stack's records
live in ``<root>/<stack>/``. The Pulumi engine starts the program and the provider host in the
project directory, so ``pulumi up`` and ``gpulab up`` write to ``<project>/results/<stack>/``.
"""

from __future__ import annotations

import os
from pathlib import Path

RESULTS_ENV = "GPULAB_RESULTS"


def results_root(override: str | os.PathLike[str] | None = None) -> Path:
    """The results root: ``override``, else ``$GPULAB_RESULTS``, else ``./results``."""
    chosen = override or os.environ.get(RESULTS_ENV) or Path.cwd() / "results"
    try:
        return Path(chosen).expanduser().resolve()
    except RuntimeError:  # ~user of no such user, or ~ without $HOME or a passwd entry
        from infra.errors import UsageError

        where = "the results directory" if override else f"${RESULTS_ENV}"
        raise UsageError(f"{where} {str(chosen)!r}: no such user's home directory") from None


def stack_results_dir(stack: str, override: str | os.PathLike[str] | None = None) -> Path:
    """``<results root>/<stack>``: where a stack's (or a local run's) records are written."""
    return results_root(override) / stack
