"""Lean, pinned installs (docs/install.md): the core has no ML framework or cloud SDK, each extra
what its name says, every dependency an upper bound and a pin in constraints.txt that the venv
follows, and the Ansible collections of collections/requirements.yml are the ones the playbooks
use, installed at the pinned versions."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
REQ = re.compile(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(.*)$")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(spec: list[str]) -> dict[str, str]:
    out = {}
    for line in spec:
        m = REQ.match(line)
        assert m is not None, line
        out[norm(m[1])] = m[3]
    return out


def pins() -> dict[str, str]:
    text = (REPO / "constraints.txt").read_text()
    return {norm(a): b for a, b in re.findall(r"(?m)^([A-Za-z0-9_.-]+)==(\S+)\s*$", text)}


def test_core_has_no_framework_and_no_cloud_sdk() -> None:
    core = requirements(PROJECT["dependencies"])
    heavy = {"tensorflow", "tensorflow-cpu", "keras", "jax", "torch", "openstacksdk", "pyvmomi",
             "pulumi-openstack", "pulumi-vsphere", "ansible"}  # fmt: skip
    assert not heavy & set(core), heavy & set(core)
    assert {"pulumi", "ansible-core", "ansible-runner", "pydantic", "duckdb"} <= set(core)


def test_extras_hold_what_their_names_say() -> None:
    extras = {k: requirements(v) for k, v in PROJECT["optional-dependencies"].items()}
    assert set(extras["cpu"]) == {"keras", "tensorflow-cpu"}
    assert set(extras["gpu"]) == {"keras", "tensorflow"}  # tensorflow[and-cuda]
    assert "tensorflow-cpu" not in extras["gpu"]
    assert set(extras["openstack"]) == {"openstacksdk", "pulumi-openstack"}
    assert set(extras["vsphere"]) == {"pyvmomi", "pulumi-vsphere"}
    assert "gpulab[cpu,openstack,vsphere]" in PROJECT["optional-dependencies"]["test"]
    assert {"mutmut", "prometheus-client", "pytest"} <= set(extras["test"])


def test_every_runtime_dependency_has_an_upper_bound_and_a_pin() -> None:
    pinned = pins()
    specs = {**requirements(PROJECT["dependencies"])}
    for name in ("cpu", "openstack", "vsphere", "test"):
        specs.update(requirements(PROJECT["optional-dependencies"][name]))
    specs.pop("gpulab")
    unbounded = [n for n, s in specs.items() if "<" not in s and not n.startswith("types-")]
    assert unbounded == []
    assert sorted(n for n in specs if n not in pinned) == []
    assert "ansible" in pinned  # the source of the collections


def test_the_venv_follows_the_pins() -> None:
    """scripts/venv.sh installs with -c constraints.txt: the venv running the tests has them."""
    from importlib.metadata import PackageNotFoundError, version

    pinned = pins()
    names = set(requirements(PROJECT["dependencies"]))
    for extra in ("cpu", "openstack", "vsphere"):
        names |= set(requirements(PROJECT["optional-dependencies"][extra]))
    off = {}
    for name in sorted(names):
        try:
            got = version(name)
        except PackageNotFoundError:
            got = "missing"
        if got != pinned[name]:
            off[name] = (got, pinned[name])
    assert off == {}


def used_collections() -> set[str]:
    fqcn = re.compile(r"^\s*-?\s*([a-z0-9_]+)\.([a-z0-9_]+)\.[a-z0-9_]+:", re.M)
    found = set()
    for path in (REPO / "playbooks").rglob("*.yml"):
        found |= {f"{a}.{b}" for a, b in fqcn.findall(path.read_text())}
    return found - {"ansible.builtin", "infra.ansible"}


def test_requirements_list_the_collections_in_use() -> None:
    wanted = yaml.safe_load((REPO / "collections/requirements.yml").read_text())["collections"]
    names = {c["name"] for c in wanted}
    # the playbooks' modules, and the chroot connection of the test hosts (tests/parts)
    assert names == used_collections() | {"community.general"}
    assert all(re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", str(c["version"])) for c in wanted)


def test_the_venv_has_the_pinned_collections() -> None:
    out = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-galaxy")), "collection", "list",
         "--format", "json"],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=True,
    ).stdout  # fmt: skip
    found: dict[str, str] = {}
    for collections in json.loads(out).values():
        for name, info in collections.items():
            found.setdefault(name, info["version"])
    wanted = yaml.safe_load((REPO / "collections/requirements.yml").read_text())["collections"]
    assert {c["name"]: found.get(c["name"]) for c in wanted} == {
        c["name"]: str(c["version"]) for c in wanted
    }


def test_ansible_cfg_for_runs_by_hand() -> None:
    text = (REPO / "ansible.cfg").read_text()
    assert "roles_path = playbooks/roles" in text and (REPO / "playbooks/roles").is_dir()
    assert "inventory = inventory.yml" in text
    assert not re.search(r"(?mi)^\s*host_key_checking\s*=\s*false", text)
