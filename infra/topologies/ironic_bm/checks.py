"""``ironic-bm``'s preflight (image, networks, Ironic nodes ready and able to join the lab's
network, quotas) and audit."""

from __future__ import annotations

from infra.clouds import Check, CloudError, fail, ironic
from infra.clouds import openstack_preflight as op
from infra.topologies.contract import Conns
from infra.topologies.ironic_bm.args import IronicBmArgs
from infra.topologies.openstack import checks as shared


def preflight(args: IronicBmArgs, conns: Conns) -> list[Check]:
    conn, rows = shared.connection(args, conns)
    if conn is None:
        return rows
    assert args.resource_class
    rows += shared.image_and_network(args, conn)
    rows += shared.readiness(
        conns.bm_conn or conn,
        args.resource_class,
        args.host_count or 1,
        args.required_traits,
        conns.provide,
    )
    try:
        rows += ironic.check_network_interface(
            conns.bm_conn or conn, args.resource_class, args.network
        )
    except CloudError as exc:
        rows.append(fail("ironic network interface", str(exc), "fix access, then rerun"))
    return rows + op.check_quotas(conn, shared.servers_demand(args))


def audit(args: IronicBmArgs, conns: Conns) -> list[Check]:
    conn, rows = shared.leftovers(args, conns)
    if conn is None:
        return rows
    assert args.resource_class
    try:
        rows += ironic.audit_nodes(conns.bm_conn or conn, args.resource_class)
    except CloudError as exc:
        rows.append(fail("ironic nodes", str(exc), "fix access, then audit again"))
    return rows
