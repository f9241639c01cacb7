"""The OpenStack parts every OpenStack topology's builder shares.

Lab network, subnet, router to the external network, security group (SSH only from
``admin_cidr``, anything only from ``lab_cidr``, nothing else in; Neutron's default egress
rules stay), keypair, image lookup, and one port + floating IP per server, its cloud-init
user data from ``templates/cloud-init.yaml.j2``. Every resource is named ``<lab>-...`` and
tagged with the lab where the API has tags.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jinja2
import pulumi
import pulumi_openstack as openstack

from infra.hosts import Host
from infra.keys.lab import LabArgs
from infra.paths import PROJECT
from infra.topologies.common import host_groups
from infra.topologies.openstack.args import OpenStackArgs, ServerArgs

TEMPLATES = PROJECT / "templates"


def lab_tags(args: LabArgs) -> list[str]:
    """Neutron/Nova tags naming the lab (Nova tags forbid '/' and ',')."""
    return ["gpulab", f"gpulab-lab={args.lab}", f"gpulab-topology={args.topology}"]


def lab_metadata(args: LabArgs) -> dict[str, str]:
    return {"gpulab_lab": args.lab, "gpulab_topology": args.topology}


def render_cloud_init(args: OpenStackArgs, hostname: str, gpu_path: str) -> str:
    """The instance user data from ``templates/cloud-init.yaml.j2`` (no secrets in it)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    return env.get_template("cloud-init.yaml.j2").render(
        lab=args.lab,
        topology=args.topology,
        hostname=hostname,
        ssh_user=args.ssh_user,
        ssh_public_key=args.ssh_public_key,
        gpu_path=gpu_path,
    )


@dataclass
class OpenStackBase:
    provider: openstack.Provider
    external: Any  # get_network result (Output)
    image: Any  # get_image result (Output)
    network: openstack.networking.Network
    subnet: openstack.networking.Subnet
    router: openstack.networking.Router
    router_interface: openstack.networking.RouterInterface
    keypair: openstack.compute.Keypair
    secgroup: openstack.networking.SecGroup | None
    rules: list[openstack.networking.SecGroupRule]


def _first(items: Sequence[str] | None) -> str | None:
    return items[0] if items else None


def _ethertype(cidr: str) -> str:
    return "IPv6" if ipaddress.ip_network(cidr).version == 6 else "IPv4"


def security_rules(args: OpenStackArgs) -> list[dict[str, Any]]:
    """The ingress rules of the lab security group, exactly (snake_case rule args)."""
    assert args.admin_cidr and args.lab_cidr
    return [
        {
            "name": "ssh-admin",
            "description": f"gpulab {args.lab}: SSH from the admin network",
            "direction": "ingress",
            "ethertype": _ethertype(args.admin_cidr),
            "protocol": "tcp",
            "port_range_min": 22,
            "port_range_max": 22,
            "remote_ip_prefix": args.admin_cidr,
        },
        {
            "name": "lab-internal",
            "description": f"gpulab {args.lab}: any traffic between lab hosts",
            "direction": "ingress",
            "ethertype": _ethertype(args.lab_cidr),
            "remote_ip_prefix": args.lab_cidr,
        },
    ]


