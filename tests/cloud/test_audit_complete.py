"""The teardown audit covers every kind of resource the OpenStack topologies create: one
leftover of each kind in the OpenStack double (Nova, Neutron, Cinder and Magnum cannot run
here) must each get a failing row with its delete command. The vSphere side (VMs and VM
folders) runs against the real vCenter simulator in test_vgpu_factors_vcsim.py."""

from __future__ import annotations

import openstack.exceptions as sdk_exc

from infra.clouds.openstack_audit import KINDS, MAGNUM
from infra.preflight import audit
from tests.cloud.helpers import stack
from tests.cloud.openstack_double import OpenStackDouble, res

LAB = "k8s-lab"  # the example magnum-k8s stack's lab


def leftovers() -> OpenStackDouble:
    """One leftover of each kind, named or tagged the way infra/topologies/ makes them,
    next to resources of other labs that must not be listed."""
    d = OpenStackDouble()
    d.servers = [res(name=f"{LAB}-gpu-0", status="ACTIVE"), res(name="other-gpu-0")]
    d.floating_ips = [res(floating_ip_address="198.51.100.9", tags=[f"gpulab-lab={LAB}"], id="f1")]
    d.ports = [res(name=f"{LAB}-gpu-0-port", status="DOWN"), res(name="k8s-labs-port")]
    d.volumes = [res(name="", metadata={"gpulab_lab": LAB}, id="v1")]
    d.routers = [res(name=f"{LAB}-router")]
    d.subnets = [res(name=f"{LAB}-subnet"), res(name="public-subnet")]
    d.networks = [res(name=f"{LAB}-net"), res(name="public")]
    d.security_groups = [res(name=f"{LAB}-secgroup"), res(name="default")]
    d.flavors = [res(name=f"{LAB}-pci"), res(name="m1.large")]
    d.keypairs = [res(name=f"{LAB}-key", id=f"{LAB}-key"), res(name="admin", id="admin")]
    d.server_groups = [res(name=f"{LAB}-spread")]
    d.clusters = [res(name=f"{LAB}-k8s", status="CREATE_COMPLETE")]
    d.cluster_templates = [res(name=f"{LAB}-k8s-template"), res(name="shared-template")]
    return d


def test_audit_lists_one_leftover_of_every_kind_double() -> None:
    cfg = stack("magnum-k8s")
    assert cfg.lab == LAB
    rows = audit(cfg, os_conn=leftovers())
    print("\n| check | result | detail | fix |")
    for r in rows:
        print(f"| {r.name} | {'PASS' if r.passed else 'FAIL'} | {r.detail} | {r.fix} |")
    got = {r.name: r.fix for r in rows}
    assert got == {
        f"server {LAB}-gpu-0": f"openstack server delete {LAB}-gpu-0-id",
        "floating ip 198.51.100.9": "openstack floating ip delete f1",
        f"port {LAB}-gpu-0-port": f"openstack port delete {LAB}-gpu-0-port-id",
        "volume v1": "openstack volume delete v1",
        f"router {LAB}-router": (
            f"openstack router unset --external-gateway {LAB}-router-id; remove its subnets; "
            f"openstack router delete {LAB}-router-id"
        ),
        f"subnet {LAB}-subnet": f"openstack subnet delete {LAB}-subnet-id",
        f"network {LAB}-net": f"openstack network delete {LAB}-net-id",
        f"security group {LAB}-secgroup": f"openstack security group delete {LAB}-secgroup-id",
        f"flavor {LAB}-pci": f"openstack flavor delete {LAB}-pci-id",
        f"keypair {LAB}-key": f"openstack keypair delete {LAB}-key",
        f"server group {LAB}-spread": f"openstack server group delete {LAB}-spread-id",
        f"cluster {LAB}-k8s": f"openstack coe cluster delete {LAB}-k8s-id",
        f"cluster template {LAB}-k8s-template": (
            f"openstack coe cluster template delete {LAB}-k8s-template-id"
        ),
    }
    assert not any(r.passed for r in rows)
    # every kind the audit knows has its leftover in the table
    kinds = [k for k, _, _ in KINDS + MAGNUM]
    assert len(kinds) == len(got) == 13
    assert all(any(name.startswith(f"{k} ") for name in got) for k in kinds)


def test_audit_of_a_clean_cloud_names_every_kind_it_checked_double() -> None:
    rows = audit(stack("magnum-k8s"), os_conn=OpenStackDouble())
    assert [r.passed for r in rows] == [True]
    for kind in ("subnets", "flavors", "keypairs", "server groups", "cluster templates"):
        assert kind in rows[0].detail


def test_audit_a_denied_listing_is_a_failing_row_not_a_traceback_double() -> None:
    d = leftovers()
    d.errors["compute.keypairs"] = sdk_exc.ForbiddenException("Policy doesn't allow it")
    rows = audit(stack("magnum-k8s"), os_conn=d)
    bad = {r.name: r for r in rows if not r.passed}
    assert "audit keypairs" in bad and "\n" not in bad["audit keypairs"].detail
    assert f"flavor {LAB}-pci" in bad  # the other kinds are still checked
