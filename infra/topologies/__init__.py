"""One module per topology, each with a ComponentResource and ``build(cfg) -> (component, hosts)``.

Modules are imported on demand so a ``local`` lab never imports the cloud SDKs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

MODULES = {
    "ironic-bm": "infra.topologies.ironic_bm",
    "nova-pci": "infra.topologies.nova_pci",
    "magnum-k8s": "infra.topologies.magnum_k8s",
    "vsphere-gpu": "infra.topologies.vsphere_gpu",
    "local": "infra.topologies.local",
}


def builder(topology: str) -> Callable[[Any], tuple[Any, list[Any]]]:
    """The ``build`` function of ``topology``'s module."""
    return importlib.import_module(MODULES[topology]).build
