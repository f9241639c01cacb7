"""What Magnum's Cluster API driver (magnum-cluster-api) takes, as its source says, so that
``gpulab validate`` refuses what the driver would refuse only after the cluster was requested.

Source: github.com/vexxhost/magnum-cluster-api at commit 3890a362 (2026-07-23):

- ``magnum_cluster_api/utils.py`` ``validate_cluster``: the template's ``network_driver`` is
  ``calico`` or ``cilium`` (``UnsupportedCNI``) and ``master_count % 2 == 0`` is refused
  (``ClusterMasterCountEven``); ``driver.py`` ``validate_master_resize`` the same on resize.
- ``magnum_cluster_api/driver.py``: every driver ``provides`` ``server_type: vm`` only (Ubuntu
  ``os: ubuntu``); bare-metal workers come from a Nova flavor of Ironic nodes, the template
  still says ``vm``.
- ``src/magnum.rs`` ``ClusterLabels``: ``kube_tag`` has no default on the Rust side (a cluster
  without it fails there); ``cilium_tag`` defaults to v1.15.3 (the chart it ships).
- ``magnum_cluster_api/resources.py``: Calico's manifest is read from
  ``manifests/calico/<calico_tag>.yaml``; a tag without a file there fails the cluster
  (:data:`CALICO_TAGS` lists the files; ``docs/user/labels.md`` says the same: "in case of
  selecting version out of the supported range, you will need to supply a manifest").
- ``auto_healing_enabled`` defaults to true and replaces a node that is not Ready for 5
  minutes: a lab sets it false (a node replaced in the middle of a measurement changes the
  arm's hardware under it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

NETWORK_DRIVERS = ("calico", "cilium")
SERVER_TYPE = "vm"  # the only server type the driver provides
OS_DISTRO = "ubuntu"  # the driver's {server_type: vm, os: ubuntu, coe: kubernetes}
CALICO_TAGS = (
    "v3.24.2", "v3.25.2", "v3.26.5", "v3.27.4", "v3.28.2", "v3.29.0", "v3.29.2", "v3.29.3",
    "v3.30.0", "v3.30.1", "v3.30.2", "v3.31.3", "v3.31.5", "v3.32.0", "v3.32.1",
)  # fmt: skip
# Labels a benchmark lab sets whatever the stack says (see the module docstring).
LAB_LABELS = {"auto_healing_enabled": "false", "auto_scaling_enabled": "false"}
TAG_RE = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")
# Labels that belong to one network driver only.
CNI_LABELS = {"calico_tag": "calico", "calico_ipv4pool": "calico", "cilium_tag": "cilium",
              "cilium_ipv4pool": "cilium", "cilium_hubble_ui_enabled": "cilium"}  # fmt: skip


def problems(master_count: int, network_driver: str, labels: Mapping[str, str] | None) -> list[str]:
    """One line per rule of the driver that the stack breaks, naming the key and value
    (``labels`` None: absent, which the key's own check reports)."""
    out = []
    if master_count % 2 == 0:
        out.append(
            f"gpulab:master_count {master_count}: the Cluster API driver refuses an even "
            "number of control-plane nodes (etcd quorum); use 1, 3 or 5"
        )
    if network_driver not in NETWORK_DRIVERS:
        out.append(
            f"gpulab:network_driver {network_driver}: the Cluster API driver takes "
            + " or ".join(NETWORK_DRIVERS)
        )
    if labels is None:
        return out
    kube_tag = labels.get("kube_tag")
    if kube_tag is None:
        out.append(
            "gpulab:labels needs kube_tag (the Kubernetes version of the image, e.g. v1.30.4): "
            "the Cluster API driver has no default for it"
        )
    elif not TAG_RE.match(kube_tag):
        out.append(f"gpulab:labels kube_tag {kube_tag!r}: a version like v1.30.4")
    for label, cni in CNI_LABELS.items():
        if label in labels and cni != network_driver:
            out.append(
                f"gpulab:labels {label} is a label of network_driver {cni}, not {network_driver}"
            )
    calico_tag = labels.get("calico_tag")
    if network_driver == "calico" and calico_tag is not None and calico_tag not in CALICO_TAGS:
        out.append(
            f"gpulab:labels calico_tag {calico_tag!r}: the Cluster API driver ships Calico "
            f"manifests for {', '.join(CALICO_TAGS)} only"
        )
    cilium_tag = labels.get("cilium_tag")
    if network_driver == "cilium" and cilium_tag is not None and not TAG_RE.match(cilium_tag):
        out.append(f"gpulab:labels cilium_tag {cilium_tag!r}: a version like v1.15.3")
    return out
