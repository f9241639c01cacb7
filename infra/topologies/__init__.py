"""One builder module per topology: a ComponentResource and ``build(cfg) -> (component, hosts)``.

Which module builds which topology is part of the topology's spec
(:attr:`infra.specs.topology.Topology.builder`); modules are imported on demand so a ``local``
lab never imports the cloud SDKs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def builder(topology: str) -> Callable[[Any], tuple[Any, list[Any]]]:
    """The function that builds ``topology``'s resources (its spec's builder module)."""
    from infra.specs.topology import get

    return get(topology).build
