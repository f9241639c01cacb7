"""The Topology contract: every topology package complete and consistent with its example
stack, the setting of each host, and no branching on a topology's name outside the packages."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from infra import topologies as topology
from infra.config import load_stack_file
from infra.hosts import GPU_PATHS
from infra.topologies.contract import facts
from workloads import execenv
from workloads.setting import NO_GPU, SETTINGS
from workloads.setting import where as setting

REPO = Path(__file__).resolve().parents[2]
NAMES = ("ironic-bm", "nova-pci", "magnum-k8s", "vsphere-gpu", "static", "local")


def test_registry_finds_every_package_in_order() -> None:
    assert topology.names() == NAMES
    packages = sorted(p.parent.name for p in (REPO / "infra/topologies").glob("*/__init__.py"))
    assert sorted([n.replace("-", "_") for n in NAMES] + ["openstack"]) == packages
    with pytest.raises(ValueError, match=r"topology 'openshift' is not one of ironic-bm, nova"):
        topology.get("openshift")


@pytest.mark.parametrize("name", NAMES)
def test_every_spec_is_complete(name: str) -> None:
    spec = topology.get(name)
    assert spec.summary and spec.name == name
    assert importlib.util.find_spec(spec.builder) is not None, spec.builder
    keys = {f.key for f in spec.keys}
    assert {"topology", "lab", "ssh_user"} <= keys  # LabArgs: the keys of every topology
    assert set(spec.settings.values()) <= set(SETTINGS)
    assert set(spec.settings) <= set(GPU_PATHS) - {NO_GPU}
    # The example stack validates, and its hosts' gpu_path is one the spec knows.
    cfg = load_stack_file(REPO / spec.stack_file, allow_placeholders=True)
    assert cfg.topology == name and isinstance(cfg.args, spec.args)
    assert spec.gpu_path(cfg.args) in spec.settings
    assert spec.host_setting(spec.gpu_path(cfg.args)) in SETTINGS
    envs = spec.envs(cfg.execution_envs, cfg.args)
    assert envs and all(e in execenv.names() for e in envs)
    assert importlib.util.find_spec(spec.checks) is not None, spec.checks
    checks = importlib.import_module(spec.checks)
    for fn in (checks.preflight, checks.audit, spec.check_config, spec.describe):
        assert callable(fn)


def test_one_gpu_path_means_one_setting_everywhere() -> None:
    seen: dict[str, str] = {}
    for spec in topology.registry().values():
        for path, where in spec.settings.items():
            assert seen.setdefault(path, where) == where, (spec.name, path)
    assert set(seen) == set(GPU_PATHS) - {NO_GPU}  # every gpu_path has a setting


def test_default_execution_envs() -> None:
    class Args:
        mode: str | None = None

        def __init__(self, **kw: Any) -> None:
            self.__dict__.update(kw)

    assert topology.get("local").envs((), Args()) == ["native"]
    assert topology.get("nova-pci").envs((), Args()) == ["native"]
    assert topology.get("magnum-k8s").envs((), Args()) == ["k8s"]
    assert topology.get("vsphere-gpu").envs((), Args(mode="bitfusion")) == ["bitfusion"]
    assert topology.get("vsphere-gpu").envs((), Args(mode="vgpu")) == ["native"]
    # the names the stack gives, as the config resolved them (the one place aliases are)
    assert topology.get("ironic-bm").envs(("native", "apptainer"), Args()) == [
        "native",
        "apptainer",
    ]


@pytest.mark.parametrize(
    ("name", "gpu_path", "env", "want"),
    [
        ("ironic-bm", "whole-machine", "native", "bare-metal"),
        ("ironic-bm", "whole-machine", "docker", "container-on-bm"),
        ("nova-pci", "pci-passthrough", "native", "vm-passthrough"),
        ("nova-pci", "pci-passthrough", "singularity", "container-on-vm"),
        ("vsphere-gpu", "vgpu", "native", "vgpu"),
        ("vsphere-gpu", "vgpu", "docker", "container-on-vm"),
        ("vsphere-gpu", "bitfusion", "bitfusion", "remote-gpu"),
        ("magnum-k8s", "container-vm", "k8s", "container-on-vm"),
        ("magnum-k8s", "container-bm", "k8s", "container-on-bm"),
        ("local", "local", "native", "bare-metal"),
        ("local", "local", "docker", "container-on-bm"),
    ],
)
def test_setting_per_host(name: str, gpu_path: str, env: str, want: str) -> None:
    spec = topology.get(name)
    host = spec.host_setting(gpu_path)
    assert host is not None and setting(host, env) == want
    got = facts(spec, gpu_path, env)
    assert got == {
        "topology": name,
        "gpu_path": gpu_path,
        "execution_env": execenv.canonical(env),
        "setting": want,
        "virtualization": SETTINGS[want]["virtualization"],
        "sharing": SETTINGS[host]["sharing"],  # a container on a vGPU still shares the GPU
    }


def test_hosts_without_gpu_measure_nothing() -> None:
    spec = topology.get("magnum-k8s")
    assert spec.host_setting("none") is None
    with pytest.raises(ValueError, match="do not run workloads"):
        facts(spec, "none", "k8s")
    with pytest.raises(ValueError, match="topology magnum-k8s has no hosts with gpu_path 'vgpu'"):
        spec.host_setting("vgpu")


def test_local_preflight_and_audit_through_the_spec() -> None:
    from infra.preflight import audit, preflight

    cfg = load_stack_file(REPO / "Pulumi.local.yaml")
    (row,) = preflight(cfg)
    assert row.passed and "no cloud to check" in row.detail
    (row,) = audit(cfg)
    assert row.passed and "nothing is built" in row.detail


def test_config_checks_of_a_topology_are_its_own() -> None:
    """Each topology's rules across its keys are in its package (magnum-k8s: no docker volume
    on bare metal; vsphere-gpu: each mode's keys; the OpenStack ones: no world-open SSH)."""
    problems: list[str] = []
    topology.get("magnum-k8s").check_config(
        {"docker_volume_size": 50},
        {"server_type": "bm", "labels": {"kube_tag": "v1.30.4"}},
        problems,
    )
    assert problems == [
        "gpulab:docker_volume_size is only allowed with gpulab:server_type vm "
        "(bare-metal nodes have no Cinder docker volume)"
    ]
    problems = []
    values: dict[str, Any] = {"mode": "vgpu", "gpus_per_vm": 1}
    topology.get("vsphere-gpu").check_config({"gpus_per_vm": 2}, values, problems)
    assert "gpulab:gpus_per_vm is only used with gpulab:mode passthrough, not vgpu" in problems
    assert "gpulab:vgpu_profile is required for vsphere-gpu mode vgpu: vGPU profile" in problems
    assert "gpus_per_vm" not in values
    for name in ("ironic-bm", "nova-pci", "magnum-k8s"):  # the OpenStack parts' own rule
        problems = []
        values = {"admin_cidr": "0.0.0.0/0", "external_network": "public"}
        topology.get(name).check_config({}, values, problems)
        assert problems == [
            "gpulab:admin_cidr 0.0.0.0/0 opens SSH to the whole internet: name your network, "
            "or set gpulab:allow_world: true to mean it"
        ]


