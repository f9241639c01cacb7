"""Where the product's files are, and where results go: one rule for every command, the
Pulumi program and the dynamic providers.

The product's files (:data:`PROJECT`): the Pulumi project (``Pulumi.yaml``, ``__main__.py``,
the ``local`` stack), ``playbooks/`` with the roles, ``templates/``, ``studies/``,
``examples/``, ``docs/`` (``gpulab docs``), ``ansible.cfg`` and
``collections/requirements.yml``. From a checkout (an editable install, or ``pulumi up`` in
it) they are the checkout's root, the directory beside the packages that holds
``Pulumi.yaml``; a wheel carries a copy of them in ``infra/project/``
(``setup.py`` puts it there), so an installed gpulab finds them without a checkout. The
packages' own data (suites, reference results, vendor package lists, the report's template)
is package data, found beside each package's modules.

Results: ``$GPULAB_RESULTS`` if set, else ``results/`` under the current directory; a stack's
records live in ``<root>/<stack>/``. The Pulumi engine starts the program and the provider host
in the project directory, so ``pulumi up`` and ``gpulab up`` write to
``<project>/results/<stack>/``.
"""

from __future__ import annotations

import os
from pathlib import Path

from workloads.paths import PACKAGES_DIR

BUNDLED_PROJECT = Path(__file__).resolve().parent / "project"  # what a wheel carries


def _project() -> Path:
    return PACKAGES_DIR if (PACKAGES_DIR / "Pulumi.yaml").is_file() else BUNDLED_PROJECT


PROJECT = _project()


def shown(path: Path) -> str:
    """``path`` relative to :data:`PROJECT` where it lies below it (shorter in messages and
    outputs), else as it is."""
    try:
        return str(path.resolve().relative_to(PROJECT))
    except ValueError:
        return str(path)


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
