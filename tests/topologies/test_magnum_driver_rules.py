"""``gpulab validate`` takes what Magnum's Cluster API driver takes on a magnum-k8s stack, and
refuses, one line naming the key and value, what the driver would refuse only after the
cluster was requested (infra/topologies/magnum_k8s/driver.py names its source): network
drivers calico and cilium, odd master counts, ``kube_tag`` required, each CNI's labels with its
own driver, Calico tags the driver ships a manifest for. The labels a benchmark lab always sets
win over the stack's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.cli import main
from infra.topologies.magnum_k8s.args import MagnumK8sArgs
from infra.topologies.magnum_k8s.build import cluster_labels
from tests.pulumi.test_validate_cli import own_values


def _validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], **over: Any) -> tuple[int, str]:
    """``gpulab validate`` on the magnum-k8s example with the user's values and ``over``
    (None: the key removed), as a user's stack file would be; (exit code, stderr)."""
    doc = yaml.safe_load(own_values("magnum-k8s"))
    for key, value in over.items():
        if value is None:
            doc["config"].pop(f"gpulab:{key}")
        else:
            doc["config"][f"gpulab:{key}"] = value
    mine = tmp_path / "Pulumi.mine.yaml"
    mine.write_text(yaml.safe_dump(doc))
    rc = main(["validate", str(mine)])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(
    "over",
    [
        {},
        {"master_count": 3},
        {"master_count": 5},
        {"network_driver": "cilium", "labels": {"kube_tag": "v1.31.1", "cilium_tag": "v1.15.3"}},
        {"labels": {"kube_tag": "v1.30.4", "calico_tag": "v3.29.2"}},
    ],
    ids=["example", "3-masters", "5-masters", "cilium", "calico-tag"],
)
def test_validate_takes_what_the_driver_takes(
    over: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, err = _validate(tmp_path, capsys, **over)
    assert rc == 0, err


@pytest.mark.parametrize(
    ("over", "line"),
    [
        (
            {"master_count": 2},
            "gpulab:master_count 2: the Cluster API driver refuses an even number of "
            "control-plane nodes (etcd quorum); use 1, 3 or 5",
        ),
        ({"master_count": 4}, "gpulab:master_count 4: the Cluster API driver refuses an even"),
        (
            {"network_driver": "flannel"},
            "gpulab:network_driver must be one of calico, cilium, got 'flannel'",
        ),
        (
            {"labels": {"calico_tag": "v3.29.2"}},
            "gpulab:labels needs kube_tag (the Kubernetes version of the image, e.g. v1.30.4): "
            "the Cluster API driver has no default for it",
        ),
        ({"labels": None}, "gpulab:labels"),
        (
            {"labels": {"kube_tag": "1.30"}},
            "gpulab:labels kube_tag '1.30': a version like v1.30.4",
        ),
        (
            {"labels": {"kube_tag": "v1.30.4", "cilium_tag": "v1.15.3"}},
            "gpulab:labels cilium_tag is a label of network_driver cilium, not calico",
        ),
        (
            {"network_driver": "cilium", "labels": {"kube_tag": "v1.30.4", "calico_tag": "v3.29"}},
            "gpulab:labels calico_tag is a label of network_driver calico, not cilium",
        ),
        (
            {"labels": {"kube_tag": "v1.30.4", "calico_tag": "v3.12.0"}},
            "gpulab:labels calico_tag 'v3.12.0': the Cluster API driver ships Calico manifests "
            "for v3.24.2,",
        ),
        (
            {"network_driver": "cilium", "labels": {"kube_tag": "v1.30.4", "cilium_tag": "1.15"}},
            "gpulab:labels cilium_tag '1.15': a version like v1.15.3",
        ),
    ],
    ids=[
        "2-masters", "4-masters", "flannel", "no-kube_tag", "no-labels", "bad-kube_tag",
        "cilium-label-on-calico", "calico-label-on-cilium", "calico-tag-not-shipped",
        "bad-cilium_tag",
    ],
)  # fmt: skip
def test_validate_refuses_what_the_driver_refuses_in_one_line(
    over: dict[str, Any], line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, err = _validate(tmp_path, capsys, **over)
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("gpulab: error: "), err
    assert line in err, err


def test_validate_names_every_broken_driver_rule_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, err = _validate(tmp_path, capsys, master_count=2, labels={"cilium_tag": "v1.15.3"})
    assert rc == 2 and err.count("\n") == 1
    for part in ("gpulab:master_count 2", "needs kube_tag", "cilium_tag is a label of"):
        assert part in err, err


def test_the_lab_turns_auto_healing_and_scaling_off_whatever_the_labels_say() -> None:
    args = MagnumK8sArgs(
        topology="magnum-k8s",
        lab="k8s-lab",
        labels={"kube_tag": "v1.30.4", "auto_healing_enabled": "true", "calico_tag": "v3.29.2"},
    )
    labels = cluster_labels(args)
    assert labels["auto_healing_enabled"] == "false"
    assert labels["auto_scaling_enabled"] == "false"
    assert labels["kube_tag"] == "v1.30.4" and labels["calico_tag"] == "v3.29.2"
    assert (labels["gpulab_lab"], labels["gpulab_topology"]) == ("k8s-lab", "magnum-k8s")