# --------------------------------------------------------------- nothing else branches

# "local" is also a gpu_path and a launch mode: only `topology == "local"` counts for it.
TOPOLOGY_NAMES = "|".join(re.escape(n) for n in NAMES if n != "local")
BRANCH = re.compile(
    r"""topology\s*(==|!=)\s*["']|topology\s+(not\s+)?in\s+[(\[{"']|\bin OPENSTACK\b"""
    rf"""|["']({TOPOLOGY_NAMES})["']\s*(==|!=|\bin\b)|(==|!=)\s*["']({TOPOLOGY_NAMES})["']"""
    r"""|DEFAULT_ENVS"""
)
# Files the topology packages do not reach yet, each with the reason (the list only shrinks).
NOT_YET: dict[str, str] = {}


def branching_lines(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for top in ("infra", "workloads", "report"):
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith("infra/topologies/"):
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                if BRANCH.search(code):
                    found.setdefault(rel, []).append(f"{n}: {line.strip()}")
    return found


def named_topologies(root: Path, names: tuple[str, ...]) -> dict[str, list[int]]:
    """Lines of product code outside infra/topologies/ with a string that is a topology's name
    (or ``<name>/<arm>``): a list of names kept by hand instead of read from the registry."""
    found: dict[str, list[int]] = {}
    for top in ("infra", "workloads", "report"):
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith("infra/topologies/"):
                continue
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                text = node.value if isinstance(node, ast.Constant) else None
                if isinstance(text, str) and text.split("/")[0] in names and "\n" not in text:
                    found.setdefault(rel, []).append(node.lineno)
    return {rel: sorted(lines) for rel, lines in found.items()}


# Where a topology's name still stands outside its package, and why (the list only shrinks).
NAMED_HERE = {
    # the report's default baseline: bare metal first (report/ cannot import the registry)
    "report/mapping.py": "DEFAULT_BASELINES",
}


def test_topology_names_come_from_the_registry() -> None:
    names = tuple(n for n in NAMES if n != "local")  # local is a gpu_path and a mode too
    found = named_topologies(REPO, names)
    assert sorted(found) == sorted(NAMED_HERE), found


def test_the_name_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "infra" / "topologies" / "x").mkdir(parents=True)
    (tmp_path / "workloads").mkdir()
    (tmp_path / "report").mkdir()
    (tmp_path / "infra" / "a.py").write_text('KINDS = ("nova-pci", "other")\n"""nova-pci"""\n')
    (tmp_path / "infra" / "topologies" / "x" / "b.py").write_text('N = "nova-pci"\n')
    (tmp_path / "report" / "c.py").write_text('BASE = "nova-pci/native"\nX = "a nova-pci"\n')
    assert named_topologies(tmp_path, ("nova-pci",)) == {
        "infra/a.py": [1, 2],
        "report/c.py": [1],
    }


