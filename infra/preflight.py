"""Preflight and teardown audit of one lab: the checks for its topology as :class:`Check` rows.

Glue between the validated stack config (:class:`infra.config.LabConfig`) and the per-cloud
modules in :mod:`infra.clouds`. Connections are made from the config (OpenStack: clouds.yaml
entry ``gpulab:os_cloud`` or ``OS_*``; vSphere: ``gpulab:vsphere_server``/``vsphere_user`` with
the password from ``VSPHERE_PASSWORD``, as pulumi-vsphere reads it) unless a caller hands them
in (tests pass a double of the OpenStack connection and a real Ironic one).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from infra.clouds import Check, CloudError, fail, ok
from infra.config import LabConfig

OPENSTACK = ("ironic-bm", "nova-pci", "magnum-k8s")


FIXES = {
    "openstack connection": "check gpulab:os_cloud and its clouds.yaml entry, or the OS_* "
                            "variables (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, ...)",
    "vcenter connection": "check gpulab:vsphere_server (host[:port]), gpulab:vsphere_user "
                          "(or VSPHERE_USER), VSPHERE_PASSWORD and gpulab:vsphere_insecure",
}


def _connected(name: str, make: Callable[[], Any]) -> tuple[Any, list[Check]]:
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
        raise CloudError(f"vCenter {host}:{port}: no password: set VSPHERE_PASSWORD (the stack "
                         "file keeps gpulab:vsphere_password encrypted)")
    return vsphere.connect(host, user, password, port=port, insecure=cfg.vsphere_insecure)


# -------------------------------------------------------------------------------- preflight

def preflight(cfg: LabConfig, *, os_conn: Any = None, bm_conn: Any = None, si: Any = None,
              provide: bool = False) -> list[Check]:
    """Every check for ``cfg``'s topology. ``provide`` first moves ``manageable`` Ironic nodes
    of the lab's resource class to ``available``."""
    if cfg.topology in OPENSTACK:
        if os_conn is None:
            os_conn, rows = _connected("openstack connection", lambda: openstack_connection(cfg))
            if os_conn is None:
                return rows
        return _openstack_preflight(cfg, os_conn, bm_conn or os_conn, provide)
    if cfg.topology == "vsphere-gpu":
        if si is None:
            si, rows = _connected("vcenter connection", lambda: vsphere_connection(cfg))
            if si is None:
                return rows
        return _vsphere_preflight(cfg, si)
    return [ok(f"topology {cfg.topology}", "this machine is the lab: no cloud to check")]


def _readiness(bm_conn: Any, resource_class: str, count: int, traits: Any,
               provide: bool) -> list[Check]:
    from infra.clouds import ironic

    rows = []
    try:
        if provide:
            moved = ironic.make_available(bm_conn, resource_class)
            rows.append(ok("ironic provide", "moved to available: "
                           + (", ".join(moved) if moved else "none were manageable")))
        rows += ironic.readiness(bm_conn, resource_class, count, traits).checks()
    except CloudError as exc:
        rows.append(fail(f"ironic nodes {resource_class}", str(exc),
                         "check that the cloud has Ironic and the user may list nodes"))
    return rows


