"""``ironic-bm``: Nova instances on Ironic nodes through a bare-metal flavor (whole machine)."""

from __future__ import annotations

import pulumi
import pulumi_openstack as openstack

from infra.config import LabConfig
from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX, gpu_path
from infra.topologies.openstack_base import build_base, build_servers


def baremetal_extra_specs(cfg: LabConfig) -> dict[str, str]:
    """Schedule on exactly one node of the resource class; no VCPU/RAM/disk inventory."""
    specs = {
        f"resources:{cfg.resource_class_spec}": "1",
        "resources:VCPU": "0",
        "resources:MEMORY_MB": "0",
        "resources:DISK_GB": "0",
    }
    specs.update({f"trait:{t}": "required" for t in cfg.required_traits})
    return specs


class IronicBareMetalLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:IronicBareMetalLab", cfg.lab, None, opts)
        base = build_base(cfg, self)
        self.flavor = openstack.compute.Flavor(
            f"{cfg.lab}-bm",
            name=f"{cfg.lab}-bm",
            vcpus=cfg.flavor_vcpus,
            ram=cfg.flavor_ram_mb,
            disk=cfg.flavor_disk_gb,
            extra_specs=baremetal_extra_specs(cfg),
            description=f"gpulab lab {cfg.lab}: Ironic {cfg.resource_class} nodes",
            opts=pulumi.ResourceOptions(parent=self, provider=base.provider),
        )
        # Config drive: Ironic nodes often cannot reach the metadata service at boot.
        self.hosts = build_servers(
            cfg, base, self.flavor, self, gpu_path=gpu_path(cfg), config_drive=True
        )
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})


def build(cfg: LabConfig) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = IronicBareMetalLab(cfg)
    return lab, lab.hosts
