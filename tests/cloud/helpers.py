"""Helpers for the cloud tests: stack configs derived from the example stack files, and
Ironic nodes enrolled and driven to a state in one batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.config import LabConfig, raw_from_stack_file, validate
from tests.parts import REPO


def stack(kind: str, **changes: Any) -> LabConfig:
    """The example ``Pulumi.<kind>.yaml`` with ``changes`` (None removes a key), validated."""
    raw = raw_from_stack_file(REPO / f"Pulumi.{kind}.yaml")
    for k, v in changes.items():
        if v is None:
            raw.pop(k, None)
        else:
            raw[k] = v
    return validate(raw)


def write_stack(path: Path, kind: str, **changes: Any) -> Path:
    """A stack file like the example one with ``changes`` (the secret stays encrypted)."""
    import yaml

    data = yaml.safe_load((REPO / f"Pulumi.{kind}.yaml").read_text())
    for k, v in changes.items():
        if v is None:
            data["config"].pop(f"gpulab:{k}", None)
        else:
            data["config"][f"gpulab:{k}"] = v
    path.write_text(yaml.safe_dump(data))
    return path


def enroll(conn: Any, nodes: dict[str, dict[str, Any]]) -> None:
    """Enroll ``{name: {rc, traits, power, state, maintenance}}`` with Ironic's real state
    machine: enroll -> manage -> (power, traits) -> provide -> available [-> active]."""
    bm = conn.baremetal
    made = {n: bm.create_node(driver="fake-hardware", name=n, resource_class=s["rc"])
            for n, s in nodes.items()}
    for n in made.values():
        bm.set_node_provision_state(n, "manage")
    bm.wait_for_nodes_provision_state(list(made.values()), "manageable", timeout=60)
    for name, s in nodes.items():
        for t in s.get("traits", ()):
            bm.add_node_trait(made[name], t)
        if s.get("power", True):
            bm.set_node_power_state(made[name], "power off", wait=True, timeout=30)
    provide = [made[n] for n, s in nodes.items() if s.get("state", "available") != "manageable"]
    for n in provide:
        bm.set_node_provision_state(n, "provide")
    if provide:
        bm.wait_for_nodes_provision_state(provide, "available", timeout=60)
    for name, s in nodes.items():
        if s.get("maintenance"):
            bm.set_node_maintenance(made[name], reason=s["maintenance"])
        if s.get("state") == "active":
            bm.set_node_provision_state(made[name], "active", wait=True, timeout=60)
