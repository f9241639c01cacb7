"""``nova-pci``'s builder: a flavor with the GPU alias, an anti-affinity group when asked,
and ``host_count`` Nova servers of it on the lab network (the shared OpenStack parts)."""

from __future__ import annotations

import pulumi
import pulumi_openstack as openstack

from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX
from infra.topologies.nova_pci import SPEC
from infra.topologies.nova_pci.args import NovaPciArgs
from infra.topologies.openstack.base import build_base, build_servers


def pci_extra_specs(args: NovaPciArgs) -> dict[str, str]:
    specs = {"pci_passthrough:alias": f"{args.pci_alias_name}:{args.pci_alias_count}"}
    if args.cpu_pinning:
        specs["hw:cpu_policy"] = "dedicated"
    if args.numa_nodes is not None:
        specs["hw:numa_nodes"] = str(args.numa_nodes)
    return specs


class NovaPciLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, args: NovaPciArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:NovaPciLab", args.lab, None, opts)
        base = build_base(args, self)
        child = pulumi.ResourceOptions(parent=self, provider=base.provider)
        self.flavor = openstack.compute.Flavor(
            f"{args.lab}-pci",
            name=f"{args.lab}-pci",
            vcpus=args.flavor_vcpus,
            ram=args.flavor_ram_mb,
            disk=args.flavor_disk_gb,
            extra_specs=pci_extra_specs(args),
            description=f"gpulab lab {args.lab}: {args.pci_alias} by PCI passthrough",
            opts=child,
        )
        self.server_group = None
        if args.anti_affinity:
            self.server_group = openstack.compute.ServerGroup(
                f"{args.lab}-spread",
                name=f"{args.lab}-spread",
                policies="anti-affinity",
                opts=child,
            )
        self.hosts = build_servers(
            args,
            base,
            self.flavor,
            self,
            gpu_path=SPEC.gpu_path(args),
            server_group=self.server_group,
        )
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})


def build(args: NovaPciArgs) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = NovaPciLab(args)
    return lab, lab.hosts
