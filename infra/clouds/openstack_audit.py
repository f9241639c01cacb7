"""OpenStack teardown audit: what of a lab is left after ``pulumi destroy``.

Every kind the topologies create is listed: servers, floating IPs, ports, volumes, routers,
subnets, networks, security groups, flavors, keypairs, server groups, and for Magnum clusters
and cluster templates. A resource belongs to the lab when its name is ``<lab>`` or starts with
``<lab>-`` (how the topologies name everything), or when it carries the lab's name as a tag
(Nova, Neutron), a metadata value (Nova, Cinder) or a label value (Magnum);
``gpulab-lab=<lab>`` / ``lab:<lab>`` style tags count too. One failing row per leftover, with
the command that removes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from infra.clouds import Check, CloudError, fail, ok
from infra.clouds.openstack import Connection, guard


def carries_lab(resource: Any, lab: str) -> bool:
    name = getattr(resource, "name", None) or ""
    if name == lab or name.startswith(f"{lab}-"):
        return True
    tags: Iterable[str] = getattr(resource, "tags", None) or []
    for t in tags:
        if t == lab or t.endswith((f"={lab}", f":{lab}")):
            return True
    for attr in ("metadata", "labels"):
        values: Mapping[str, Any] = getattr(resource, attr, None) or {}
        if lab in (str(v) for v in values.values()):
            return True
    return False


# (row label, how to list, the CLI that deletes one)
KINDS: tuple[tuple[str, Callable[[Connection], Iterable[Any]], str], ...] = (
    ("server", lambda c: c.compute.servers(details=True), "openstack server delete {id}"),
    ("floating ip", lambda c: c.network.ips(), "openstack floating ip delete {id}"),
    ("port", lambda c: c.network.ports(), "openstack port delete {id}"),
    ("volume", lambda c: c.block_storage.volumes(details=True), "openstack volume delete {id}"),
    (
        "router",
        lambda c: c.network.routers(),
        "openstack router unset --external-gateway {id}; remove its subnets; "
        "openstack router delete {id}",
    ),
    ("subnet", lambda c: c.network.subnets(), "openstack subnet delete {id}"),
    ("network", lambda c: c.network.networks(), "openstack network delete {id}"),
    (
        "security group",
        lambda c: c.network.security_groups(),
        "openstack security group delete {id}",
    ),
    # The lab's own flavors (<lab>-bm, <lab>-pci), keypair (<lab>-key) and anti-affinity
    # server group (<lab>-spread) carry no tags: they are found by name.
    ("flavor", lambda c: c.compute.flavors(details=True), "openstack flavor delete {id}"),
    ("keypair", lambda c: c.compute.keypairs(), "openstack keypair delete {name}"),
    ("server group", lambda c: c.compute.server_groups(), "openstack server group delete {id}"),
)

MAGNUM = (
    (
        "cluster",
        lambda c: c.container_infrastructure_management.clusters(),
        "openstack coe cluster delete {id}",
    ),
    (
        "cluster template",
        lambda c: c.container_infrastructure_management.cluster_templates(),
        "openstack coe cluster template delete {id}",
    ),
)


def _label(resource: Any) -> str:
    name = getattr(resource, "name", None)
    rid = getattr(resource, "id", None) or ""
    if not name:  # floating IPs and some ports have no name
        name = getattr(resource, "floating_ip_address", None) or rid
    return name


def audit_openstack(conn: Connection, lab: str, *, magnum: bool = False) -> list[Check]:
    """Rows for every leftover of ``lab`` (servers, floating IPs, ports, volumes, routers,
    subnets, networks, security groups, flavors, keypairs, server groups; Magnum clusters and
    cluster templates when ``magnum``)."""
    kinds = KINDS + (MAGNUM if magnum else ())
    rows: list[Check] = []
    checked = []
    for kind, lister, delete in kinds:
        try:
            with guard(f"list {kind}s"):
                left = [r for r in lister(conn) if carries_lab(r, lab)]
        except CloudError as exc:
            rows.append(fail(f"audit {kind}s", str(exc), "fix access, then audit again"))
            continue
        checked.append(kind)
        for r in left:
            status = getattr(r, "status", None)
            detail = f"still exists{f' ({status})' if status else ''}, id {r.id}"
            fix = delete.format(id=r.id, name=_label(r))
            rows.append(fail(f"{kind} {_label(r)}", detail, fix))
    if not any(not r.passed for r in rows):
        rows.append(
            ok(f"openstack lab {lab}", "nothing left: " + ", ".join(f"{k}s" for k in checked))
        )
    return rows
