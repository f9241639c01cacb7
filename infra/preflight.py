"""Preflight and teardown audit of one lab: its topology's checks as :class:`Check` rows.

:func:`preflight` and :func:`audit` hand the stack's Args to its topology's checks
(``infra/topologies/<name>/checks.py``; what the OpenStack ones share is
:mod:`infra.topologies.openstack.checks`); preflight adds the lab's network rows every
topology has (:mod:`infra.lab_net`: the names of its package sources, its proxy). A caller
may hand in the connections (tests pass a double of the OpenStack connection, a real Ironic
one and a vCenter simulator's); otherwise each topology makes its own from the stack.
Preflight then checks how the hosts are reached, for every topology alike
(:func:`infra.access.rows`: the key files, the bastion, each machine a stack lists with its
login and passwordless sudo).
"""

from __future__ import annotations

from typing import Any

from infra import access, lab_net
from infra.clouds import Check
from infra.config import LabConfig
from infra.topologies import get
from infra.topologies.contract import Conns


def preflight(
    cfg: LabConfig,
    *,
    os_conn: Any = None,
    bm_conn: Any = None,
    si: Any = None,
    provide: bool = False,
) -> list[Check]:
    """Every check for ``cfg``'s topology. ``provide`` first moves ``manageable`` Ironic nodes
    of the lab's resource class to ``available``."""
    conns = Conns(os_conn=os_conn, bm_conn=bm_conn, si=si, provide=provide)
    return (
        get(cfg.topology).preflight(cfg.args, conns)
        + lab_net.checks(cfg)
        + access.rows(cfg.args.routes())
    )


def audit(
    cfg: LabConfig, *, os_conn: Any = None, bm_conn: Any = None, si: Any = None
) -> list[Check]:
    """What of the lab is left after ``pulumi destroy`` (failing rows), or one passing row."""
    conns = Conns(os_conn=os_conn, bm_conn=bm_conn, si=si)
    return get(cfg.topology).audit(cfg.args, conns)
