"""``static``'s builder: no cloud resource, only its component; one host per listed machine,
with the gpu_path its ``machine`` states. The program checks that each machine answers before
this runs, and puts each one's key and bastion on it (:mod:`infra.access`)."""

from __future__ import annotations

import pulumi

from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX, host_groups
from infra.topologies.static.args import StaticArgs


class StaticLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, args: StaticArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:StaticLab", args.lab, None, opts)
        self.hosts = [
            Host(
                name=route.host,
                address=h.address,
                ssh_user=route.user,
                ssh_port=h.port,
                groups=host_groups(args),
                gpu_path=h.gpu_path,
                vars={"lab": args.lab},
            )
            for route, h in zip(args.routes(), args.hosts, strict=True)
        ]
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})


def build(args: StaticArgs) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = StaticLab(args)
    return lab, lab.hosts
