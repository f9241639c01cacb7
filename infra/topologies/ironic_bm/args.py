"""The keys of ``ironic-bm``: the OpenStack and server keys, and the Ironic nodes to take."""

import re
from dataclasses import dataclass
from typing import Annotated as A  # the key tables' lines stay short

from infra.keys.key import K
from infra.keys.types import RESOURCE_CLASS_RE, TRAIT_RE, List, Text
from infra.topologies.openstack.args import (
    FLAVOR_DISK_GB,
    FLAVOR_RAM_MB,
    FLAVOR_VCPUS,
    ServerArgs,
)


@dataclass(frozen=True, kw_only=True)
class IronicBmArgs(ServerArgs):
    """What ``ironic-bm`` takes. Its flavor sizes are display-only: a bare-metal flavor asks
    Placement for none of them."""

    # fmt: off
    flavor_vcpus: A[int | None, FLAVOR_VCPUS.but(default=1)] = None
    flavor_ram_mb: A[int | None, FLAVOR_RAM_MB.but(default=1024)] = None
    flavor_disk_gb: A[int | None, FLAVOR_DISK_GB.but(default=10)] = None
    resource_class: A[str | None, K(Text(RESOURCE_CLASS_RE, "an Ironic resource class of "
                                         "letters, digits, '.', '_' or '-'"),
                                    "Ironic nodes' resource_class", True)] = None
    required_traits: A[tuple[str, ...], K(List(Text(TRAIT_RE, ""), "trait names"),
                                          "traits the node must have", default=())] = ()
    # fmt: on

    @property
    def resource_class_spec(self) -> str:
        """Nova's normalized custom resource class: ``baremetal.gpu-p100`` ->
        ``CUSTOM_BAREMETAL_GPU_P100``."""
        assert self.resource_class is not None
        norm = re.sub(r"[^A-Z0-9_]", "_", self.resource_class.upper())
        return norm if norm.startswith("CUSTOM_") else f"CUSTOM_{norm}"
