"""Ironic bare-metal readiness, ``manageable -> available``, and the node part of the audit.

A node can hold one instance of a bare-metal flavor when its resource class is the flavor's
(``resources:CUSTOM_<CLASS>=1``), it carries the flavor's required traits, it is ``available``,
not in maintenance, not already holding an instance, and its power state is known (a node
whose BMC does not answer has no power state, and Nova's scheduling onto it fails late).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from infra.clouds import Check, CloudError, fail, ok
from infra.clouds.openstack import Connection, guard, normalize_resource_class

KNOWN_POWER = ("power on", "power off")


@dataclass
class NodeFitness:
    id: str
    name: str
    provision_state: str
    problems: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.name or self.id

    @property
    def ready(self) -> bool:
        return not self.problems


@dataclass
class Readiness:
    resource_class: str
    traits: list[str]
    needed: int
    nodes: list[NodeFitness]

    @property
    def ready(self) -> list[NodeFitness]:
        return [n for n in self.nodes if n.ready]

    @property
    def manageable(self) -> list[NodeFitness]:
        return [n for n in self.nodes if n.provision_state == "manageable"]

    def checks(self) -> list[Check]:
        name = f"ironic nodes {self.resource_class}"
        want = f"{self.needed} needed"
        if self.traits:
            want += f" with traits {','.join(self.traits)}"
        have = len(self.ready)
        if have >= self.needed:
            return [ok(name, f"{have} ready, {want}")]
        unfit = [n for n in self.nodes if not n.ready]
        detail = f"{have} ready, {want}"
        if unfit:
            detail += "; " + "; ".join(f"{n.label}: {', '.join(n.problems)}" for n in unfit)
        fixes = [f for n in unfit for f in n.fixes]
        short = self.needed - have - len(unfit)
        if short > 0:
            fixes.append(
                f"enroll {short} more node(s) with resource_class "
                f"{self.resource_class} (openstack baremetal node create "
                f"--resource-class ...)"
            )
        return [fail(name, detail, "; ".join(dict.fromkeys(fixes)))]


def list_nodes(conn: Connection) -> list[Any]:
    with guard("Ironic node list"):
        return list(conn.baremetal.nodes(details=True))


def _matches(node: Any, resource_class: str) -> bool:
    rc = getattr(node, "resource_class", None)
    if not rc:
        return False
    return normalize_resource_class(rc) == normalize_resource_class(resource_class)


def assess(node: Any, traits: Iterable[str]) -> NodeFitness:
    """What keeps ``node`` from taking an instance now, with the command that fixes each."""
    label = node.name or node.id
    fit = NodeFitness(node.id, node.name or "", node.provision_state or "")
    state = node.provision_state
    if state != "available":
        fit.problems.append(f"provision state {state}")
        if state == "manageable":
            fit.fixes.append(
                f"openstack baremetal node provide {label} (or gpulab preflight --provide)"
            )
        elif state == "enroll":
            fit.fixes.append(
                f"openstack baremetal node manage {label} && "
                f"openstack baremetal node provide {label}"
            )
        elif state in ("active", "deploy failed", "error"):
            fit.fixes.append(f"openstack baremetal node undeploy {label}")
        else:
            fit.fixes.append(f"wait for {label} to settle, or inspect its last_error")
    if node.is_maintenance:
        reason = f" ({node.maintenance_reason})" if node.maintenance_reason else ""
        fit.problems.append(f"in maintenance{reason}")
        fit.fixes.append(f"openstack baremetal node maintenance unset {label}")
    if node.power_state not in KNOWN_POWER:
        fit.problems.append(f"power state unknown ({node.power_state})")
        fit.fixes.append(
            f"openstack baremetal node validate {label} (check its BMC "
            f"credentials), then openstack baremetal node power off {label}"
        )
    if getattr(node, "instance_id", None):
        fit.problems.append(f"already holds instance {node.instance_id}")
    missing = sorted(set(traits) - set(node.traits or []))
    if missing:
        fit.problems.append(f"missing traits {','.join(missing)}")
        fit.fixes.append(f"openstack baremetal node add trait {label} {' '.join(missing)}")
    return fit


def readiness(
    conn: Connection, resource_class: str, count: int, traits: Iterable[str] = ()
) -> Readiness:
    """How many nodes of ``resource_class`` (with ``traits``) can take an instance now."""
    if count < 1:
        raise ValueError(f"count {count} must be at least 1")
    rc = normalize_resource_class(resource_class)
    traits = sorted(set(traits))
    nodes = [assess(n, traits) for n in list_nodes(conn) if _matches(n, rc)]
    return Readiness(rc, traits, count, nodes)


# Ironic network interfaces that leave a node on the network it is cabled to: ``flat`` binds
# its ports on that pre-configured provider network only, ``noop`` switches nothing. Only
# ``neutron`` (switch integration) moves a node onto a tenant network such as one a lab makes.
CABLED_INTERFACES = ("flat", "noop")


def network_interfaces(conn: Connection, resource_class: str) -> dict[str, list[str]]:
    """network_interface -> the nodes of ``resource_class`` that use it (names, sorted)."""
    rc = normalize_resource_class(resource_class)
    out: dict[str, list[str]] = {}
    for n in list_nodes(conn):
        if _matches(n, rc):
            iface = getattr(n, "network_interface", None) or "(unset)"
            out.setdefault(iface, []).append(n.name or n.id)
    return {k: sorted(v) for k, v in sorted(out.items())}


def check_network_interface(
    conn: Connection, resource_class: str, network: str | None
) -> list[Check]:
    """The nodes of ``resource_class`` can attach to the lab's network: on nodes whose
    network interface is ``flat`` or ``noop`` only an existing network (``network``, the
    provider network they are cabled to) works, not a network the lab would make."""
    rc = normalize_resource_class(resource_class)
    name = f"ironic network interface {rc}"
    found = network_interfaces(conn, resource_class)
    if not found:
        return []
    shown = "; ".join(f"{iface}: {', '.join(nodes)}" for iface, nodes in found.items())
    cabled = sorted(i for i in found if i in CABLED_INTERFACES)
    if network:
        return [ok(name, f"{shown}; ports on gpulab:network {network}")]
    if cabled:
        return [
            fail(
                name,
                f"{shown}: {'/'.join(cabled)} binds a node's ports only on the provider "
                "network it is cabled to, not on the network the lab would make "
                "(gpulab:network unset)",
                "set gpulab:network to that provider network (ironic.conf [neutron] "
                "provisioning_network, or ask the cloud admin)",
            )
        ]
    return [ok(name, f"{shown}: the nodes join the network the lab makes")]


def make_available(
    conn: Connection, resource_class: str, *, wait: bool = True, timeout: float = 600
) -> list[str]:
    """Move the ``manageable`` nodes of ``resource_class`` that are not in maintenance to
    ``available`` (Ironic's ``provide``: cleaning, then available). Returns their names."""
    rc = normalize_resource_class(resource_class)
    nodes = [
        n
        for n in list_nodes(conn)
        if _matches(n, rc) and n.provision_state == "manageable" and not n.is_maintenance
    ]
    with guard("Ironic provide"):
        for n in nodes:
            conn.baremetal.set_node_provision_state(n, "provide")
        if wait and nodes:
            conn.baremetal.wait_for_nodes_provision_state(
                nodes, "available", timeout=timeout, abort_on_failed_state=True
            )
    return [n.name or n.id for n in nodes]


def audit_nodes(
    conn: Connection, resource_class: str | None = None, names: Iterable[str] = ()
) -> list[Check]:
    """After teardown every node of the lab's class (or named) is ``available`` again."""
    wanted = set(names)
    rc = normalize_resource_class(resource_class) if resource_class else None
    nodes = [
        n
        for n in list_nodes(conn)
        if (rc and _matches(n, rc)) or (n.name in wanted or n.id in wanted)
    ]
    rows: list[Check] = []
    for n in nodes:
        label = n.name or n.id
        if n.provision_state == "available" and not n.is_maintenance and not n.instance_id:
            continue
        problems = [f"provision state {n.provision_state}"]
        fix = f"openstack baremetal node undeploy {label}"
        if n.provision_state in ("clean failed", "deploy failed", "error"):
            fix = (
                f"openstack baremetal node manage {label} && openstack baremetal node "
                f"provide {label} (last_error: {n.last_error or '-'})"
            )
        elif n.provision_state in ("cleaning", "deleting", "deploying", "wait call-back"):
            fix = f"wait for {label} to finish {n.provision_state}"
        elif n.provision_state == "manageable":
            fix = f"openstack baremetal node provide {label}"
        if n.is_maintenance:
            problems.append("in maintenance")
            fix += f"; openstack baremetal node maintenance unset {label}"
        if n.instance_id:
            problems.append(f"instance {n.instance_id}")
        rows.append(fail(f"ironic node {label}", ", ".join(problems), fix))
    if not rows:
        what = f"class {rc}" if rc else "named nodes"
        rows.append(ok("ironic nodes", f"{len(nodes)} node(s) of {what} available"))
    return rows


__all__ = [
    "CloudError",
    "Readiness",
    "assess",
    "audit_nodes",
    "check_network_interface",
    "make_available",
    "network_interfaces",
    "readiness",
]
