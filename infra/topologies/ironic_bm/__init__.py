"""``ironic-bm``: Nova instances on Ironic nodes through a bare-metal flavor (whole machine)."""

from __future__ import annotations

from typing import Any

from infra.specs.topology import Conns, Topology


def preflight(cfg: Any, conns: Conns) -> list[Any]:
    from infra import preflight as pf
    from infra.clouds import openstack_preflight as op

    conn, rows = pf.openstack(cfg, conns)
    if conn is None:
        return rows
    assert cfg.resource_class
    rows += pf.image_and_network(cfg, conn)
    rows += pf.readiness(
        conns.bm_conn or conn,
        cfg.resource_class,
        cfg.host_count or 1,
        cfg.required_traits,
        conns.provide,
    )
    return rows + op.check_quotas(conn, pf.servers_demand(cfg))


def audit(cfg: Any, conns: Conns) -> list[Any]:
    from infra import preflight as pf
    from infra.clouds import CloudError, fail, ironic

    conn, rows = pf.openstack_audit(cfg, conns)
    if conn is None:
        return rows
    assert cfg.resource_class
    try:
        rows += ironic.audit_nodes(conns.bm_conn or conn, cfg.resource_class)
    except CloudError as exc:
        rows.append(fail("ironic nodes", str(exc), "fix access, then audit again"))
    return rows


def describe(cfg: Any) -> list[tuple[str, str]]:
    return [("(flavor)", f"resources:{cfg.resource_class_spec}=1")]


SPEC = Topology(
    name="ironic-bm",
    summary="Nova instances on Ironic nodes through a bare-metal flavor "
    "(resources:CUSTOM_<CLASS>=1, VCPU/MEMORY_MB/DISK_GB=0)",
    order=10,
    builder="infra.topologies.ironic_bm",
    gpu_path=lambda _cfg: "whole-machine",
    settings={"whole-machine": "bare-metal"},
    preflight=preflight,
    audit=audit,
    describe=describe,
    stack_file="examples/ironic-bm/Pulumi.ironic-bm.yaml",
    # Display-only flavor sizes: a bare-metal flavor asks Placement for none of them.
    defaults={"flavor_vcpus": 1, "flavor_ram_mb": 1024, "flavor_disk_gb": 10},
)