def _openstack_preflight(cfg: LabConfig, conn: Any, bm_conn: Any, provide: bool) -> list[Check]:
    from infra.clouds import openstack_preflight as op
    from infra.clouds.openstack import baremetal_requirements

    rows: list[Check] = []
    assert cfg.image and cfg.external_network
    hosts = cfg.host_count or 1
    if cfg.topology == "magnum-k8s":
        rows += op.check_image(conn, cfg.image, os_distro="fedora-coreos")
    else:
        rows += op.check_image(conn, cfg.image)
    rows += op.check_external_network(conn, cfg.external_network)

    if cfg.topology == "ironic-bm":
        assert cfg.resource_class
        rows += _readiness(bm_conn, cfg.resource_class, hosts, cfg.required_traits, provide)
        demand = op.Demand(hosts, hosts * (cfg.flavor_vcpus or 0),
                           hosts * (cfg.flavor_ram_mb or 0), hosts)
    elif cfg.topology == "nova-pci":
        rows += op.check_pci_alias(conn, cfg.pci_alias_name, cfg.pci_alias_count,
                                   lab_prefix=f"{cfg.lab}-")
        demand = op.Demand(hosts, hosts * (cfg.flavor_vcpus or 0),
                           hosts * (cfg.flavor_ram_mb or 0), hosts)
    else:  # magnum-k8s
        server_type = cfg.server_type or "vm"
        masters, nodes = cfg.master_count or 1, cfg.node_count or 1
        assert cfg.master_flavor and cfg.node_flavor
        rows += op.check_gpu_flavor(conn, cfg.node_flavor, server_type)
        cores = ram = 0
        for name, n in ((cfg.master_flavor, masters), (cfg.node_flavor, nodes)):
            try:
                flavor, specs = op.find_flavor(conn, name)
            except CloudError as exc:
                rows.append(fail(f"flavor {name}", str(exc), "fix access, then rerun"))
                continue
            if flavor is None:
                if name != cfg.node_flavor:
                    rows.append(fail(f"flavor {name}", "not found",
                                     f"create flavor {name} or set gpulab:master_flavor"))
                continue
            if name != cfg.node_flavor:
                rows.append(ok(f"flavor {name}", f"{flavor.vcpus} vCPU, {flavor.ram} MB"))
            cores, ram = cores + n * (flavor.vcpus or 0), ram + n * (flavor.ram or 0)
            rc, traits = baremetal_requirements(specs)
            if server_type == "bm" and rc and name == cfg.node_flavor:
                rows += _readiness(bm_conn, rc, nodes, traits, provide)
        demand = op.Demand(masters + nodes, cores, ram, masters + nodes)
        rows += op.check_magnum(conn, image=cfg.image, external_network=cfg.external_network,
                                server_type=server_type,
                                network_driver=cfg.network_driver or "calico", lab=cfg.lab)
    rows += op.check_quotas(conn, demand)
    return rows


def _vsphere_preflight(cfg: LabConfig, si: Any) -> list[Check]:
    from infra.clouds import vsphere_preflight as vp

    assert cfg.datacenter and cfg.cluster and cfg.datastore and cfg.network and cfg.template
    rows = [ok("vcenter connection", f"logged in to {cfg.vsphere_server}")]
    rows += vp.check_inventory(si, datacenter=cfg.datacenter, cluster=cfg.cluster,
                               datastore=cfg.datastore, network=cfg.network,
                               template=cfg.template)
    vms = cfg.host_count or 1
    if cfg.mode == "vgpu":
        assert cfg.vgpu_profile
        rows += vp.check_vgpu(si, cluster=cfg.cluster, profile=cfg.vgpu_profile, vms=vms)
    elif cfg.mode == "passthrough":
        assert cfg.gpu_host
        rows += vp.check_passthrough(si, cluster=cfg.cluster, gpu_host=cfg.gpu_host,
                                     pci_device_ids=cfg.pci_device_ids)
    return rows


# ------------------------------------------------------------------------------------ audit

def audit(cfg: LabConfig, *, os_conn: Any = None, bm_conn: Any = None,
          si: Any = None) -> list[Check]:
    """What of the lab is left after ``pulumi destroy`` (failing rows), or one passing row."""
    if cfg.topology in OPENSTACK:
        from infra.clouds import ironic
        from infra.clouds.openstack_audit import audit_openstack

        if os_conn is None:
            os_conn, rows = _connected("openstack connection", lambda: openstack_connection(cfg))
            if os_conn is None:
                return rows
        rows = audit_openstack(os_conn, cfg.lab, magnum=cfg.topology == "magnum-k8s")
        if cfg.topology == "ironic-bm":
            assert cfg.resource_class
            try:
                rows += ironic.audit_nodes(bm_conn or os_conn, cfg.resource_class)
            except CloudError as exc:
                rows.append(fail("ironic nodes", str(exc), "fix access, then audit again"))
        return rows
    if cfg.topology == "vsphere-gpu":
        from infra.clouds.vsphere import audit_vms

        if si is None:
            si, rows = _connected("vcenter connection", lambda: vsphere_connection(cfg))
            if si is None:
                return rows
        try:
            return audit_vms(si, prefix=f"{cfg.lab}-", tag=cfg.lab)
        except CloudError as exc:
            return [fail("vsphere VMs", str(exc), "fix access, then audit again")]
    return [ok(f"topology {cfg.topology}", "nothing is built in a cloud")]
