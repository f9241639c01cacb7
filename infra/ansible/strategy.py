"""The Ansible strategy of gpulab's runs: Mitogen's by default.

Ansible's own strategies start a Python interpreter on the host for every task and send it the
module with every module_util it imports, compiled there from source each time: about 0.2 s of
a host's CPU per task, a few hundred tasks a site run. Mitogen's strategy plugins (the
``mitogen`` package, a dependency) keep one interpreter per host and user for the run and send
each module once. Measured on the nspawn test hosts (2 cores): a first converge 63 s -> 44 s,
an idempotent second one 40 s -> 24 s.

``GPULAB_ANSIBLE_STRATEGY`` picks another: ``mitogen_linear`` (default), ``mitogen_free``, or
Ansible's own ``linear`` and ``free`` (no Mitogen: where it misbehaves). Connections Mitogen
does not take over (``community.general.chroot``) run as with Ansible's own strategy.

The variable is read from the environment of the ``gpulab`` command: the engine hands it on to
the provider host, whose playbook runs read it (:func:`strategy_env`). The commands that build
and then run Ansible (``up``, ``measure``, ``rebuild``, ``down``, ``study run`` with a lab arm)
call :func:`check_strategy` first, so a bad value is one line before anything is built.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path

from infra.ansible.inventory import InventoryError
from infra.errors import UsageError

ENV = "GPULAB_ANSIBLE_STRATEGY"
DEFAULT = "mitogen_linear"
STRATEGIES = ("mitogen_linear", "mitogen_free", "linear", "free")


def strategy_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``ANSIBLE_STRATEGY*`` settings of a run (InventoryError naming the variable for an
    unknown strategy, or for a Mitogen one where the ``mitogen`` package is missing)."""
    name = (os.environ if environ is None else environ).get(ENV, "").strip() or DEFAULT
    if name not in STRATEGIES:
        raise InventoryError(f"{ENV}={name!r} is not one of {', '.join(STRATEGIES)}")
    if not name.startswith("mitogen_"):
        return {"ANSIBLE_STRATEGY": name}
    spec = importlib.util.find_spec("ansible_mitogen")
    if spec is None or not spec.submodule_search_locations:
        raise InventoryError(
            f"{ENV}={name}: the mitogen package is not installed here "
            f"(pip install mitogen, or {ENV}=linear for Ansible's own strategy)"
        )
    plugins = Path(next(iter(spec.submodule_search_locations))) / "plugins" / "strategy"
    return {"ANSIBLE_STRATEGY_PLUGINS": str(plugins), "ANSIBLE_STRATEGY": name}


def check_strategy(environ: Mapping[str, str] | None = None) -> None:
    """:func:`strategy_env` before anything is built: its InventoryError as a UsageError (the
    CLI's one line naming the variable, exit 2)."""
    try:
        strategy_env(environ)
    except InventoryError as exc:
        raise UsageError(str(exc)) from None
