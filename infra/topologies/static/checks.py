"""``static``'s preflight and audit. There is no cloud: preflight says what is listed (the
SSH rows of every machine, key, bastion, login and sudo, are :func:`infra.preflight.preflight`'s
for every topology); audit says nothing was built and what ``down`` leaves on the machines."""

from __future__ import annotations

from collections import Counter

from infra.clouds import Check, ok
from infra.topologies.contract import Conns
from infra.topologies.static.args import StaticArgs


def preflight(args: StaticArgs, _conns: Conns) -> list[Check]:
    kinds = Counter(h.machine for h in args.hosts)
    listed = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    return [ok(f"topology {args.topology}", f"{len(args.hosts)} machines listed ({listed}): "
               "nothing to build")]  # fmt: skip


def audit(args: StaticArgs, _conns: Conns) -> list[Check]:
    left = (
        "gpulab's own directories were removed by down (cleanup_on_down)"
        if args.cleanup_on_down
        else "the machines keep what the site play installed (gpulab:cleanup_on_down: false)"
    )
    return [ok(f"topology {args.topology}", f"nothing is built in a cloud; {left}")]
