"""OpenStack preflight and audit for the three OpenStack topologies. Ironic is the real
standalone one; Nova, Glance, Neutron, Cinder and Magnum cannot run here and are a named
double (tests/cloud/openstack_double.py) -- "double" in every test name that uses it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from openstack import exceptions as sdk_exc
from rich.console import Console

from infra.cli.cloud import render_checks
from infra.clouds import Check
from infra.preflight import audit, preflight
from tests.cloud.helpers import enroll, stack
from tests.cloud.openstack_double import OpenStackDouble, res

pytestmark = pytest.mark.ironic


def show(rows: list[Check], title: str) -> str:
    """Render the table as ``gpulab preflight`` does; printed so ``pytest -s`` shows it."""
    console = Console(width=160, record=True, force_terminal=False)
    render_checks(rows, title, console)
    return console.export_text()


def failing(rows: list[Check]) -> dict[str, Check]:
    return {r.name: r for r in rows if not r.passed}


@pytest.fixture(scope="module")
def bm(ironic: Any) -> Iterator[Any]:
    """Nodes of the example stacks' resource class (baremetal.gpu-p100) and others. The p100
    and t4 nodes use the ``neutron`` network interface (a multi-tenant cloud: they join the
    network the lab makes), the a100 nodes ``flat`` (the common one: the provider network
    they are cabled to only)."""
    t = ["CUSTOM_GPU_NVIDIA_P100"]
    n = "neutron"
    enroll(
        ironic.conn,
        {
            "p100-0": {"rc": "baremetal.gpu-p100", "traits": t, "iface": n},
            "p100-1": {"rc": "baremetal.gpu-p100", "traits": t, "iface": n},
            "t4-0": {"rc": "baremetal.gpu-t4", "traits": [], "iface": n},
            "t4-maint": {"rc": "baremetal.gpu-t4", "maintenance": "bad DIMM", "iface": n},
            "t4-manage": {"rc": "baremetal.gpu-t4", "state": "manageable", "iface": n},
            "k8s-0": {"rc": "baremetal.k8s", "state": "active"},
            "a100-0": {"rc": "baremetal.gpu-a100", "iface": "flat"},
            "a100-1": {"rc": "baremetal.gpu-a100", "iface": "flat"},
        },
    )
    yield ironic.conn


def cloud_double() -> OpenStackDouble:
    d = OpenStackDouble()
    d.images = [
        res(name="ubuntu-22.04-baremetal", status="active", os_distro="ubuntu"),
        res(name="ubuntu-22.04", status="active", os_distro="ubuntu"),
        res(name="fedora-coreos-38", status="active", os_distro="fedora-coreos"),
        res(name="ubuntu-2204-kube-v1.30.4", status="active", os_distro="ubuntu"),
    ]
    d.networks = [
        res(name="public", is_router_external=True, status="ACTIVE"),
        res(name="private", is_router_external=False, status="ACTIVE", subnet_ids=["s-1"]),
        res(
            name="provisioning",
            is_router_external=False,
            status="ACTIVE",
            subnet_ids=["prov-subnet"],
            provider_network_type="flat",
        ),
        res(name="empty", is_router_external=False, status="ACTIVE", subnet_ids=[]),
    ]
    d.flavors = [
        res(name="g1.p100", vcpus=8, ram=65536, extra_specs={"pci_passthrough:alias": "p100:1"}),
        res(name="g2.p100", vcpus=16, ram=131072, extra_specs={"pci_passthrough:alias": "p100:2"}),
        res(name="m1.large", vcpus=4, ram=8192, extra_specs={}),
        res(
            name="bm.k8s",
            vcpus=40,
            ram=262144,
            extra_specs={"resources:CUSTOM_BAREMETAL_K8S": "1", "resources:VCPU": "0"},
        ),
    ]
    d.magnum_services = [res(name=None, binary="magnum-conductor", state="up", host="ctl-1")]
    return d


def test_ironic_bm_preflight_passes_with_double_cloud_and_real_ironic(bm: Any) -> None:
    cfg = stack("ironic-bm")  # host_count 2, baremetal.gpu-p100, trait CUSTOM_GPU_NVIDIA_P100
    rows = preflight(cfg, os_conn=cloud_double(), bm_conn=bm)
    text = show(rows, "preflight ironic-bm (passing)")
    assert failing(rows) == {}
    names = [r.name for r in rows]
    assert names == [
        "image ubuntu-22.04-baremetal",
        "external network public",
        "ironic nodes CUSTOM_BAREMETAL_GPU_P100",
        "ironic network interface CUSTOM_BAREMETAL_GPU_P100",
        "quota instances",
        "quota cores",
        "quota ram MB",
        "quota floating IPs",
    ]
    assert "2 ready, 2 needed with traits CUSTOM_GPU_NVIDIA_P100" in text
    assert "needs 80, 100 free" in text  # 2 x 40 vCPUs


def test_ironic_bm_preflight_fails_on_too_few_nodes_maintenance_and_quota_double(bm: Any) -> None:
    cloud = cloud_double()
    cloud.images = []
    cloud.limits.update(total_cores=100, total_cores_used=30)
    cfg = stack("ironic-bm", resource_class="baremetal.gpu-t4", host_count=3, required_traits=None)
    rows = preflight(cfg, os_conn=cloud, bm_conn=bm)
    text = show(rows, "preflight ironic-bm (failing)")
    bad = failing(rows)
    assert sorted(bad) == [
        "image ubuntu-22.04-baremetal",
        "ironic nodes CUSTOM_BAREMETAL_GPU_T4",
        "quota cores",
    ]
    nodes = bad["ironic nodes CUSTOM_BAREMETAL_GPU_T4"]
    assert nodes.detail.startswith("1 ready, 3 needed")
    assert "t4-maint: in maintenance (bad DIMM)" in nodes.detail
    assert "t4-manage: provision state manageable" in nodes.detail
    assert "openstack baremetal node maintenance unset t4-maint" in nodes.fix
    assert "needs 120, 70 free (30 used of 100)" in bad["quota cores"].detail
    assert "raise the cores quota by 50" in bad["quota cores"].fix
    assert "FAIL" in text and "openstack image create" in text


FLAT = {
    "resource_class": "baremetal.gpu-a100",
    "required_traits": None,
    "lab_cidr": None,
    "dns_nameservers": None,
    "external_network": None,
}


def test_ironic_bm_flat_nodes_need_an_existing_network_double(bm: Any) -> None:
    """Nodes on Ironic's flat network interface: a network the lab would make fails early,
    naming gpulab:network; the provider network they are cabled to passes, and then no
    external network, router or floating IP is asked for."""
    cloud = cloud_double()
    made = {**FLAT, "lab_cidr": "10.42.1.0/24", "external_network": "public"}
    rows = preflight(stack("ironic-bm", **made), os_conn=cloud, bm_conn=bm)
    bad = failing(rows)
    assert list(bad) == ["ironic network interface CUSTOM_BAREMETAL_GPU_A100"]
    row = bad["ironic network interface CUSTOM_BAREMETAL_GPU_A100"]
    assert row.detail.startswith("flat: a100-0, a100-1: flat binds a node's ports only on")
    assert "(gpulab:network unset)" in row.detail
    assert row.fix.startswith("set gpulab:network to that provider network")

    rows = preflight(stack("ironic-bm", network="provisioning", **FLAT), os_conn=cloud, bm_conn=bm)
    show(rows, "preflight ironic-bm on the flat provisioning network (passing)")
    assert failing(rows) == {}
    shown = {r.name: r.detail for r in rows}
    assert shown["network provisioning"] == "flat provider network, 1 subnet(s), status ACTIVE"
    assert shown["ironic network interface CUSTOM_BAREMETAL_GPU_A100"] == (
        "flat: a100-0, a100-1; ports on gpulab:network provisioning"
    )
    assert "external network public" not in shown
    assert shown["quota floating IPs"].startswith("needs 0,")


@pytest.mark.parametrize(
    ("network", "detail"),
    [
        ("nope", "not found (gpulab:network)"),
        ("empty", "has no subnet: the hosts' ports would get no address (gpulab:network)"),
    ],
)
def test_unknown_or_subnetless_network_is_one_failing_row_double(
    bm: Any, network: str, detail: str
) -> None:
    rows = preflight(
        stack("ironic-bm", network=network, **FLAT), os_conn=cloud_double(), bm_conn=bm
    )
    bad = failing(rows)
    assert list(bad) == [f"network {network}"]
    assert bad[f"network {network}"].detail == detail


def test_too_many_nodes_asked_names_how_many_to_enroll_double(bm: Any) -> None:
    rows = preflight(stack("ironic-bm", host_count=5), os_conn=cloud_double(), bm_conn=bm)
    row = failing(rows)["ironic nodes CUSTOM_BAREMETAL_GPU_P100"]
    assert row.detail.startswith("2 ready, 5 needed")
    assert "enroll 3 more node(s) with resource_class CUSTOM_BAREMETAL_GPU_P100" in row.fix


def test_nova_pci_preflight_alias_network_quota_double() -> None:
    cloud = cloud_double()
    rows = preflight(stack("nova-pci"), os_conn=cloud)  # alias p100:1, 2 hosts
    assert failing(rows) == {}
    alias = next(r for r in rows if r.name == "pci alias p100")
    assert alias.detail == "used by g1.p100 (x1), g2.p100 (x2)"

    rows = preflight(
        stack("nova-pci", pci_alias="a100:1", external_network="private"), os_conn=cloud
    )
    bad = failing(rows)
    assert sorted(bad) == ["external network private", "pci alias a100"]
    assert "nova.conf [pci] alias has name=a100" in bad["pci alias a100"].fix
    assert bad["external network private"].detail == "exists but is not router:external"

    rows = preflight(stack("nova-pci", pci_alias="p100:4"), os_conn=cloud)
    assert "none asks for 4 devices" in failing(rows)["pci alias p100"].detail


def test_quota_unlimited_and_floating_ip_shortage_double() -> None:
    cloud = cloud_double()
    cloud.limits.update(instances=-1, total_cores=-1, total_ram=-1)
    cloud.fip_quota = {"limit": 3, "used": 1, "reserved": 1}
    rows = preflight(stack("nova-pci"), os_conn=cloud)
    assert next(r for r in rows if r.name == "quota cores").detail == "needs 16, unlimited"
    assert failing(rows)["quota floating IPs"].detail == "needs 2, 1 free (2 used of 3)"


def test_forbidden_call_is_one_failing_row_double() -> None:
    cloud = cloud_double()
    cloud.errors["compute.get_limits"] = sdk_exc.ForbiddenException(
        "Policy doesn't allow os_compute_api:limits to be performed.", http_status=403
    )
    rows = preflight(stack("nova-pci"), os_conn=cloud)
    row = failing(rows)["quota compute"]
    assert row.detail.startswith("Nova limits: permission denied")
    assert "\n" not in row.detail


def test_magnum_preflight_probes_template_and_checks_flavor_and_image_double(bm: Any) -> None:
    cloud = cloud_double()
    rows = preflight(stack("magnum-k8s"), os_conn=cloud, bm_conn=bm)
    show(rows, "preflight magnum-k8s (passing)")
    assert failing(rows) == {}
    [probe] = cloud.templates_created
    assert probe["coe"] == "kubernetes" and probe["server_type"] == "vm"
    assert probe["image_id"] == "ubuntu-2204-kube-v1.30.4"
    driver = next(r for r in rows if r.name.startswith("magnum Cluster API driver"))
    assert driver.name == "magnum Cluster API driver (vm, ubuntu, kubernetes)"
    assert driver.detail.startswith("enabled: a probe template (cluster_distro ubuntu)")
    assert next(r for r in rows if r.name == "image ubuntu-2204-kube-v1.30.4").passed
    assert probe["name"].startswith("k8s-lab-preflight-")
    assert cloud.cluster_templates == []  # the probe was deleted
    assert next(r for r in rows if r.name == "flavor g1.p100").detail == (
        "8 vCPU, 65536 MB; PCI alias p100 x1"
    )
    assert next(r for r in rows if r.name == "quota cores").detail.startswith("needs 20,")

    cloud = cloud_double()
    cloud.images[3].os_distro = "fedora-coreos"  # a Heat-era property on the Ubuntu image
    cloud.errors["magnum.create_cluster_template"] = sdk_exc.BadRequestException(
        "Cluster type (vm, ubuntu, kubernetes) not supported.", http_status=400
    )
    rows = preflight(stack("magnum-k8s", node_flavor="m1.large"), os_conn=cloud, bm_conn=bm)
    text = show(rows, "preflight magnum-k8s (failing)")
    bad = failing(rows)
    assert sorted(bad) == [
        "flavor m1.large",
        "image ubuntu-2204-kube-v1.30.4",
        "magnum Cluster API driver (vm, ubuntu, kubernetes)",
    ]
    assert "no pci_passthrough:alias extra spec" in bad["flavor m1.large"].detail
    assert "[pci])" in text  # printed as is, not eaten as rich markup
    assert "os_distro=ubuntu" in bad["image ubuntu-2204-kube-v1.30.4"].fix
    driver = bad["magnum Cluster API driver (vm, ubuntu, kubernetes)"]
    assert "not supported" in driver.detail
    assert "pip install magnum-cluster-api" in driver.fix and "disabled_drivers" in driver.fix


def test_magnum_bare_metal_checks_node_flavor_class_in_real_ironic_double(bm: Any) -> None:
    cloud = cloud_double()
    rows = preflight(
        stack("magnum-k8s", server_type="bm", node_flavor="bm.k8s", docker_volume_size=None),
        os_conn=cloud,
        bm_conn=bm,
    )
    bad = failing(rows)
    assert list(bad) == ["ironic nodes CUSTOM_BAREMETAL_K8S"]  # its one node is deployed
    assert "k8s-0: provision state active" in bad["ironic nodes CUSTOM_BAREMETAL_K8S"].detail
    cloud.magnum_services[0].state = "down"
    cloud.templates_created.clear()
    rows = preflight(stack("magnum-k8s"), os_conn=cloud, bm_conn=bm)
    assert "no magnum-conductor up (ctl-1:down)" in failing(rows)["magnum conductor"].detail
    assert cloud.templates_created == []  # no probe against a dead Magnum


def test_provide_moves_manageable_nodes_before_counting(bm: Any) -> None:
    cfg = stack("ironic-bm", resource_class="baremetal.gpu-t4", host_count=2, required_traits=None)
    rows = preflight(cfg, os_conn=cloud_double(), bm_conn=bm, provide=True)
    assert rows[2].name == "ironic provide" and rows[2].detail.endswith("t4-manage")
    assert failing(rows) == {}


def test_audit_lists_leftovers_by_name_tag_metadata_and_label_double(bm: Any) -> None:
    cloud = cloud_double()
    cfg = stack("magnum-k8s")  # lab k8s-lab
    assert [r.passed for r in audit(cfg, os_conn=cloud)] == [True]
    cloud.servers = [
        res(name="k8s-lab-node-0", status="ACTIVE"),
        res(name="someone-else", tags=["other-lab"]),
    ]
    cloud.floating_ips = [res(floating_ip_address="198.51.100.7", tags=["k8s-lab"], id="fip-1")]
    cloud.volumes = [res(name="", metadata={"gpulab-lab": "k8s-lab"}, id="vol-1")]
    cloud.security_groups = [res(name="k8s-lab-sg"), res(name="default")]
    cloud.clusters = [res(name="renamed", labels={"gpulab_lab": "k8s-lab"}, id="c-1")]
    rows = audit(cfg, os_conn=cloud)
    show(rows, "audit magnum-k8s (leftovers)")
    assert {r.name: r.fix for r in rows} == {
        "server k8s-lab-node-0": "openstack server delete k8s-lab-node-0-id",
        "floating ip 198.51.100.7": "openstack floating ip delete fip-1",
        "volume vol-1": "openstack volume delete vol-1",
        "security group k8s-lab-sg": "openstack security group delete k8s-lab-sg-id",
        "cluster renamed": "openstack coe cluster delete c-1",
    }
    assert not any(r.passed for r in rows)


def test_audit_ironic_bm_checks_nodes_back_to_available_double(bm: Any) -> None:
    cloud = cloud_double()
    rows = audit(stack("ironic-bm"), os_conn=cloud, bm_conn=bm)
    assert [(r.name, r.passed) for r in rows] == [
        ("openstack lab bm-lab", True),
        ("ironic nodes", True),
    ]
    rows = audit(stack("ironic-bm", resource_class="baremetal.k8s"), os_conn=cloud, bm_conn=bm)
    assert failing(rows)["ironic node k8s-0"].fix == "openstack baremetal node undeploy k8s-0"
