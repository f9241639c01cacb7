"""``magnum-k8s``: a Magnum Kubernetes cluster; workloads run as GPU containers (k8s Jobs)."""

from __future__ import annotations

from typing import Any

from infra.topologies.contract import Topology
from infra.topologies.magnum_k8s.args import MagnumK8sArgs, check_config

REGISTRY_PASSWORD_INPUT = "k8s_gpu_registry_password"


def site_secrets(args: MagnumK8sArgs) -> dict[str, Any]:
    """The registry password, for the site run's push of the Job image and the cluster's pull
    secret (k8s_gpu)."""
    pw = args.registry_password
    return {} if pw is None else {REGISTRY_PASSWORD_INPUT: pw}


SPEC = Topology(
    name="magnum-k8s",
    summary="Magnum cluster template + cluster (Cluster API driver, Ubuntu); GPU Operator / "
    "device plugin via Helm from the controller; workloads as Jobs",
    order=30,
    args=MagnumK8sArgs,
    builder="infra.topologies.magnum_k8s.build",
    checks="infra.topologies.magnum_k8s.checks",
    # The nodes are VMs or bare metal; the container comes from the execution environment (k8s).
    gpu_paths=("container-vm", "container-bm"),
    gpu_path=lambda args: "container-bm" if args.server_type == "bm" else "container-vm",
    default_envs=("k8s",),
    check_config=check_config,
    stack_file="examples/magnum-k8s/Pulumi.magnum-k8s.yaml",
    # k8s: the Kubernetes Python client kubernetes.core's modules need on the controller
    extras=("openstack", "k8s"),
    site_secrets=site_secrets,
)
