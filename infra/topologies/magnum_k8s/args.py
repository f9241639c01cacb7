"""The keys of ``magnum-k8s``: the OpenStack keys, the cluster's node kind, flavors, counts,
network driver, docker volume and labels, the GPU stack, the Job image's registry, and the
rules of Magnum's Cluster API driver (magnum-cluster-api) across them."""

import re
from dataclasses import dataclass, field
from typing import Annotated as A  # the key tables' lines stay short
from typing import Any

from infra.keys.key import K
from infra.keys.types import (
    MAX_DISK_GB,
    MAX_MASTERS,
    MAX_STR,
    BadValue,
    Count,
    Int,
    Name,
    OneOf,
    Parsed,
    Secret,
    Text,
    maybe_json,
)
from infra.topologies.magnum_k8s import driver
from infra.topologies.openstack import args as openstack

LABEL_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MAX_LABELS = 64
# A registry and repository the Job image is pushed to and the cluster pulls from:
# host[:port]/path, lower case as image references are (no tag: the image's tag is the digest
# of what it holds, infra.topologies.magnum_k8s.image).
REGISTRY_RE = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
    r"(?::[0-9]{1,5})?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)+$"
)
LOGIN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,254}$")


def p_labels(raw: Any) -> dict[str, str]:
    """Magnum labels: names of letters, digits, '.', '_' or '-', values as strings."""
    raw = maybe_json(raw)
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and LABEL_KEY_RE.match(k) and isinstance(v, str | int | bool)
        for k, v in raw.items()
    ):
        raise BadValue("a mapping of label names to string values")
    if len(raw) > MAX_LABELS or any(len(k) > 255 or len(str(v)) > MAX_STR for k, v in raw.items()):
        raise BadValue(
            f"a mapping of at most {MAX_LABELS} label names to string values "
            f"of up to {MAX_STR} characters"
        )
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in raw.items()}


@dataclass(frozen=True, kw_only=True)
class MagnumK8sArgs(openstack.OpenStackArgs):
    """What ``magnum-k8s`` takes."""

    # fmt: off
    server_type: A[str | None, K(OneOf("vm", "bm"), "GPU worker kind: vm (Nova VMs) or bm "
                                 "(an Ironic flavor); the template says vm, the driver's only "
                                 "server type", True)] = None
    master_flavor: A[str | None, K(Name, "control-plane flavor", True)] = None
    node_flavor: A[str | None, K(Name, "GPU worker flavor", True)] = None
    master_count: A[int | None, K(Int(1, MAX_MASTERS), "control-plane nodes (odd: the driver "
                                  "refuses an even count)", default=1)] = None
    node_count: A[int | None, K(Count, "GPU worker nodes", default=1)] = None
    network_driver: A[str | None, K(OneOf(*driver.NETWORK_DRIVERS), "Kubernetes CNI (the "
                                    "driver's)", default="calico")] = None
    docker_volume_size: A[int | None, K(Int(1, MAX_DISK_GB), "per-node Cinder volume for "
                                        "images (GB, vm only)")] = None
    labels: A[dict[str, str], K(Parsed(p_labels, "a mapping of label names to string values",
                                       dict[str, str]), "Magnum cluster labels (the driver's: "
                                "kube_tag required)", True)] = field(default_factory=dict)
    k8s_gpu_mode: A[str | None, K(OneOf("operator", "device-plugin"), "GPU stack: NVIDIA GPU "
                                  "Operator (driver and toolkit in containers) or the device "
                                  "plugin (the image has the driver and toolkit)",
                                  default="operator")] = None
    registry: A[str | None, K(Text(REGISTRY_RE, "a registry host and repository, e.g. "
                                   "registry.example.org/gpulab", 255),
                              "where the Job image is pushed and the cluster pulls it", True)
                ] = None
    registry_user: A[str | None, K(Text(LOGIN_RE, "a registry login name", 255),
                                   "registry login (with registry_password)")] = None
    registry_password: A[Any, K(Secret, "registry password or token", secret=True)] = None
    # fmt: on


def check_config(raw: dict[str, Any], values: dict[str, Any], problems: list[str]) -> None:
    """The OpenStack topologies' rule, no docker volume on bare-metal nodes, the Cluster API
    driver's rules (:mod:`infra.topologies.magnum_k8s.driver`) and registry credentials that
    come as a pair."""
    openstack.check_config(raw, values, problems)
    if values.get("server_type") == "bm" and "docker_volume_size" in raw:
        problems.append(
            "gpulab:docker_volume_size is only allowed with gpulab:server_type vm "
            "(bare-metal nodes have no Cinder docker volume)"
        )
    if "labels" in raw and "labels" not in values:
        return  # the labels were refused already; the driver's rules read them
    problems.extend(
        driver.problems(
            values.get("master_count") or 1,
            values.get("network_driver") or "calico",
            values.get("labels"),
        )
    )
    if ("registry_user" in raw) != ("registry_password" in raw):
        problems.append(
            "gpulab:registry_user and gpulab:registry_password go together: set both "
            "(`pulumi config set --secret gpulab:registry_password`) or neither"
        )
