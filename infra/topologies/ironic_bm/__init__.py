"""``ironic-bm``: Nova instances on Ironic nodes through a bare-metal flavor (whole machine)."""

from __future__ import annotations

from infra.topologies.contract import Topology
from infra.topologies.ironic_bm.args import IronicBmArgs
from infra.topologies.openstack.args import check_server_config


def describe(args: IronicBmArgs) -> list[tuple[str, str]]:
    return [("(flavor)", f"resources:{args.resource_class_spec}=1")]


def warnings(args: IronicBmArgs) -> list[str]:
    """What an ironic-bm lab does not do although its keys read as if it would."""
    lines = [
        f"gpulab:admin_cidr {args.admin_cidr}: the lab's security group is not enforced on "
        "bare-metal ports by most Ironic clouds (flat and noop network interfaces never, "
        "neutron only where the switch's ML2 driver applies it), so SSH is not limited to "
        "admin_cidr: the network's own firewall or the hosts' must do that (docs/topologies.md)"
    ]
    if not args.network:
        lines.append(
            "gpulab:network unset: the lab makes its own network, which only nodes on Ironic's "
            "neutron network interface can join; on the common flat interface set gpulab:network "
            "to the provider network the nodes are cabled to (gpulab preflight checks the nodes)"
        )
    return lines


SPEC = Topology(
    name="ironic-bm",
    summary="Nova instances on Ironic nodes through a bare-metal flavor "
    "(resources:CUSTOM_<CLASS>=1, VCPU/MEMORY_MB/DISK_GB=0)",
    order=10,
    args=IronicBmArgs,
    builder="infra.topologies.ironic_bm.build",
    checks="infra.topologies.ironic_bm.checks",
    gpu_paths=("whole-machine",),
    gpu_path=lambda _args: "whole-machine",
    check_config=check_server_config,
    describe=describe,
    warnings=warnings,
    stack_file="examples/ironic-bm/Pulumi.ironic-bm.yaml",
    extras=("openstack",),
)
