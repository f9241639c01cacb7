"""``local``'s preflight and audit: no cloud, one passing row each."""

from __future__ import annotations

from infra.clouds import Check, ok
from infra.topologies.contract import Conns
from infra.topologies.local.args import LocalArgs


def preflight(args: LocalArgs, _conns: Conns) -> list[Check]:
    return [ok(f"topology {args.topology}", "this machine is the lab: no cloud to check")]


def audit(args: LocalArgs, _conns: Conns) -> list[Check]:
    return [ok(f"topology {args.topology}", "nothing is built in a cloud")]
