"""``local``: nothing is built; this machine is the one lab host (its GPUs, or CPU)."""

from __future__ import annotations

from typing import Any

from infra.topologies.contract import Topology
from infra.topologies.local.args import LocalArgs


def check_config(raw: dict[str, Any], _values: dict[str, Any], problems: list[str]) -> None:
    """No SSH reaches this machine: a key file or a bastion would be ignored, so say so."""
    for key in ("ssh_private_key_file", "bastion"):
        if raw.get(key) is not None:
            problems.append(
                f"gpulab:{key} is not used by topology local: this machine is the lab, "
                "reached without SSH"
            )


SPEC = Topology(
    name="local",
    summary="nothing: this machine is the one host",
    order=90,
    args=LocalArgs,
    builder="infra.topologies.local.build",
    checks="infra.topologies.local.checks",
    # The machine itself, whatever it is: the record's fingerprint says if it is a VM.
    gpu_paths=("local",),
    gpu_path=lambda _args: "local",
    check_config=check_config,
    stack_file="Pulumi.local.yaml",
    runs_here=True,
)
