"""The keys of ``magnum-k8s``: the OpenStack keys, the cluster's node kind, flavors, counts,
network driver, docker volume and labels, and the rule across them."""

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
    maybe_json,
)
from infra.topologies.openstack import args as openstack

LABEL_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MAX_LABELS = 64


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
    server_type: A[str | None, K(OneOf("vm", "bm"), "Magnum node kind", True)] = None
    master_flavor: A[str | None, K(Name, "control-plane flavor", True)] = None
    node_flavor: A[str | None, K(Name, "GPU worker flavor", True)] = None
    master_count: A[int | None, K(Int(1, MAX_MASTERS), "control-plane nodes", default=1)] = None
    node_count: A[int | None, K(Count, "GPU worker nodes", default=1)] = None
    network_driver: A[str | None, K(OneOf("calico", "flannel"), "Kubernetes CNI",
                                    default="calico")] = None
    docker_volume_size: A[int | None, K(Int(1, MAX_DISK_GB), "per-node Cinder volume for "
                                        "images (GB, vm only)")] = None
    labels: A[dict[str, str], K(Parsed(p_labels, "a mapping of label names to string values",
                                       dict[str, str]), "Magnum cluster labels",
                                default={})] = field(default_factory=dict)
    # fmt: on


def check_config(raw: dict[str, Any], values: dict[str, Any], problems: list[str]) -> None:
    """The OpenStack topologies' rule, and no docker volume on bare-metal nodes."""
    openstack.check_config(raw, values, problems)
    if values.get("server_type") == "bm" and "docker_volume_size" in raw:
        problems.append(
            "gpulab:docker_volume_size is only allowed with gpulab:server_type vm "
            "(bare-metal nodes have no Cinder docker volume)"
        )
