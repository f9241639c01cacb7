"""``local``: nothing is built; this machine is the one lab host (its GPUs, or CPU)."""

from __future__ import annotations

from infra.topologies.contract import Topology
from infra.topologies.local.args import LocalArgs

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
    stack_file="Pulumi.local.yaml",
    runs_here=True,
)
