"""What every topology's builder shares: the component type prefix and host groups."""

from __future__ import annotations

from infra.keys.lab import LabArgs

TYPE_PREFIX = "gpulab:topology"


def host_groups(args: LabArgs, *extra: str) -> list[str]:
    """Inventory groups of a GPU host: ``gpu_hosts``, the topology's, then ``extra``."""
    return ["gpu_hosts", args.topology.replace("-", "_"), *extra]
