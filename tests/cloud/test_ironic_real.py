"""Bare-metal readiness, ``manageable -> available`` and the node audit against a real
standalone Ironic (fake-hardware driver): nodes are enrolled with openstacksdk and driven
through Ironic's real state machine."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from infra.clouds import CloudError
from infra.clouds import ironic as ir
from tests.cloud.helpers import enroll

pytestmark = pytest.mark.ironic


def _node(conn: Any, name: str) -> Any:
    return conn.baremetal.get_node(name)


@pytest.fixture(scope="module")
def lab_nodes(ironic: Any) -> Iterator[Any]:
    """One batch of nodes in the states the tests need (each test uses its own class):

    - ready-a, ready-b: CUSTOM_GPU_READY, trait CUSTOM_NVLINK, available, powered off
    - mix-ok (available), mix-maint (available, in maintenance), mix-manage (manageable),
      mix-nopower (available, power state never known): CUSTOM_GPU_MIX
    - audit-active: CUSTOM_GPU_AUDIT, deployed (active), as a lab leaves it before undeploy
    """
    enroll(
        ironic.conn,
        {
            "ready-a": {"rc": "gpu.ready", "traits": ["CUSTOM_NVLINK"]},
            "ready-b": {"rc": "gpu.ready", "traits": ["CUSTOM_NVLINK"]},
            "mix-ok": {"rc": "gpu.mix"},
            "mix-maint": {"rc": "gpu.mix", "maintenance": "fan failure"},
            "mix-manage": {"rc": "gpu.mix", "state": "manageable"},
            "mix-nopower": {"rc": "gpu.mix", "power": False},
            "audit-active": {"rc": "gpu.audit", "state": "active"},
        },
    )
    yield ironic.conn


def test_readiness_passes_with_enough_available_nodes(lab_nodes: Any) -> None:
    r = ir.readiness(lab_nodes, "gpu.ready", 2, traits=["CUSTOM_NVLINK"])
    assert r.resource_class == "CUSTOM_GPU_READY"
    assert sorted(n.name for n in r.ready) == ["ready-a", "ready-b"]
    [row] = r.checks()
    assert row.passed, row
    assert "2 ready, 2 needed with traits CUSTOM_NVLINK" in row.detail


def test_readiness_fails_on_missing_trait_and_too_few_nodes(lab_nodes: Any) -> None:
    r = ir.readiness(lab_nodes, "GPU_READY", 3, traits=["CUSTOM_NVLINK", "CUSTOM_IB"])
    [row] = r.checks()
    assert not row.passed
    assert "0 ready" in row.detail and "missing traits CUSTOM_IB" in row.detail
    assert "openstack baremetal node add trait ready-a CUSTOM_IB" in row.fix
    assert "enroll 1 more node(s) with resource_class CUSTOM_GPU_READY" in row.fix


def test_readiness_names_maintenance_manageable_and_unknown_power(lab_nodes: Any) -> None:
    r = ir.readiness(lab_nodes, "gpu.mix", 4)
    [row] = r.checks()
    assert not row.passed
    assert [n.name for n in r.ready] == ["mix-ok"]
    assert "mix-maint: in maintenance (fan failure)" in row.detail
    assert "mix-manage: provision state manageable" in row.detail
    assert "mix-nopower: power state unknown (None)" in row.detail
    assert "openstack baremetal node maintenance unset mix-maint" in row.fix
    assert "openstack baremetal node provide mix-manage" in row.fix
    assert [n.name for n in r.manageable] == ["mix-manage"]


def test_make_available_moves_manageable_nodes_and_readiness_follows(lab_nodes: Any) -> None:
    moved = ir.make_available(lab_nodes, "gpu.mix", timeout=60)
    assert moved == ["mix-manage"]  # the one in maintenance is not touched
    assert _node(lab_nodes, "mix-manage").provision_state == "available"
    assert ir.readiness(lab_nodes, "gpu.mix", 2).checks()[0].passed
    # still short for 4: maintenance and unknown power remain
    assert not ir.readiness(lab_nodes, "gpu.mix", 4).checks()[0].passed
    assert ir.make_available(lab_nodes, "gpu.mix") == []


def test_audit_flags_deployed_node_until_undeployed(lab_nodes: Any) -> None:
    rows = ir.audit_nodes(lab_nodes, "gpu.audit")
    assert [(r.name, r.passed) for r in rows] == [("ironic node audit-active", False)]
    assert "provision state active" in rows[0].detail
    assert rows[0].fix == "openstack baremetal node undeploy audit-active"
    lab_nodes.baremetal.set_node_provision_state("audit-active", "deleted", wait=True, timeout=60)
    rows = ir.audit_nodes(lab_nodes, "gpu.audit")
    assert [r.passed for r in rows] == [True]
    assert "1 node(s) of class CUSTOM_GPU_AUDIT available" in rows[0].detail


def test_audit_flags_maintenance(lab_nodes: Any) -> None:
    rows = ir.audit_nodes(lab_nodes, names=["mix-maint", "mix-ok"])
    assert [(r.name, r.passed) for r in rows] == [("ironic node mix-maint", False)]
    assert "maintenance unset mix-maint" in rows[0].fix


def test_unreachable_ironic_is_one_line_error() -> None:
    import openstack

    conn = openstack.connect(auth_type="none", baremetal_endpoint_override="http://127.0.0.1:9")
    with pytest.raises(CloudError) as err:
        ir.readiness(conn, "gpu.ready", 1)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("Ironic node list: cannot reach the endpoint (http://127.0.0.1:9)")


def test_count_below_one_is_rejected(lab_nodes: Any) -> None:
    with pytest.raises(ValueError, match="count 0 must be at least 1"):
        ir.readiness(lab_nodes, "gpu.ready", 0)
