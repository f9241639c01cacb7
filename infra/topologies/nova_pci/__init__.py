"""``nova-pci``: Nova VMs with whole GPUs by PCI passthrough (flavor ``pci_passthrough:alias``)."""

from __future__ import annotations

from infra.topologies.contract import Topology
from infra.topologies.nova_pci.args import NovaPciArgs
from infra.topologies.openstack.args import check_server_config

SPEC = Topology(
    name="nova-pci",
    summary="Nova VMs, flavor extra spec pci_passthrough:alias = <alias>:<count>",
    order=20,
    args=NovaPciArgs,
    builder="infra.topologies.nova_pci.build",
    checks="infra.topologies.nova_pci.checks",
    gpu_paths=("pci-passthrough",),
    gpu_path=lambda _args: "pci-passthrough",
    check_config=check_server_config,
    stack_file="examples/nova-pci/Pulumi.nova-pci.yaml",
    extras=("openstack",),
)
