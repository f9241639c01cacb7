"""``static``: nothing is built; the lab is machines that already exist, listed in the stack
(address, login, key, bastion, and what each machine is: bare metal, a VM with a GPU by
passthrough, a vGPU VM). The same flow runs on them (site play, workloads, records, outputs);
``down`` leaves them alone unless ``gpulab:cleanup_on_down`` asks it to remove what gpulab
installed."""

from __future__ import annotations

from infra.topologies.contract import Topology
from infra.topologies.static.args import MACHINES, StaticArgs, check_config


def _gpu_path(args: StaticArgs) -> str:
    """The gpu_path of its first machine (each host states its own: ``machine``)."""
    return args.hosts[0].gpu_path if args.hosts else MACHINES["bare-metal"]


def describe(args: StaticArgs) -> list[tuple[str, str]]:
    """One row per machine: how it is reached and the setting its records state."""
    rows = []
    for route, h in zip(args.routes(), args.hosts, strict=True):
        through = f" through bastion {route.bastion}" if route.bastion else ""
        rows.append(
            (
                f"host {route.host}",
                f"{route.user}@{h.address}:{h.port}{through}: {h.machine} (gpu_path {h.gpu_path})",
            )
        )
    return rows


SPEC = Topology(
    name="static",
    summary="nothing: machines that already exist, listed in the stack (address, user, key, "
    "bastion, what each machine is)",
    order=80,
    args=StaticArgs,
    builder="infra.topologies.static.build",
    checks="infra.topologies.static.checks",
    gpu_paths=tuple(MACHINES.values()),
    gpu_path=_gpu_path,
    check_config=check_config,
    describe=describe,
    stack_file="examples/static/Pulumi.static.yaml",
)
