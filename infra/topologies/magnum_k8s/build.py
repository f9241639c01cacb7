"""``magnum-k8s``'s builder: a Magnum Kubernetes cluster; workloads run as GPU containers
(k8s Jobs).

The cluster template targets Magnum's Cluster API driver (magnum-cluster-api): an Ubuntu
image with ``os_distro=ubuntu`` (the driver's ``{server_type: vm, os: ubuntu, coe:
kubernetes}``; ``server_type`` is always vm, the only one it provides), its labels
(``kube_tag`` and the CNI's from the stack, :data:`~infra.topologies.magnum_k8s.driver.
LAB_LABELS`). Magnum makes the cluster's servers and its own security groups; the lab network,
router and keypair come from the shared OpenStack parts.

The cluster is configured only through its API, from the controller: a ``MagnumKubeconfig``
resource fetches the kubeconfig from Magnum's API into ``~/.kube/gpulab-<stack>.yaml``; the one
inventory host is the API host on the controller (``k8s_control``, local connection), whose
``gpulab_kubeconfig`` names that file for every Ansible run. The nodes are not inventory hosts.
The kubeconfig is no stack output: the file (0600) and the resource's secret state hold it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import pulumi
import pulumi_openstack as openstack

from infra.ansible.runner import KUBECONFIG_VAR
from infra.clouds.magnum import kubeconfig_path
from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX
from infra.topologies.magnum_k8s import SPEC, driver
from infra.topologies.magnum_k8s.args import MagnumK8sArgs
from infra.topologies.magnum_k8s.image import job_image
from infra.topologies.magnum_k8s.kubeconfig import MagnumKubeconfig
from infra.topologies.openstack.base import build_base


def cluster_labels(args: MagnumK8sArgs) -> dict[str, str]:
    """Magnum labels: the lab's name, then the operator's ``gpulab:labels`` (the driver's:
    ``kube_tag``, ``calico_tag``...), then the labels a benchmark lab always sets
    (:data:`~infra.topologies.magnum_k8s.driver.LAB_LABELS`: no auto-healing, no autoscaling)."""
    return {
        "gpulab_lab": args.lab,
        "gpulab_topology": args.topology,
        **args.labels,
        **driver.LAB_LABELS,
    }


# The API host is the controller: its plays (k8s_gpu, the k8s Jobs of workload_run) run
# locally, without sudo, through the kubeconfig the MagnumKubeconfig resource fetched. The
# cluster's nodes are never inventory hosts: nothing logs in to them (the driver's security
# groups do not open SSH, its workers have no floating IP); the GPU stack reaches them as
# containers (GPU Operator) through the API.
CONTROLLER_VARS = {
    "ansible_connection": "local",
    "ansible_python_interpreter": "{{ ansible_playbook_python }}",
    "ansible_become": False,
}


def _api_host(url: str | None) -> str | None:
    if not url:
        return url
    return urlparse(url if "://" in url else f"https://{url}").hostname


def api_host_vars(args: MagnumK8sArgs, cluster_name: str, kubeconfig: str) -> dict[str, Any]:
    """The API host's vars: the kubeconfig file, the cluster, the GPU stack, the Job image
    and the setting the Jobs' records state."""
    assert args.registry
    image = job_image(args.registry)
    return {
        "lab": args.lab,
        **CONTROLLER_VARS,
        KUBECONFIG_VAR: kubeconfig,
        "k8s_gpu_kubeconfig": kubeconfig,
        "workload_run_k8s_kubeconfig": kubeconfig,
        "k8s_gpu_cluster": cluster_name,
        "workload_run_k8s_cluster": cluster_name,
        "k8s_gpu_mode": args.k8s_gpu_mode or "operator",
        "k8s_gpu_node_count": args.node_count or 1,
        "k8s_gpu_job_image": image,
        "k8s_gpu_registry_user": args.registry_user or "",
        "workload_run_k8s_image": image,
        "workload_run_k8s_gpu_path": SPEC.gpu_path(args),
    }


class MagnumK8sLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, args: MagnumK8sArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:MagnumK8sLab", args.lab, None, opts)
        base = build_base(args, self, secgroup=False)
        child = pulumi.ResourceOptions(
            parent=self, provider=base.provider, depends_on=[base.router_interface]
        )
        labels = cluster_labels(args)
        masters = args.master_count or 1
        self.template = openstack.containerinfra.ClusterTemplate(
            f"{args.lab}-k8s-template",
            name=f"{args.lab}-k8s-template",
            coe="kubernetes",
            server_type=driver.SERVER_TYPE,  # the driver provides vm only; bm = Ironic flavor
            image=args.image,
            master_flavor=args.master_flavor,
            flavor=args.node_flavor,
            network_driver=args.network_driver or "calico",
            docker_volume_size=args.docker_volume_size if args.server_type == "vm" else None,
            external_network_id=base.external.id,
            fixed_network=base.network.id,
            fixed_subnet=base.subnet.id,
            dns_nameserver=args.dns_nameservers[0] if args.dns_nameservers else None,
            keypair_id=base.keypair.name,
            floating_ip_enabled=True,
            # several API servers need a load balancer in front; one has a floating IP
            master_lb_enabled=masters > 1,
            public=False,
            labels=labels,
            opts=child,
        )
        cluster_name = f"{args.lab}-k8s"
        self.cluster = openstack.containerinfra.Cluster(
            cluster_name,
            name=cluster_name,
            cluster_template_id=self.template.id,
            master_count=masters,
            node_count=args.node_count,
            keypair=base.keypair.name,
            labels=labels,
            merge_labels=True,
            opts=child,
        )
        path = str(kubeconfig_path(pulumi.get_stack()))
        self.kubeconfig_file = MagnumKubeconfig(
            f"{args.lab}-kubeconfig",
            cluster=self.cluster.id,
            path=path,
            os_cloud=args.os_cloud,
            os_password=args.os_password,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.cluster]),
        )
        api = self.kubeconfig_file.api_address
        self.hosts = [
            Host(
                name=f"{args.lab}-k8s-api",
                address=api.apply(_api_host),
                ssh_user=args.ssh_user,
                groups=["k8s_control"],
                gpu_path="none",
                ssh_port=22,
                vars={"api_url": api, **api_host_vars(args, cluster_name, path)},
                identity=self.cluster.id,
            )
        ]
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})


def build(args: MagnumK8sArgs) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = MagnumK8sLab(args)
    return lab, lab.hosts
