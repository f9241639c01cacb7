"""Which optional dependencies (pyproject extras) a stack needs, and one line when they are
missing: the core install has no cloud SDK, so an OpenStack or vSphere stack names the extra to
install instead of failing on an import deep inside a command.

A topology names the extras it needs (its spec's ``extras``), so no topology is named here.
"""

from __future__ import annotations

import importlib.util

from infra.config.model import ConfigError
from infra.topologies import get

# extra -> the modules it installs
EXTRAS: dict[str, tuple[str, ...]] = {
    "openstack": ("openstack", "pulumi_openstack"),
    "vsphere": ("pyVmomi", "pulumi_vsphere"),
    "k8s": ("kubernetes",),
}


def missing(topology: str) -> list[tuple[str, list[str]]]:
    """(extra, its modules that are not installed) for each extra ``topology`` lacks."""
    out = []
    for extra in get(topology).extras:
        absent = [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]
        if absent:
            out.append((extra, absent))
    return out


def problems(topology: str) -> list[str]:
    """One line per extra ``topology`` needs and this install lacks, naming what to install."""
    return [
        f"topology {topology} needs the {extra} extra ({', '.join(absent)} not "
        f"installed): pip install 'gpulab[{extra}]' (or EXTRAS={extra} scripts/venv.sh)"
        for extra, absent in missing(topology)
    ]


def require(topology: str) -> None:
    """Raise a one-line :class:`ConfigError` naming the extra to install, if one is missing."""
    found = problems(topology)
    if found:
        raise ConfigError(found)
