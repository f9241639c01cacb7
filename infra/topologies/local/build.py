"""``local``'s builder: no cloud resources; this machine is the one lab host."""

from __future__ import annotations

import pulumi

from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX, host_groups
from infra.topologies.local import SPEC
from infra.topologies.local.args import LocalArgs


class LocalLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, args: LocalArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:LocalLab", args.lab, None, opts)
        self.hosts = [
            Host(
                name="localhost",
                address="127.0.0.1",
                ssh_user=args.ssh_user,
                groups=host_groups(args),
                gpu_path=SPEC.gpu_path(args),
                vars={"lab": args.lab, "ansible_connection": "local"},
            )
        ]
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})


def build(args: LocalArgs) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = LocalLab(args)
    return lab, lab.hosts
