"""OpenStack preflight checks: what a stack needs from the cloud before a long ``pulumi up``.

Each function takes a connection (openstacksdk, or a double with the same calls) and plain
values, and returns :class:`~infra.clouds.Check` rows; a cloud that cannot be asked becomes a
failing row naming the call, not an exception, so one table shows everything at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from infra.clouds import Check, CloudError, fail, ok
from infra.clouds.openstack import (
    Connection,
    baremetal_requirements,
    guard,
    parse_pci_alias,
)


def _asked(name: str, fn: Callable[[], list[Check]]) -> list[Check]:
    try:
        return fn()
    except CloudError as exc:
        return [fail(name, str(exc), "fix access to the cloud (see the message), then rerun")]


def check_image(conn: Connection, name: str, os_distro: str | None = None) -> list[Check]:
    """The Glance image exists, is active, and (Magnum) carries the ``os_distro`` it needs."""
    row = f"image {name}"

    def run() -> list[Check]:
        with guard(f"Glance image {name}"):
            image = conn.image.find_image(name, ignore_missing=True)
        if image is None:
            return [
                fail(
                    row,
                    "not found in Glance",
                    f"upload it (openstack image create {name} ...) or set gpulab:image",
                )
            ]
        if image.status != "active":
            return [fail(row, f"status {image.status}", "wait for the upload or re-upload it")]
        if os_distro and (image.os_distro or "") != os_distro:
            return [
                fail(
                    row,
                    f"os_distro is {image.os_distro!r}, Magnum needs {os_distro!r}",
                    f"openstack image set --property os_distro={os_distro} {name}",
                )
            ]
        extra = f", os_distro {image.os_distro}" if os_distro else ""
        return [ok(row, f"active{extra}")]

    return _asked(row, run)


def find_flavor(conn: Connection, name: str) -> tuple[Any, dict[str, str]]:
    """(flavor or None, its extra specs)."""
    with guard(f"Nova flavor {name}"):
        flavor = conn.compute.find_flavor(name, ignore_missing=True, get_extra_specs=True)
    if flavor is None:
        return None, {}
    return flavor, dict(flavor.extra_specs or {})


def check_gpu_flavor(conn: Connection, name: str, server_type: str = "vm") -> list[Check]:
    """An existing flavor (Magnum's node flavor) gives its server a GPU: a PCI alias for a VM,
    a bare-metal resource class for Ironic. Rows name the alias / class the flavor uses."""
    row = f"flavor {name}"

    def run() -> list[Check]:
        flavor, specs = find_flavor(conn, name)
        if flavor is None:
            return [fail(row, "not found", f"create flavor {name} or set gpulab:node_flavor")]
        size = f"{flavor.vcpus} vCPU, {flavor.ram} MB"
        if server_type == "bm":
            rc, traits = baremetal_requirements(specs)
            if rc is None:
                return [
                    fail(
                        row,
                        f"{size}; no resources:CUSTOM_<CLASS>=1 extra spec",
                        f"openstack flavor set {name} --property resources:CUSTOM_<CLASS>=1 "
                        "--property resources:VCPU=0 --property resources:MEMORY_MB=0 "
                        "--property resources:DISK_GB=0",
                    )
                ]
            t = f", traits {','.join(traits)}" if traits else ""
            return [ok(row, f"bare metal, resource class {rc}{t}")]
        spec = specs.get("pci_passthrough:alias")
        if not spec:
            return [
                fail(
                    row,
                    f"{size}; no pci_passthrough:alias extra spec, so no GPU",
                    f"openstack flavor set {name} --property "
                    "pci_passthrough:alias=<alias>:1 (alias from nova.conf [pci])",
                )
            ]
        try:
            aliases = parse_pci_alias(spec)
        except ValueError as exc:
            return [fail(row, str(exc), f"fix the extra spec on flavor {name}")]
        named = ", ".join(f"{a} x{c}" for a, c in aliases.items())
        return [ok(row, f"{size}; PCI alias {named}")]

    return _asked(row, run)


def check_pci_alias(
    conn: Connection, alias: str, count: int, lab_prefix: str | None = None
) -> list[Check]:
    """The nova.conf ``[pci] alias`` the stack's flavor will name is in use in this cloud.

    Nova's API does not list aliases, so the evidence is an existing flavor (not one the lab
    made itself) that names the alias with at least ``count`` devices; a cloud that offers the
    GPU offers such a flavor. The lab's own flavor asks for ``alias:count``.
    """
    row = f"pci alias {alias}"

    def run() -> list[Check]:
        with guard("Nova flavor list"):
            flavors = list(conn.compute.flavors(details=True, get_extra_specs=True))
        users: dict[str, int] = {}
        for f in flavors:
            if lab_prefix and (f.name or "").startswith(lab_prefix):
                continue
            spec = (f.extra_specs or {}).get("pci_passthrough:alias")
            if not spec:
                continue
            try:
                n = parse_pci_alias(spec).get(alias)
            except ValueError:
                continue
            if n:
                users[f.name] = n
        if not users:
            return [
                fail(
                    row,
                    "no flavor in this cloud names this alias",
                    f"check that nova.conf [pci] alias has name={alias} on the API and "
                    f"compute nodes (device_spec for the GPU); or set gpulab:pci_alias",
                )
            ]
        best = max(users.values())
        detail = "used by " + ", ".join(f"{k} (x{v})" for k, v in sorted(users.items()))
        if best < count:
            return [
                fail(
                    row,
                    f"{detail}; none asks for {count} devices",
                    f"make sure a hypervisor has {count} GPUs of alias {alias} "
                    "or lower the count in gpulab:pci_alias",
                )
            ]
        return [ok(row, detail)]

    return _asked(row, run)


def check_external_network(conn: Connection, name: str) -> list[Check]:
    row = f"external network {name}"

    def run() -> list[Check]:
        with guard(f"Neutron network {name}"):
            net = conn.network.find_network(name, ignore_missing=True)
        if net is None:
            return [
                fail(
                    row,
                    "not found",
                    "set gpulab:external_network to the provider "
                    "network (openstack network list --external)",
                )
            ]
        if not net.is_router_external:
            return [
                fail(
                    row,
                    "exists but is not router:external",
                    "use an external network (openstack network list --external)",
                )
            ]
        return [ok(row, f"router:external, status {net.status}")]

    return _asked(row, run)


def check_network(conn: Connection, name: str) -> list[Check]:
    """The existing network ``gpulab:network`` names: visible to the project, up, with a
    subnet to take the hosts' addresses from (the lab makes none on it)."""
    row = f"network {name}"

    def run() -> list[Check]:
        with guard(f"Neutron network {name}"):
            net = conn.network.find_network(name, ignore_missing=True)
        if net is None:
            return [
                fail(
                    row,
                    "not found (gpulab:network)",
                    "set gpulab:network to a network the project can use (openstack network "
                    "list; for Ironic's flat network interface the provisioning network the "
                    "nodes are cabled to), or remove it to let the lab make one",
                )
            ]
        subnets = list(getattr(net, "subnet_ids", None) or [])
        if not subnets:
            return [
                fail(
                    row,
                    "has no subnet: the hosts' ports would get no address (gpulab:network)",
                    f"openstack subnet create --network {name} --subnet-range CIDR ... "
                    "(the network's owner), or set gpulab:network to another network",
                )
            ]
        if (net.status or "ACTIVE") != "ACTIVE":
            return [fail(row, f"status {net.status} (gpulab:network)", "ask the network's owner")]
        kind = getattr(net, "provider_network_type", None)
        shown = f"{kind} provider network, " if kind else ""
        return [ok(row, f"{shown}{len(subnets)} subnet(s), status {net.status}")]

    return _asked(row, run)


