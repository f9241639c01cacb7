"""``magnum-k8s``: a Magnum Kubernetes cluster; workloads run as GPU containers (k8s Jobs)."""

from __future__ import annotations

from typing import Any

from infra.specs.topology import Conns, Topology

OS_DISTRO = "ubuntu"  # the Cluster API driver's {server_type: vm, os: ubuntu, coe: kubernetes}


def preflight(cfg: Any, conns: Conns) -> list[Any]:
    from infra import preflight as pf
    from infra.clouds import CloudError, fail, ok
    from infra.clouds import openstack_preflight as op
    from infra.clouds.openstack import baremetal_requirements

    conn, rows = pf.openstack(cfg, conns)
    if conn is None:
        return rows
    assert cfg.master_flavor and cfg.node_flavor and cfg.image and cfg.external_network
    # The Cluster API driver's images: os_distro ubuntu (Magnum picks the driver by it).
    rows += pf.image_and_network(cfg, conn, os_distro=OS_DISTRO)
    server_type = cfg.server_type or "vm"
    masters, nodes = cfg.master_count or 1, cfg.node_count or 1
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
                rows.append(
                    fail(
                        f"flavor {name}",
                        "not found",
                        f"create flavor {name} or set gpulab:master_flavor",
                    )
                )
            continue
        if name != cfg.node_flavor:
            rows.append(ok(f"flavor {name}", f"{flavor.vcpus} vCPU, {flavor.ram} MB"))
        cores, ram = cores + n * (flavor.vcpus or 0), ram + n * (flavor.ram or 0)
        rc, traits = baremetal_requirements(specs)
        if server_type == "bm" and rc and name == cfg.node_flavor:
            rows += pf.readiness(conns.bm_conn or conn, rc, nodes, traits, conns.provide)
    rows += op.check_magnum(
        conn,
        image=cfg.image,
        external_network=cfg.external_network,
        server_type=server_type,
        network_driver=cfg.network_driver or "calico",
        lab=cfg.lab,
        os_distro=OS_DISTRO,
    )
    return rows + op.check_quotas(conn, op.Demand(masters + nodes, cores, ram, masters + nodes))


def audit(cfg: Any, conns: Conns) -> list[Any]:
    from infra import preflight as pf

    rows: list[Any] = pf.openstack_audit(cfg, conns, magnum=True)[1]
    return rows


def check_config(raw: dict[str, Any], values: dict[str, Any], problems: list[str]) -> None:
    if values.get("server_type") == "bm" and "docker_volume_size" in raw:
        problems.append(
            "gpulab:docker_volume_size is only allowed with gpulab:server_type vm "
            "(bare-metal nodes have no Cinder docker volume)"
        )


SPEC = Topology(
    name="magnum-k8s",
    summary="Magnum cluster template + cluster (Cluster API driver, Ubuntu); GPU Operator / "
    "device plugin via Helm from the controller; workloads as Jobs",
    order=30,
    builder="infra.topologies.magnum_k8s",
    gpu_path=lambda cfg: "container-bm" if cfg.server_type == "bm" else "container-vm",
    # The nodes are VMs or bare metal; the container comes from the execution environment (k8s).
    settings={"container-vm": "vm-passthrough", "container-bm": "bare-metal"},
    preflight=preflight,
    audit=audit,
    default_envs=("k8s",),
    check_config=check_config,
    stack_file="examples/magnum-k8s/Pulumi.magnum-k8s.yaml",
)
