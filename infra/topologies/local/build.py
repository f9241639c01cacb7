"""``local``: no cloud resources; this machine is the one lab host."""

from __future__ import annotations

import pulumi

from infra.config import LabConfig
from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX, gpu_path, host_groups


class LocalLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:LocalLab", cfg.lab, None, opts)
        self.hosts = [
            Host(
                name="localhost",
                address="127.0.0.1",
                ssh_user=cfg.ssh_user,
                groups=host_groups(cfg),
                gpu_path=gpu_path(cfg),
                vars={"lab": cfg.lab, "ansible_connection": "local"},
            )
        ]
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})


def build(cfg: LabConfig) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = LocalLab(cfg)
    return lab, lab.hosts
