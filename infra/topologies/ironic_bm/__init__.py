"""``ironic-bm``: Nova instances on Ironic nodes through a bare-metal flavor (whole machine)."""

from __future__ import annotations

from infra.topologies.contract import Topology
from infra.topologies.ironic_bm.args import IronicBmArgs
from infra.topologies.openstack.args import check_config


def describe(args: IronicBmArgs) -> list[tuple[str, str]]:
    return [("(flavor)", f"resources:{args.resource_class_spec}=1")]


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
    check_config=check_config,
    describe=describe,
    stack_file="examples/ironic-bm/Pulumi.ironic-bm.yaml",
    extras=("openstack",),
)
