"""The keys of ``nova-pci``: the OpenStack and server keys (its flavor sizes required), the
GPU alias and the flavor's CPU and NUMA placement."""

from dataclasses import dataclass
from typing import Annotated as A  # the key tables' lines stay short

from infra.keys.key import K
from infra.keys.types import MAX_NUMA_NODES, Bool, Int, Parsed, _alias_count
from infra.topologies.openstack.args import (
    FLAVOR_DISK_GB,
    FLAVOR_RAM_MB,
    FLAVOR_VCPUS,
    ServerArgs,
)


@dataclass(frozen=True, kw_only=True)
class NovaPciArgs(ServerArgs):
    """What ``nova-pci`` takes."""

    # fmt: off
    flavor_vcpus: A[int | None, FLAVOR_VCPUS.but(required=True)] = None
    flavor_ram_mb: A[int | None, FLAVOR_RAM_MB.but(required=True)] = None
    flavor_disk_gb: A[int | None, FLAVOR_DISK_GB.but(required=True)] = None
    pci_alias: A[str | None, K(Parsed(_alias_count, "<alias>:<count> with a nova.conf [pci] "
                                      "alias name and a count >= 1, e.g. a100:1"),
                               "GPU alias and count per VM", True)] = None
    cpu_pinning: A[bool, K(Bool, "hw:cpu_policy=dedicated", default=False)] = False
    numa_nodes: A[int | None, K(Int(1, MAX_NUMA_NODES), "hw:numa_nodes")] = None
    anti_affinity: A[bool, K(Bool, "spread VMs over hypervisors", default=False)] = False
    # fmt: on

    @property
    def pci_alias_name(self) -> str:
        assert self.pci_alias is not None
        return self.pci_alias.rsplit(":", 1)[0]

    @property
    def pci_alias_count(self) -> int:
        assert self.pci_alias is not None
        return int(self.pci_alias.rsplit(":", 1)[1])