def test_nothing_outside_the_specs_branches_on_a_topology_name() -> None:
    found = branching_lines(REPO)
    unexpected = {k: v for k, v in found.items() if k not in NOT_YET}
    assert unexpected == {}, unexpected
    stale = sorted(k for k in NOT_YET if k not in found)
    assert stale == [], f"no longer branching, drop from NOT_YET: {stale}"


def test_the_branch_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "infra").mkdir()
    (tmp_path / "workloads").mkdir()
    (tmp_path / "infra" / "x.py").write_text('if cfg.topology == "nova-pci":\n    pass\n')
    (tmp_path / "workloads" / "y.py").write_text(
        'ok = "local"\nif "ironic-bm" in names: pass\nif topology in ("local", "x"): pass\n'
        "if topology in TOPOLOGIES: pass\n"  # membership in the key table: not a branch
    )
    assert branching_lines(tmp_path) == {
        "infra/x.py": ['1: if cfg.topology == "nova-pci":'],
        "workloads/y.py": [
            '2: if "ironic-bm" in names: pass',
            '3: if topology in ("local", "x"): pass',
        ],
    }


def test_a_container_on_remote_gpus_is_a_container_in_a_vm() -> None:
    got = facts(topology.get("vsphere-gpu"), "bitfusion", "singularity")
    assert got["setting"] == "remote-gpu" and got["execution_env"] == "apptainer"
    assert got["virtualization"] == "container-in-vm" and got["sharing"] == "bitfusion"


def test_the_lab_and_the_runner_state_a_run_alike() -> None:
    """The runner's setting (workloads.setting, which the specs import: no copy to hold in
    step) and the lab's facts of every host x environment are the same fields."""
    from workloads import setting as runner

    for spec in topology.registry().values():
        for gpu_path, host in spec.settings.items():
            assert runner.host_setting(gpu_path) == host, (spec.name, gpu_path)
            for env in execenv.accepted():
                lab = facts(spec, gpu_path, env)
                rec = runner.make_setting(gpu_path, env).fields()
                assert rec == {
                    "gpu_path": gpu_path,
                    "exec_env": lab["execution_env"],
                    "virtualization": lab["virtualization"],
                    "sharing": lab["sharing"],
                }, (spec.name, gpu_path, env)


def test_the_reports_settings_are_the_specs_virtualizations() -> None:
    """The report groups by the recorded virtualization; every one the specs can state has a
    column, and nothing else does."""
    from report.mapping import SETTING_OF_VIRTUALIZATION

    stated = {
        facts(spec, path, env)["virtualization"]
        for spec in topology.registry().values()
        for path in spec.settings
        for env in execenv.names()
    }
    assert set(SETTING_OF_VIRTUALIZATION) == stated
