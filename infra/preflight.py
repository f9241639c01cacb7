"""Preflight and teardown audit of one lab: its topology's checks as :class:`Check` rows.

:func:`preflight` and :func:`audit` hand the config to the topology's spec
(:mod:`infra.specs.topologies`); the helpers below are what the specs share: connections made
from the config (OpenStack: clouds.yaml entry ``gpulab:os_cloud`` or ``OS_*``; vSphere:
``gpulab:vsphere_server``/``vsphere_user`` with the password from ``VSPHERE_PASSWORD``, as
pulumi-vsphere reads it) unless a caller hands them in (tests pass a double of the OpenStack
connection and a real Ironic one), Ironic readiness, and the OpenStack rows every OpenStack
topology has.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from infra.clouds import Check, CloudError, fail, ok
from infra.config import LabConfig
from infra.specs.topology import Conns
from infra.specs.topology import get as topology

FIXES = {
    "openstack connection": "check gpulab:os_cloud and its clouds.yaml entry, or the OS_* "
    "variables (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, ...)",
    "vcenter connection": "check gpulab:vsphere_server (host[:port]), gpulab:vsphere_user "
    "(or VSPHERE_USER), VSPHERE_PASSWORD and gpulab:vsphere_insecure",
}


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
    rows: list[Check] = topology(cfg.topology).preflight(cfg, conns)
    return rows


def audit(
    cfg: LabConfig, *, os_conn: Any = None, bm_conn: Any = None, si: Any = None
) -> list[Check]:
    """What of the lab is left after ``pulumi destroy`` (failing rows), or one passing row."""
    conns = Conns(os_conn=os_conn, bm_conn=bm_conn, si=si)
    rows: list[Check] = topology(cfg.topology).audit(cfg, conns)
    return rows


# ------------------------------------------------------------------- shared by the specs


def connected(name: str, make: Callable[[], Any]) -> tuple[Any, list[Check]]:
    """(connection, []) or (None, one failing row naming what to fix)."""
    try:
        return make(), []
    except CloudError as exc:
        return None, [fail(name, str(exc), FIXES[name])]


def openstack_connection(cfg: LabConfig) -> Any:
    from infra.clouds import openstack

    return openstack.connect(cfg.os_cloud)


def vsphere_connection(cfg: LabConfig) -> Any:
    from infra.clouds import vsphere

    assert cfg.vsphere_server is not None
    host, port = vsphere.split_server(cfg.vsphere_server)
    user = os.environ.get("VSPHERE_USER") or cfg.vsphere_user or ""
    password = os.environ.get("VSPHERE_PASSWORD", "")
    if not password:
        raise CloudError(
            f"vCenter {host}:{port}: no password: set VSPHERE_PASSWORD (the stack "
            "file keeps gpulab:vsphere_password encrypted)"
        )
    return vsphere.connect(host, user, password, port=port, insecure=cfg.vsphere_insecure)


def openstack(cfg: LabConfig, conns: Conns) -> tuple[Any, list[Check]]:
    """The handed-in OpenStack connection, or one made from ``cfg``."""
    if conns.os_conn is not None:
        return conns.os_conn, []
    return connected("openstack connection", lambda: openstack_connection(cfg))


def vcenter(cfg: LabConfig, conns: Conns) -> tuple[Any, list[Check]]:
    """The handed-in vCenter service instance, or one made from ``cfg``."""
    if conns.si is not None:
        return conns.si, []
    return connected("vcenter connection", lambda: vsphere_connection(cfg))


def image_and_network(cfg: LabConfig, conn: Any, os_distro: str | None = None) -> list[Check]:
    """The rows every OpenStack topology starts with: its image and external network."""
    from infra.clouds import openstack_preflight as op

    assert cfg.image and cfg.external_network
    rows = op.check_image(conn, cfg.image, os_distro=os_distro)
    return rows + op.check_external_network(conn, cfg.external_network)


def servers_demand(cfg: LabConfig) -> Any:
    """Quota demand of ``host_count`` servers of the lab's flavor (ironic-bm, nova-pci)."""
    from infra.clouds import openstack_preflight as op

    hosts = cfg.host_count or 1
    return op.Demand(
        hosts, hosts * (cfg.flavor_vcpus or 0), hosts * (cfg.flavor_ram_mb or 0), hosts
    )


def readiness(
    bm_conn: Any, resource_class: str, count: int, traits: Sequence[str], provide: bool
) -> list[Check]:
    """Ironic nodes of ``resource_class`` ready for ``count`` instances (after ``provide``)."""
    from infra.clouds import ironic

    rows = []
    try:
        if provide:
            moved = ironic.make_available(bm_conn, resource_class)
            rows.append(
                ok(
                    "ironic provide",
                    "moved to available: "
                    + (", ".join(moved) if moved else "none were manageable"),
                )
            )
        rows += ironic.readiness(bm_conn, resource_class, count, traits).checks()
    except CloudError as exc:
        rows.append(
            fail(
                f"ironic nodes {resource_class}",
                str(exc),
                "check that the cloud has Ironic and the user may list nodes",
            )
        )
    return rows


def openstack_audit(
    cfg: LabConfig, conns: Conns, *, magnum: bool = False
) -> tuple[Any, list[Check]]:
    """(connection, rows): what of the lab is left in OpenStack (Magnum too when ``magnum``)."""
    from infra.clouds.openstack_audit import audit_openstack

    conn, rows = openstack(cfg, conns)
    if conn is None:
        return None, rows
    return conn, audit_openstack(conn, cfg.lab, magnum=magnum)


def nothing_to_check(cfg: LabConfig, _conns: Conns) -> list[Check]:
    return [ok(f"topology {cfg.topology}", "this machine is the lab: no cloud to check")]


def nothing_built(cfg: LabConfig, _conns: Conns) -> list[Check]:
    return [ok(f"topology {cfg.topology}", "nothing is built in a cloud")]