@dataclass(frozen=True)
class Demand:
    """What a stack asks of the project's quotas."""

    instances: int
    cores: int
    ram_mb: int
    floating_ips: int


def _room(limit: int | None, used: int | None) -> int | None:
    """Free room under a quota; None means unlimited (-1) or not reported."""
    if limit is None or limit < 0:
        return None
    return limit - (used or 0)


def check_quotas(conn: Connection, demand: Demand) -> list[Check]:
    """Instances, cores, RAM (Nova limits) and floating IPs (Neutron quota) vs ``demand``."""

    def run_compute() -> list[Check]:
        with guard("Nova limits"):
            a = conn.compute.get_limits().absolute
        rows = []
        for label, want, limit, used in (
            ("instances", demand.instances, a.instances, a.instances_used),
            ("cores", demand.cores, a.total_cores, a.total_cores_used),
            ("ram MB", demand.ram_mb, a.total_ram, a.total_ram_used),
        ):
            rows.append(_quota_row(label, want, limit, used))
        return rows

    def run_network() -> list[Check]:
        with guard("Neutron quota"):
            q = conn.network.get_quota(conn.current_project_id, details=True)
        fip = q.floating_ips or {}
        return [
            _quota_row(
                "floating IPs",
                demand.floating_ips,
                fip.get("limit"),
                (fip.get("used") or 0) + (fip.get("reserved") or 0),
            )
        ]

    return _asked("quota compute", run_compute) + _asked("quota floating IPs", run_network)


