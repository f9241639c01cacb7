"""The keys the OpenStack topologies share: the cloud, the lab network and its access, the
image (:class:`OpenStackArgs`); and those of the topologies whose hosts are Nova servers of a
flavor the lab makes (:class:`ServerArgs`). Each topology's own Args subclasses one of them."""

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


@dataclass(frozen=True, kw_only=True)
class OpenStackArgs(LabArgs):
    """The keys of every OpenStack topology."""

    # fmt: off
    ssh_public_key: A[str | None, K(Parsed(_ssh_key, "an OpenSSH public key line (ssh-ed25519 "
                                           "AAAA... comment)"),
                                    "public key installed on OpenStack hosts", True)] = None
    os_cloud: A[str | None, K(Name, "clouds.yaml entry; empty: OS_* environment")] = None
    os_password: A[Any, K(Secret, "overrides the clouds.yaml password", secret=True)] = None
    external_network: A[str | None, K(Name, "provider network the lab router uplinks to",
                                      True)] = None
    admin_cidr: A[str | None, K(Cidr, "only source allowed to SSH into the lab", True)] = None
    allow_world: A[bool, K(Bool, "let admin_cidr be the whole internet (0.0.0.0/0 or ::/0)",
                           default=False)] = False
    lab_cidr: A[str | None, K(Cidr, "lab subnet", default="10.42.0.0/24")] = None
    dns_nameservers: A[tuple[str, ...], K(List(Parsed(_ip, ""), "IP addresses"),
                                          "lab subnet DNS servers", default=())] = ()
    image: A[str | None, K(Name, "Glance image name", True)] = None
    # fmt: on


FLAVOR_VCPUS = K(Int(1, MAX_VCPUS), "flavor vCPUs")
FLAVOR_RAM_MB = K(Int(1, MAX_MEMORY_MB), "flavor RAM in MiB")
FLAVOR_DISK_GB = K(Int(0, MAX_DISK_GB), "flavor root disk in GB")


@dataclass(frozen=True, kw_only=True)
class ServerArgs(OpenStackArgs):
    """The keys of the topologies whose GPU hosts are Nova servers of the lab's flavor (its
    sizes: a topology's table makes them required or gives them defaults)."""

    host_count: A[int | None, HOST_COUNT] = None
    availability_zone: A[str | None, K(Name, "Nova availability zone")] = None
    flavor_vcpus: A[int | None, FLAVOR_VCPUS] = None
    flavor_ram_mb: A[int | None, FLAVOR_RAM_MB] = None
    flavor_disk_gb: A[int | None, FLAVOR_DISK_GB] = None


def check_config(raw: dict[str, Any], values: dict[str, Any], problems: list[str]) -> None:
    """An admin network of the whole internet only when the stack says it means it."""
    cidr = values.get("admin_cidr")
    if isinstance(cidr, str) and cidr.endswith("/0") and not values.get("allow_world"):
        problems.append(
            f"gpulab:admin_cidr {cidr} opens SSH to the whole internet: name your network, "
            "or set gpulab:allow_world: true to mean it"
        )
