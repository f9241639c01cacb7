"""``local``: nothing is built; this machine is the one lab host (its GPUs, or CPU)."""

from __future__ import annotations

from typing import Any

from infra.specs.topology import Conns, Topology


def preflight(cfg: Any, conns: Conns) -> list[Any]:
    from infra.preflight import nothing_to_check

    return nothing_to_check(cfg, conns)


def audit(cfg: Any, conns: Conns) -> list[Any]:
    from infra.preflight import nothing_built

    return nothing_built(cfg, conns)


SPEC = Topology(
    name="local",
    summary="nothing: this machine is the one host",
    order=90,
    builder="infra.topologies.local",
    gpu_path=lambda _cfg: "local",
    # The machine itself, whatever it is: the record's fingerprint says if it is a VM.
    settings={"local": "bare-metal"},
    preflight=preflight,
    audit=audit,
    stack_file="Pulumi.local.yaml",
    defaults={"ssh_user": "root"},
    runs_here=True,
)
