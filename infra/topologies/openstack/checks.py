"""The preflight and audit rows every OpenStack topology has: the connection (the clouds.yaml
entry ``gpulab:os_cloud``, or ``OS_*``) unless a caller hands one in (tests pass a double of
the OpenStack connection and a real Ironic one), the image and external network, quota demand
of the lab's servers, Ironic node readiness, and what of a lab is left after teardown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from infra.clouds import Check, CloudError, connected, fail, ironic, ok, openstack
from infra.clouds import openstack_preflight as op
from infra.clouds.openstack_audit import audit_openstack
from infra.topologies.contract import Conns
from infra.topologies.openstack.args import OpenStackArgs, ServerArgs, existing_network

CONNECTION_FIX = (
    "check gpulab:os_cloud and its clouds.yaml entry, or the OS_* variables (OS_AUTH_URL, "
    "OS_USERNAME, OS_PASSWORD, ...)"
)


def connection(args: OpenStackArgs, conns: Conns) -> tuple[Any, list[Check]]:
    """The handed-in OpenStack connection, or one made from ``args``."""
    if conns.os_conn is not None:
        return conns.os_conn, []
    return connected("openstack connection", lambda: openstack.connect(args.os_cloud),
                     CONNECTION_FIX)  # fmt: skip


def image_and_network(args: OpenStackArgs, conn: Any, os_distro: str | None = None) -> list[Check]:
    """The rows every OpenStack topology starts with: its image, the existing network the
    hosts go on (``gpulab:network``) and the external network, each where the stack names it."""
    assert args.image
    rows = op.check_image(conn, args.image, os_distro=os_distro)
    network = existing_network(args)
    if network:
        rows += op.check_network(conn, network)
    if args.external_network:
        rows += op.check_external_network(conn, args.external_network)
    return rows


def servers_demand(args: ServerArgs) -> op.Demand:
    """Quota demand of ``host_count`` servers of the lab's flavor (a floating IP each when
    ``gpulab:floating_ips``)."""
    hosts = args.host_count or 1
    return op.Demand(
        hosts,
        hosts * (args.flavor_vcpus or 0),
        hosts * (args.flavor_ram_mb or 0),
        hosts if args.floating_ips else 0,
    )


def readiness(
    bm_conn: Any, resource_class: str, count: int, traits: Sequence[str], provide: bool
) -> list[Check]:
    """Ironic nodes of ``resource_class`` ready for ``count`` instances (after ``provide``)."""
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


def leftovers(
    args: OpenStackArgs, conns: Conns, *, magnum: bool = False
) -> tuple[Any, list[Check]]:
    """(connection, rows): what of the lab is left in OpenStack (Magnum too when ``magnum``)."""
    conn, rows = connection(args, conns)
    if conn is None:
        return None, rows
    return conn, audit_openstack(conn, args.lab, magnum=magnum)