def build_base(
    args: OpenStackArgs, parent: pulumi.Resource, *, secgroup: bool = True
) -> OpenStackBase:
    """Create the shared parts as children of ``parent``."""
    lab = args.lab
    tags = lab_tags(args)
    provider = openstack.Provider(
        f"{lab}-openstack",
        cloud=args.os_cloud,
        password=args.os_password,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    opts = pulumi.ResourceOptions(parent=parent, provider=provider)
    invoke = pulumi.InvokeOptions(parent=parent, provider=provider)
    external = openstack.networking.get_network_output(
        name=args.external_network, external=True, opts=invoke
    )
    image = openstack.images.get_image_output(name=args.image, most_recent=True, opts=invoke)
    assert args.lab_cidr
    version = ipaddress.ip_network(args.lab_cidr).version
    network = openstack.networking.Network(
        f"{lab}-net", name=f"{lab}-net", admin_state_up=True, tags=tags, opts=opts
    )
    subnet = openstack.networking.Subnet(
        f"{lab}-subnet",
        name=f"{lab}-subnet",
        network_id=network.id,
        cidr=args.lab_cidr,
        ip_version=version,
        enable_dhcp=True,
        dns_nameservers=list(args.dns_nameservers) or None,
        tags=tags,
        opts=opts,
    )
    router = openstack.networking.Router(
        f"{lab}-router",
        name=f"{lab}-router",
        external_network_id=external.id,
        tags=tags,
        opts=opts,
    )
    router_interface = openstack.networking.RouterInterface(
        f"{lab}-router-if", router_id=router.id, subnet_id=subnet.id, opts=opts
    )
    keypair = openstack.compute.Keypair(
        f"{lab}-key", name=f"{lab}-key", public_key=args.ssh_public_key, opts=opts
    )
    group = None
    rules: list[openstack.networking.SecGroupRule] = []
    if secgroup:
        group = openstack.networking.SecGroup(
            f"{lab}-secgroup",
            name=f"{lab}-secgroup",
            description=f"gpulab lab {lab}: SSH from admin_cidr, all from lab_cidr",
            tags=tags,
            opts=opts,
        )
        for rule in security_rules(args):
            inputs = {k: v for k, v in rule.items() if k != "name"}
            rules.append(
                openstack.networking.SecGroupRule(
                    f"{lab}-rule-{rule['name']}", security_group_id=group.id, **inputs, opts=opts
                )
            )
    return OpenStackBase(
        provider,
        external,
        image,
        network,
        subnet,
        router,
        router_interface,
        keypair,
        group,
        rules,
    )


def server_port(
    args: OpenStackArgs, base: OpenStackBase, name: str, parent: pulumi.Resource
) -> tuple[openstack.networking.Port, openstack.networking.FloatingIp]:
    """A lab port carrying the security group, and a floating IP on it for the admin."""
    assert base.secgroup is not None
    opts = pulumi.ResourceOptions(parent=parent, provider=base.provider)
    port = openstack.networking.Port(
        f"{name}-port",
        name=f"{name}-port",
        network_id=base.network.id,
        fixed_ips=[openstack.networking.PortFixedIpArgs(subnet_id=base.subnet.id)],
        security_group_ids=[base.secgroup.id],
        admin_state_up=True,
        tags=lab_tags(args),
        opts=opts,
    )
    fip = openstack.networking.FloatingIp(
        f"{name}-fip",
        pool=args.external_network,
        port_id=port.id,
        description=f"gpulab lab {args.lab}: {name}",
        tags=lab_tags(args),
        opts=pulumi.ResourceOptions(
            parent=parent, provider=base.provider, depends_on=[base.router_interface]
        ),
    )
    return port, fip


def build_servers(
    args: ServerArgs,
    base: OpenStackBase,
    flavor: openstack.compute.Flavor,
    parent: pulumi.Resource,
    *,
    gpu_path: str,
    config_drive: bool = False,
    server_group: openstack.compute.ServerGroup | None = None,
) -> list[Any]:
    """``host_count`` Nova servers on the lab network; returns their :class:`Host` entries."""
    hosts: list[Host] = []
    opts = pulumi.ResourceOptions(
        parent=parent, provider=base.provider, depends_on=[base.router_interface]
    )
    hints = (
        [openstack.compute.InstanceSchedulerHintArgs(group=server_group.id)]
        if server_group is not None
        else None
    )
    for i in range(args.host_count or 1):
        name = f"{args.lab}-gpu-{i}"
        port, fip = server_port(args, base, name, parent)
        openstack.compute.Instance(
            name,
            name=name,
            flavor_id=flavor.id,
            image_id=base.image.id,
            key_pair=base.keypair.name,
            networks=[openstack.compute.InstanceNetworkArgs(port=port.id)],
            user_data=render_cloud_init(args, name, gpu_path),
            config_drive=config_drive,
            availability_zone=args.availability_zone,
            scheduler_hints=hints,
            metadata=lab_metadata(args),
            tags=lab_tags(args),
            opts=opts,
        )
        hosts.append(
            Host(
                name=name,
                address=fip.address,
                ssh_user=args.ssh_user,
                groups=host_groups(args),
                gpu_path=gpu_path,
                vars={
                    "lab": args.lab,
                    "private_address": port.all_fixed_ips.apply(_first),
                },
            )
        )
    return hosts
