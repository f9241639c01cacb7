"""``nova-pci``: Nova VMs with whole GPUs by PCI passthrough (flavor ``pci_passthrough:alias``)."""

from __future__ import annotations

import pulumi
import pulumi_openstack as openstack

from infra.config import LabConfig
from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX, gpu_path
from infra.topologies.openstack_base import build_base, build_servers


def pci_extra_specs(cfg: LabConfig) -> dict[str, str]:
    specs = {"pci_passthrough:alias": f"{cfg.pci_alias_name}:{cfg.pci_alias_count}"}
    if cfg.cpu_pinning:
        specs["hw:cpu_policy"] = "dedicated"
    if cfg.numa_nodes is not None:
        specs["hw:numa_nodes"] = str(cfg.numa_nodes)
    return specs


class NovaPciLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:NovaPciLab", cfg.lab, None, opts)
        base = build_base(cfg, self)
        child = pulumi.ResourceOptions(parent=self, provider=base.provider)
        self.flavor = openstack.compute.Flavor(
            f"{cfg.lab}-pci",
            name=f"{cfg.lab}-pci",
            vcpus=cfg.flavor_vcpus,
            ram=cfg.flavor_ram_mb,
            disk=cfg.flavor_disk_gb,
            extra_specs=pci_extra_specs(cfg),
            description=f"gpulab lab {cfg.lab}: {cfg.pci_alias} by PCI passthrough",
            opts=child,
        )
        self.server_group = None
        if cfg.anti_affinity:
            self.server_group = openstack.compute.ServerGroup(
                f"{cfg.lab}-spread",
                name=f"{cfg.lab}-spread",
                policies="anti-affinity",
                opts=child,
            )
        self.hosts = build_servers(
            cfg,
            base,
            self.flavor,
            self,
            gpu_path=gpu_path(cfg),
            server_group=self.server_group,
        )
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})


def build(cfg: LabConfig) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = NovaPciLab(cfg)
    return lab, lab.hosts
