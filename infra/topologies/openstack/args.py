"""The keys the OpenStack topologies share: the cloud, the lab network and its access, the
image (:class:`OpenStackArgs`); and those of the topologies whose hosts are Nova servers of a
flavor the lab makes (:class:`ServerArgs`: their sizes, and an existing network to put them on
instead of one the lab makes). Each topology's own Args subclasses one of them."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated as A  # the key tables' lines stay short
from typing import Any

from infra.keys.key import K
from infra.keys.lab import HOST_COUNT, LabArgs
from infra.keys.types import (
    MAX_DISK_GB,
    MAX_MEMORY_MB,
    MAX_VCPUS,
    Bool,
    Cidr,
    Int,
    List,
    Name,
    Parsed,
    Secret,
    _ip,
    _ssh_key,
)

EXTERNAL_NETWORK = K(
    Name, "external network: the lab router's uplink, where floating IPs come from", True
)


LAB_CIDR = "10.42.0.0/24"


def lab_cidr_default(values: Mapping[str, Any]) -> str | None:
    """``gpulab:lab_cidr`` when absent: the subnet of the network the lab makes; none on an
    existing network (``gpulab:network``), whose own subnets give the addresses."""
    return None if values.get("network") else LAB_CIDR


@dataclass(frozen=True, kw_only=True)
class OpenStackArgs(LabArgs):
    """The keys of every OpenStack topology."""

    # fmt: off
    ssh_public_key: A[str | None, K(Parsed(_ssh_key, "an OpenSSH public key line (ssh-ed25519 "
                                           "AAAA... comment)"),
                                    "public key installed on OpenStack hosts", True)] = None
    os_cloud: A[str | None, K(Name, "clouds.yaml entry; empty: OS_* environment")] = None
    os_password: A[Any, K(Secret, "overrides the clouds.yaml password", secret=True)] = None
    external_network: A[str | None, EXTERNAL_NETWORK] = None
    admin_cidr: A[str | None, K(Cidr, "only source allowed to SSH into the lab", True)] = None
    allow_world: A[bool, K(Bool, "let admin_cidr be the whole internet (0.0.0.0/0 or ::/0)",
                           default=False)] = False
    lab_cidr: A[str | None, K(Cidr, f"lab subnet (default {LAB_CIDR}; none on gpulab:network)",
                              default=lab_cidr_default)] = None
    dns_nameservers: A[tuple[str, ...], K(List(Parsed(_ip, ""), "IP addresses"),
                                          "DNS servers DHCP gives the lab subnet (default: "
                                          "none set, the cloud's own; see docs/topologies.md)",
                                          default=())] = ()
    image: A[str | None, K(Name, "Glance image name", True)] = None
    # fmt: on


def floating_ips_default(values: Mapping[str, Any]) -> bool:
    """``gpulab:floating_ips`` when absent: a floating IP per host on the network the lab
    makes (nothing else reaches it), none on an existing network (``gpulab:network``)."""
    return not values.get("network")


FLAVOR_VCPUS = K(Int(1, MAX_VCPUS), "flavor vCPUs")
FLAVOR_RAM_MB = K(Int(1, MAX_MEMORY_MB), "flavor RAM in MiB")
FLAVOR_DISK_GB = K(Int(0, MAX_DISK_GB), "flavor root disk in GB")


@dataclass(frozen=True, kw_only=True)
class ServerArgs(OpenStackArgs):
    """The keys of the topologies whose GPU hosts are Nova servers of the lab's flavor (its
    sizes: a topology's table makes them required or gives them defaults)."""

    # fmt: off
    # required unless gpulab:network is set and gpulab:floating_ips is false (check below)
    external_network: A[str | None, EXTERNAL_NETWORK.but(required=False)] = None
    network: A[str | None, K(Name, "existing Neutron network for the hosts' ports instead "
                             "of one the lab makes (no subnet, router); Ironic's flat network "
                             "interface needs the provider network the nodes are cabled to")] = None
    floating_ips: A[bool, K(Bool, "a floating IP from external_network per host (default: "
                            "true when the lab makes its network, false on gpulab:network)",
                            default=floating_ips_default)] = True
    # fmt: on
    host_count: A[int | None, HOST_COUNT] = None
    availability_zone: A[str | None, K(Name, "Nova availability zone")] = None
    flavor_vcpus: A[int | None, FLAVOR_VCPUS] = None
    flavor_ram_mb: A[int | None, FLAVOR_RAM_MB] = None
    flavor_disk_gb: A[int | None, FLAVOR_DISK_GB] = None


def existing_network(args: OpenStackArgs) -> str | None:
    """``gpulab:network`` (an existing network for the hosts' ports), for the topologies
    that take it (servers of the lab's flavor), else None: the lab makes its network."""
    return args.network if isinstance(args, ServerArgs) else None


def check_config(raw: dict[str, Any], values: dict[str, Any], problems: list[str]) -> None:
    """An admin network of the whole internet only when the stack says it means it."""
    cidr = values.get("admin_cidr")
    if isinstance(cidr, str) and cidr.endswith("/0") and not values.get("allow_world"):
        problems.append(
            f"gpulab:admin_cidr {cidr} opens SSH to the whole internet: name your network, "
            "or set gpulab:allow_world: true to mean it"
        )


def check_server_config(raw: dict[str, Any], values: dict[str, Any], problems: list[str]) -> None:
    """:func:`check_config`, and the network of servers: on an existing network
    (``gpulab:network``) the lab makes no subnet, so the keys of the subnet it would make are
    refused; an external network is needed for the router of a network the lab makes and for
    floating IPs."""
    check_config(raw, values, problems)
    topology = values.get("topology")
    if values.get("network"):
        for key, what in (
            ("lab_cidr", "the hosts take addresses from a subnet of that network"),
            ("dns_nameservers", "its subnet's DNS servers are the network owner's "
                                "(openstack subnet set --dns-nameserver)"),
        ):  # fmt: skip
            if values.get(key):  # set by the stack (an engine-injected empty list is not)
                problems.append(
                    f"gpulab:{key} is for the subnet the lab makes; with gpulab:network "
                    f"{values['network']} the lab makes none and {what}: remove gpulab:{key}"
                )
    if not values.get("external_network") and (
        not values.get("network") or values.get("floating_ips")
    ):
        why = (
            "floating IPs come from it" if values.get("network") else "the lab router uplinks to it"
        )
        problems.append(f"gpulab:external_network is required for {topology}: {why}")
