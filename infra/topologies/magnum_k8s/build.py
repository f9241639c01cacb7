"""``magnum-k8s``'s builder: a Magnum Kubernetes cluster; workloads run as GPU containers
(k8s Jobs).

The cluster template targets Magnum's Cluster API driver (magnum-cluster-api): an Ubuntu
image with ``os_distro=ubuntu`` (the driver's ``{server_type: vm, os: ubuntu, coe:
kubernetes}``), its labels (:data:`CAPI_LABELS`, ``kube_tag`` from the stack). Magnum makes
the cluster's servers and its own security groups; the lab network, router and keypair come
from the shared OpenStack parts. The kubeconfig is exported as a secret; GPU enablement
(k8s_gpu) and the workload Jobs run from the controller with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from urllib.parse import urlparse

import pulumi
import pulumi_openstack as openstack

from infra.hosts import Host
from infra.topologies.common import TYPE_PREFIX, host_groups
from infra.topologies.magnum_k8s import SPEC
from infra.topologies.magnum_k8s.args import MagnumK8sArgs
from infra.topologies.openstack.base import build_base

# Labels of the Cluster API driver (magnum-cluster-api, docs/user/labels.md) that a benchmark
# lab sets: no auto-healing (a node replaced in the middle of a measurement changes the arm's
# hardware under it). ``kube_tag`` must match the image's Kubernetes (the driver's images are
# built per version, e.g. ubuntu-2204-kube-v1.30.4): the stack sets it in ``gpulab:labels``.
CAPI_LABELS = {"auto_healing_enabled": "false", "auto_scaling_enabled": "false"}


def cluster_labels(args: MagnumK8sArgs) -> dict[str, str]:
    """Magnum labels: the lab's name, the Cluster API driver's settings above, then the
    operator's ``gpulab:labels`` over them."""
    return {
        "gpulab_lab": args.lab,
        "gpulab_topology": args.topology,
        **CAPI_LABELS,
        **args.labels,
    }


# The API host is reached through the cluster's kubeconfig from the controller, never over
# SSH: its plays (k8s_gpu, the k8s Jobs of workload_run) run locally, without sudo, with the
# kubeconfig that $KUBECONFIG names (pulumi stack output --show-secrets kubeconfig > FILE).
CONTROLLER_VARS = {
    "ansible_connection": "local",
    "ansible_python_interpreter": "{{ ansible_playbook_python }}",
    "ansible_become": False,
    "workload_run_k8s_kubeconfig": "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}",
}


def _api_host(url: str | None) -> str | None:
    if not url:
        return url
    return urlparse(url if "://" in url else f"https://{url}").hostname


def _nth(index: int) -> Callable[[Sequence[str] | None], str | None]:
    return lambda items: items[index] if items and index < len(items) else None


class MagnumK8sLab(pulumi.ComponentResource):
    hosts: list[Host]

    def __init__(self, args: MagnumK8sArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TYPE_PREFIX}:MagnumK8sLab", args.lab, None, opts)
        base = build_base(args, self, secgroup=False)
        child = pulumi.ResourceOptions(
            parent=self, provider=base.provider, depends_on=[base.router_interface]
        )
        labels = cluster_labels(args)
        self.template = openstack.containerinfra.ClusterTemplate(
            f"{args.lab}-k8s-template",
            name=f"{args.lab}-k8s-template",
            coe="kubernetes",
            server_type=args.server_type,
            image=args.image,
            master_flavor=args.master_flavor,
            flavor=args.node_flavor,
            network_driver=args.network_driver,
            docker_volume_size=args.docker_volume_size if args.server_type == "vm" else None,
            external_network_id=base.external.id,
            fixed_network=base.network.id,
            fixed_subnet=base.subnet.id,
            dns_nameserver=args.dns_nameservers[0] if args.dns_nameservers else None,
            keypair_id=base.keypair.name,
            floating_ip_enabled=True,
            master_lb_enabled=False,
            public=False,
            labels=labels,
            opts=child,
        )
        self.cluster = openstack.containerinfra.Cluster(
            f"{args.lab}-k8s",
            name=f"{args.lab}-k8s",
            cluster_template_id=self.template.id,
            master_count=args.master_count,
            node_count=args.node_count,
            keypair=base.keypair.name,
            labels=labels,
            merge_labels=True,
            opts=child,
        )
        self.kubeconfig: pulumi.Output[str | None] = pulumi.Output.secret(
            self.cluster.kubeconfig.apply(lambda k: (k or {}).get("raw_config"))
        )
        api = self.cluster.api_address
        self.hosts = [
            Host(
                name=f"{args.lab}-k8s-api",
                address=api.apply(_api_host),
                ssh_user=args.ssh_user,
                groups=["k8s_control"],
                gpu_path="none",
                ssh_port=22,
                vars={"lab": args.lab, "api_url": api, **CONTROLLER_VARS},
                identity=self.cluster.id,
            )
        ]
        node_gpu_path = SPEC.gpu_path(args)
        for i in range(args.node_count or 1):
            self.hosts.append(
                Host(
                    name=f"{args.lab}-k8s-node-{i}",
                    address=self.cluster.node_addresses.apply(_nth(i)),
                    ssh_user=args.ssh_user,
                    groups=host_groups(args, "k8s_nodes"),
                    gpu_path=node_gpu_path,
                    vars={"lab": args.lab, "k8s_cluster": f"{args.lab}-k8s"},
                    identity=self.cluster.id,
                )
            )
        self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})


def build(args: MagnumK8sArgs) -> tuple[pulumi.ComponentResource, list[Host]]:
    lab = MagnumK8sLab(args)
    return lab, lab.hosts
