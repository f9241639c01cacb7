"""``nova-pci``: Nova VMs with whole GPUs by PCI passthrough (flavor ``pci_passthrough:alias``)."""

from __future__ import annotations

from typing import Any

from infra.specs.topology import Conns, Topology


def preflight(cfg: Any, conns: Conns) -> list[Any]:
    from infra import preflight as pf
    from infra.clouds import openstack_preflight as op

    conn, rows = pf.openstack(cfg, conns)
    if conn is None:
        return rows
    rows += pf.image_and_network(cfg, conn)
    rows += op.check_pci_alias(
        conn, cfg.pci_alias_name, cfg.pci_alias_count, lab_prefix=f"{cfg.lab}-"
    )
    return rows + op.check_quotas(conn, pf.servers_demand(cfg))


def audit(cfg: Any, conns: Conns) -> list[Any]:
    from infra import preflight as pf

    rows: list[Any] = pf.openstack_audit(cfg, conns)[1]
    return rows


SPEC = Topology(
    name="nova-pci",
    summary="Nova VMs, flavor extra spec pci_passthrough:alias = <alias>:<count>",
    order=20,
    builder="infra.topologies.nova_pci",
    gpu_path=lambda _cfg: "pci-passthrough",
    settings={"pci-passthrough": "vm-passthrough"},
    preflight=preflight,
    audit=audit,
    stack_file="examples/nova-pci/Pulumi.nova-pci.yaml",
)