def _quota_row(label: str, want: int, limit: int | None, used: int | None) -> Check:
    room = _room(limit, used)
    name = f"quota {label}"
    if room is None:
        return ok(name, f"needs {want}, unlimited")
    detail = f"needs {want}, {room} free ({used or 0} used of {limit})"
    if want > room:
        return fail(
            name,
            detail,
            f"ask the cloud admin to raise the {label} quota by {want - room}, or shrink the stack",
        )
    return ok(name, detail)


def check_magnum(
    conn: Connection,
    *,
    image: str,
    external_network: str,
    server_type: str,
    network_driver: str = "calico",
    lab: str = "gpulab",
    probe_template: bool = True,
    os_distro: str = "ubuntu",
) -> list[Check]:
    """Magnum answers (a conductor is up) and a driver of it takes a Kubernetes cluster
    template of this server type and image: a throwaway template is created and deleted, since
    that is where Magnum picks the driver for (server_type, the image's os_distro, coe).
    Magnum has no API that lists its drivers; with an ``ubuntu`` image the driver that
    answers for ``vm`` is the Cluster API driver (magnum-cluster-api), the Heat driver
    (deprecated in 2025.1) taking only Fedora CoreOS. The probe's ``cluster_distro`` says which
    distro Magnum resolved."""
    rows = []

    def run_services() -> list[Check]:
        with guard("Magnum services"):
            services = list(conn.container_infrastructure_management.services())
        up = [s for s in services if s.binary == "magnum-conductor" and s.state == "up"]
        if not up:
            states = ", ".join(f"{s.host}:{s.state}" for s in services) or "none"
            return [
                fail(
                    "magnum conductor",
                    f"no magnum-conductor up ({states})",
                    "start magnum-conductor (the cloud admin's job)",
                )
            ]
        return [ok("magnum conductor", f"{len(up)} up")]

    rows += _asked("magnum conductor", run_services)
    if not probe_template or not rows[-1].passed:
        return rows
    capi = os_distro == "ubuntu" and server_type == "vm"
    row = (
        "magnum Cluster API driver (vm, ubuntu, kubernetes)"
        if capi
        else f"magnum driver ({server_type}, {os_distro}, kubernetes)"
    )

    def run_probe() -> list[Check]:
        cim = conn.container_infrastructure_management
        name = f"{lab}-preflight-{uuid.uuid4().hex[:8]}"
        try:
            with guard("Magnum cluster template"):
                tmpl = cim.create_cluster_template(
                    name=name,
                    coe="kubernetes",
                    image_id=image,
                    server_type=server_type,
                    external_network_id=external_network,
                    network_driver=network_driver,
                    is_public=False,
                )
        except CloudError as exc:
            fix = (
                "enable the Cluster API driver: pip install magnum-cluster-api on every "
                "magnum-conductor host, restart the conductors, and keep it out of [drivers] "
                "disabled_drivers in magnum.conf"
                if capi
                else "Magnum has no driver for this (server_type, os_distro): the Cluster API "
                "driver runs Ubuntu VMs only; for containers on bare metal use ironic-bm with "
                "the docker or k8s execution environment"
            )
            return [fail(row, str(exc), fix)]
        distro = getattr(tmpl, "cluster_distro", None) or os_distro
        with guard("Magnum cluster template delete"):
            cim.delete_cluster_template(tmpl)
        return [
            ok(
                row,
                f"enabled: a probe template (cluster_distro {distro}) was created and deleted",
            )
        ]

    return rows + _asked(row, run_probe)
