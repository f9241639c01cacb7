"""``ironic-bm``'s builder: a bare-metal flavor of the lab's resource class, and
``host_count`` Nova servers of it on the lab network (the shared OpenStack parts)."""

from __future__ import annotations

import pulumi
import pulumi_openstack as openstack

from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX
from infra.topologies.ironic_bm import SPEC
from infra.topologies.ironic_bm.args import IronicBmArgs
from infra.topologies.openstack.base import build_base, build_servers


def baremetal_extra_specs(args: IronicBmArgs) -> dict[str, str]:
    """Schedule on exactly one node of the resource class; no VCPU/RAM/disk inventory."""
    specs = {
        f"resources:{args.resource_class_spec}": "1",
        "resources:VCPU": "0",
        "resources:MEMORY_MB": "0",
        "resources:DISK_GB": "0",
    }
    specs.update({f"trait:{t}": "required" for t in args.required_traits})
    return specs


class IronicBareMetalLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, args: IronicBmArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:IronicBareMetalLab", args.lab, None, opts)
        base = build_base(args, self)
        self.flavor = openstack.compute.Flavor(
            f"{args.lab}-bm",
            name=f"{args.lab}-bm",
            vcpus=args.flavor_vcpus,
            ram=args.flavor_ram_mb,
            disk=args.flavor_disk_gb,
            extra_specs=baremetal_extra_specs(args),
            description=f"gpulab lab {args.lab}: Ironic {args.resource_class} nodes",
            opts=pulumi.ResourceOptions(parent=self, provider=base.provider),
        )
        # Config drive: Ironic nodes often cannot reach the metadata service at boot.
        self.hosts = build_servers(
            args, base, self.flavor, self, gpu_path=SPEC.gpu_path(args), config_drive=True
        )
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})


def build(args: IronicBmArgs) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = IronicBareMetalLab(args)
    return lab, lab.hosts
