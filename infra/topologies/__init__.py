"""One package per topology, and the registry that finds them.

``infra/topologies/<name>/`` (``name`` is the topology's name with ``_`` for ``-``) holds all of
one topology: ``__init__.py`` defines ``SPEC = Topology(...)`` (:mod:`infra.topologies.contract`),
``args.py`` its keys (its Args dataclass), ``build.py`` its builder (a Pulumi
``ComponentResource``; imported only when a lab is built), ``checks.py`` its preflight and
audit. A package of parts several topologies share (``openstack/``) says ``SPEC = None``.

Adding a topology is adding its package and its example stack: config validation, the
program, preflight and audit, the generated ``Pulumi.yaml`` declarations and the docs tables
read the registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from infra.topologies.contract import Topology

__all__ = ["Topology", "get", "names", "registry"]


@cache
def registry() -> dict[str, Topology]:
    """Every topology, by name, in their ``order``: the packages here that define a SPEC.

    The packages are found, not listed: each is imported by its name here."""
    specs: list[Topology] = []
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            continue
        spec = getattr(importlib.import_module(f"{__name__}.{info.name}"), "SPEC", ...)
        if spec is None:  # parts that several topologies share
            continue
        if not isinstance(spec, Topology):
            raise TypeError(
                f"infra/topologies/{info.name}/__init__.py has no SPEC = Topology(...) "
                "(a package of shared parts says SPEC = None)"
            )
        if spec.name.replace("-", "_") != info.name:
            raise TypeError(f"infra/topologies/{info.name}/ holds topology {spec.name!r}")
        specs.append(spec)
    specs.sort(key=lambda s: (s.order, s.name))
    return {s.name: s for s in specs}


def names() -> tuple[str, ...]:
    return tuple(registry())


def get(name: str) -> Topology:
    try:
        return registry()[name]
    except KeyError:
        raise ValueError(f"topology {name!r} is not one of {', '.join(registry())}") from None
