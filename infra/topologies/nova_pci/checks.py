"""``nova-pci``'s preflight (image, network, the PCI alias on a flavor, quotas) and audit."""

from __future__ import annotations

from infra.clouds import Check
from infra.clouds import openstack_preflight as op
from infra.topologies.contract import Conns
from infra.topologies.nova_pci.args import NovaPciArgs
from infra.topologies.openstack import checks as shared


def preflight(args: NovaPciArgs, conns: Conns) -> list[Check]:
    conn, rows = shared.connection(args, conns)
    if conn is None:
        return rows
    rows += shared.image_and_network(args, conn)
    rows += op.check_pci_alias(
        conn, args.pci_alias_name, args.pci_alias_count, lab_prefix=f"{args.lab}-"
    )
    return rows + op.check_quotas(conn, shared.servers_demand(args))


def audit(args: NovaPciArgs, conns: Conns) -> list[Check]:
    return shared.leftovers(args, conns)[1]
