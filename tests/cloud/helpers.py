"""Helpers for the cloud tests: stack configs derived from the example stack files, and
Ironic nodes enrolled and driven to a state in one batch."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from infra.config import LabConfig, raw_from_stack_file, validate
from tests.parts import REPO


def stack(kind: str, **changes: Any) -> LabConfig:
    """The example ``Pulumi.<kind>.yaml`` with ``changes`` (None removes a key), validated."""
    raw = raw_from_stack_file(REPO / "examples" / kind / f"Pulumi.{kind}.yaml")
    for k, v in changes.items():
        if v is None:
            raw.pop(k, None)
        else:
            raw[k] = v
    return validate(raw)


def write_stack(path: Path, kind: str, **changes: Any) -> Path:
    """A stack file like the example one with ``changes`` (the secret stays encrypted)."""
    import yaml

    data = yaml.safe_load((REPO / "examples" / kind / f"Pulumi.{kind}.yaml").read_text())
    for k, v in changes.items():
        if v is None:
            data["config"].pop(f"gpulab:{k}", None)
        else:
            data["config"][f"gpulab:{k}"] = v
    path.write_text(yaml.safe_dump(data))
    return path


def wait_nodes(conn: Any, names: list[str], attr: str, want: str, timeout: float = 60) -> None:
    """Poll every 0.2 s (openstacksdk's own waits poll every 2 s) until each node's ``attr``
    is ``want``; fail on Ironic's failure states."""
    deadline = time.monotonic() + timeout
    pending = list(names)
    while pending:
        nodes = [conn.baremetal.get_node(n) for n in pending]
        for n in nodes:
            if n.provision_state in ("error", "deploy failed", "clean failed"):
                raise AssertionError(f"node {n.name}: {n.provision_state}: {n.last_error}")
        pending = [n.name for n in nodes if getattr(n, attr) != want]
        if pending and time.monotonic() > deadline:
            raise AssertionError(f"nodes {pending} did not reach {attr}={want}")
        if pending:
            time.sleep(0.2)


def enroll(conn: Any, nodes: dict[str, dict[str, Any]]) -> None:
    """Enroll ``{name: {rc, traits, power, state, maintenance, iface}}`` with Ironic's real
    state machine: enroll (traits) -> manage -> power off -> provide -> available [-> active].
    ``iface``: the node's network interface (default: the conductor's, ``noop``).

    Every synchronous write (create, traits) is made before the first asynchronous one, and
    each batch of asynchronous state changes is waited for before the next batch starts:
    Ironic answers ``manage``/``power off``/``provide``/``active`` with 202 and a conductor
    thread then writes the node, while a trait is written by the API process in its own
    transaction. On the test double's sqlite database (WAL journal, deferred transactions)
    an API transaction that read the node before a conductor commit cannot write after it:
    sqlite refuses at once with "database is locked" (SQLITE_BUSY_SNAPSHOT; no busy timeout
    helps), and Ironic 39 retries that only for node, port and lock writes, not for
    ``add_node_trait``. Production Ironic on MySQL/PostgreSQL waits on row locks instead.
    """
    bm = conn.baremetal
    names = list(nodes)
    for name, s in nodes.items():
        extra = {"network_interface": s["iface"]} if "iface" in s else {}
        bm.create_node(driver="fake-hardware", name=name, resource_class=s["rc"], **extra)
        for t in s.get("traits", ()):
            bm.add_node_trait(name, t)
    for name in names:
        bm.set_node_provision_state(name, "manage")
    wait_nodes(conn, names, "provision_state", "manageable")
    powered = [n for n, s in nodes.items() if s.get("power", True)]
    for name in powered:
        bm.set_node_power_state(name, "power off")
    wait_nodes(conn, powered, "power_state", "power off")
    provide = [n for n, s in nodes.items() if s.get("state", "available") != "manageable"]
    for name in provide:
        bm.set_node_provision_state(name, "provide")
    wait_nodes(conn, provide, "provision_state", "available")
    active = [n for n, s in nodes.items() if s.get("state") == "active"]
    for name in active:
        bm.set_node_provision_state(name, "active")
    wait_nodes(conn, active, "provision_state", "active")
    for name, s in nodes.items():
        if s.get("maintenance"):
            bm.set_node_maintenance(name, reason=s["maintenance"])
