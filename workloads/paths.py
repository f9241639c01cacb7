"""Where gpulab's own files are: the one answer every module uses, from a checkout, a wheel
install or a GPU host (the ground floor: the runner, the report and the lab import it).

:data:`PACKAGES_DIR` is the directory that holds the ``workloads`` package, and on a
controller the ``infra`` and ``report`` packages beside it: the root of a checkout, the
``site-packages`` of a wheel install, ``/opt/gpulab`` on a GPU host (the workload_env role
ships ``workloads/`` there). A process that runs ``python -m workloads`` gets it first on
``PYTHONPATH`` (:func:`python_path`); the records' git revision is read there.

The controller's other files (the Pulumi project, playbooks, templates, studies, example
stacks) are :data:`infra.paths.PROJECT`, found from this one. A package's own data files
(suites, reference results, the report's template) live in the package.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

PACKAGES_DIR = Path(__file__).resolve().parents[1]


def python_path(env: Mapping[str, str] | None = None) -> str:
    """``PYTHONPATH`` for a child process that imports gpulab: :data:`PACKAGES_DIR`, then the
    ``PYTHONPATH`` of ``env`` (default: this process's environment)."""
    given = (os.environ if env is None else env).get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (str(PACKAGES_DIR), given) if p)
