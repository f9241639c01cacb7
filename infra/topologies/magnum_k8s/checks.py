"""``magnum-k8s``'s preflight (image, network, flavors, Ironic nodes for bare-metal workers,
Magnum's template prerequisites, quotas) and audit."""

from __future__ import annotations

from infra.clouds import Check, CloudError, fail, ok
from infra.clouds import openstack_preflight as op
from infra.clouds.openstack import baremetal_requirements
from infra.topologies.contract import Conns
from infra.topologies.magnum_k8s.args import MagnumK8sArgs
from infra.topologies.magnum_k8s.driver import OS_DISTRO, SERVER_TYPE
from infra.topologies.openstack import checks as shared


def preflight(args: MagnumK8sArgs, conns: Conns) -> list[Check]:
    conn, rows = shared.connection(args, conns)
    if conn is None:
        return rows
    assert args.master_flavor and args.node_flavor and args.image and args.external_network
    # The Cluster API driver's images: os_distro ubuntu (Magnum picks the driver by it).
    rows += shared.image_and_network(args, conn, os_distro=OS_DISTRO)
    server_type = args.server_type or "vm"
    masters, nodes = args.master_count or 1, args.node_count or 1
    rows += op.check_gpu_flavor(conn, args.node_flavor, server_type)
    cores = ram = 0
    for name, n in ((args.master_flavor, masters), (args.node_flavor, nodes)):
        try:
            flavor, specs = op.find_flavor(conn, name)
        except CloudError as exc:
            rows.append(fail(f"flavor {name}", str(exc), "fix access, then rerun"))
            continue
        if flavor is None:
            if name != args.node_flavor:
                rows.append(
                    fail(
                        f"flavor {name}",
                        "not found",
                        f"create flavor {name} or set gpulab:master_flavor",
                    )
                )
            continue
        if name != args.node_flavor:
            rows.append(ok(f"flavor {name}", f"{flavor.vcpus} vCPU, {flavor.ram} MB"))
        cores, ram = cores + n * (flavor.vcpus or 0), ram + n * (flavor.ram or 0)
        rc, traits = baremetal_requirements(specs)
        if server_type == "bm" and rc and name == args.node_flavor:
            rows += shared.readiness(conns.bm_conn or conn, rc, nodes, traits, conns.provide)
    rows += op.check_magnum(
        conn,
        image=args.image,
        external_network=args.external_network,
        server_type=SERVER_TYPE,  # the template's: the driver provides vm only
        network_driver=args.network_driver or "calico",
        lab=args.lab,
        os_distro=OS_DISTRO,
    )
    return rows + op.check_quotas(conn, op.Demand(masters + nodes, cores, ram, masters + nodes))


def audit(args: MagnumK8sArgs, conns: Conns) -> list[Check]:
    return shared.leftovers(args, conns, magnum=True)[1]
