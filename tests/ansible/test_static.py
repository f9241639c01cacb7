"""Syntax check and `ansible-lint --profile production` of every playbook and role."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infra.ansible import build_inventory
from infra.hosts import Host
from tests.ansible.helpers import PLAYBOOKS as TEST_PLAYBOOKS
from tests.parts import REPO

BIN = Path(sys.executable).parent
PLAYBOOKS = sorted((REPO / "playbooks").glob("*.yml"))
ENV = {
    **os.environ,
    "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
    "ANSIBLE_NOCOLOR": "1",
}


def test_the_playbooks_the_program_runs_are_plays_of_existing_roles() -> None:
    """site.yml (AnsibleRun), workloads.yml (WorkloadRun), cleanup.yml (CleanupRun) and
    validate.yml resolve to plays that target hosts and apply only roles that exist; the
    workload run applies its role."""
    from infra.ansible.runner import resolve_playbook
    from infra.dynamic.cleanup_run import PLAYBOOK as CLEANUP
    from infra.dynamic.workload_run import PLAYBOOK

    assert [p.name for p in PLAYBOOKS] == ["cleanup.yml", "site.yml", "validate.yml", "wait.yml",
                                           "workloads.yml"]  # fmt: skip
    roles_dir = REPO / "playbooks" / "roles"
    applied: dict[str, set[str]] = {}
    for name in ("site.yml", PLAYBOOK, "validate.yml", CLEANUP):
        plays = yaml.safe_load(resolve_playbook(name).read_text())
        assert isinstance(plays, list) and plays, name
        for play in plays:
            if "ansible.builtin.import_playbook" in play:  # site.yml's first play: wait.yml
                assert (REPO / "playbooks" / play["ansible.builtin.import_playbook"]).is_file()
                continue
            assert play.get("hosts") and play.get("name"), (name, play)
            assert play.get("roles") or play.get("tasks"), (name, play.get("name"))
            for entry in play.get("roles") or []:
                role = entry["role"] if isinstance(entry, dict) else entry
                applied.setdefault(name, set()).add(role)
                assert (roles_dir / role / "tasks" / "main.yml").is_file(), (name, role)
    assert {"gpu_facts", "nvidia_driver", "cuda_toolkit"} <= applied["site.yml"]
    assert applied[PLAYBOOK] == {"workload_run"}


@pytest.mark.parametrize(
    "playbook",
    PLAYBOOKS + sorted(TEST_PLAYBOOKS.glob("*.yml")),
    ids=lambda p: p.name,
)
def test_syntax_check(playbook: Path) -> None:
    r = subprocess.run(
        [str(BIN / "ansible-playbook"), "--syntax-check", "-i", "localhost,",
         "-e", "one_role=gpu_facts", str(playbook)],
        capture_output=True, text=True, env=ENV, cwd=REPO, timeout=120, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr


# ansible-lint --profile production runs once, in scripts/lint.sh, before the tests (CI and
# scripts/test.sh stop on a failure there); a second run here cost half a minute of every suite.


def _plays_to_hosts(playbook: str, inventory: Path, *extra: str) -> dict[str, set[str]]:
    r = subprocess.run(
        [str(BIN / "ansible-playbook"), "--list-hosts", "-i", str(inventory), *extra,
         str(REPO / "playbooks" / playbook)],
        capture_output=True, text=True, env=ENV, cwd=REPO, timeout=120, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    plays: dict[str, set[str]] = {}
    current = None
    for line in r.stdout.splitlines():
        m = re.match(r"\s*play #\d+ \([^)]*\): (.*?)\tTAGS", line)
        if m:
            current = m.group(1)
            plays[current] = set()
        elif current and re.match(r"^\s{6}\S+$", line):
            plays[current].add(line.strip())
    return plays


@pytest.mark.integration
def test_playbooks_pick_hosts_by_gpu_path_group(tmp_path: Path) -> None:
    """The contract with the topologies: the inventory's gpu_path_* groups (and k8s_control)
    decide which plays reach which host."""
    hosts = [
        Host("bm", "10.0.0.1", gpu_path="whole-machine"),
        Host("pci", "10.0.0.2", gpu_path="pci-passthrough"),
        Host("cvm", "10.0.0.6", gpu_path="container-vm"),
        Host("vg", "10.0.0.3", gpu_path="vgpu"),
        Host("bf", "10.0.0.4", gpu_path="bitfusion"),
        Host("api", "10.0.0.5", gpu_path="none", groups=["k8s_control"]),
        Host("me", "127.0.0.1"),
    ]
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(build_inventory(hosts)))
    site = _plays_to_hosts("site.yml", inv)
    assert site == {
        "Wait for the hosts": {"bm", "pci", "cvm", "vg", "bf", "api", "me"},
        "Discover GPUs": {"bm", "pci", "cvm", "vg", "bf", "api", "me"},
        "NVIDIA driver and CUDA on hosts that own a GPU": {"bm", "pci", "cvm"},
        "NVIDIA vGPU guest driver, licensing and CUDA": {"vg"},
        "Bitfusion clients (remote GPUs; CUDA libraries are local)": {"bf"},
        "Container runtimes and the workload environment": {"bm", "pci", "cvm", "vg", "bf", "me"},
        # the API host, which is the controller (local connection, the lab's kubeconfig)
        "Kubernetes GPU support": {"api"},
        "Knowledge-worker load on CPU-only VMs": set(),
    }
    assert _plays_to_hosts("workloads.yml", inv) == {
        "Run the workloads on the hosts": {"bm", "pci", "cvm", "vg", "bf", "me"}
    }
    assert _plays_to_hosts("workloads.yml", inv, "-e", "workload_run_exec_env=k8s") == {
        "Run the workloads on the hosts": {"api"}
    }
    validate = _plays_to_hosts("validate.yml", inv)
    assert validate["Validate the GPU hosts"] == {"bm", "pci", "cvm", "vg"}
    assert validate["Validate the Bitfusion clients"] == {"bf"}
    assert validate["Validate Kubernetes GPU scheduling"] == {"api"}


def _tasks(node: object) -> list[dict]:  # type: ignore[type-arg]
    """Every task mapping under a task list (blocks included)."""
    out: list[dict] = []  # type: ignore[type-arg]
    if isinstance(node, list):
        for item in node:
            out.extend(_tasks(item))
    elif isinstance(node, dict):
        out.append(node)
        for key in ("block", "rescue", "always"):
            out.extend(_tasks(node.get(key)))
    return out


def test_every_play_becomes_root_and_controller_tasks_do_not() -> None:
    """Hosts log in as the image's sudo user: every play of the three playbooks that reaches
    lab hosts says become: true; a play on the controller (connection local: the Kubernetes
    GPU play on the API host, k8s_control) and every task delegated to it say become: false.
    The workload play takes its become from the ExecEnv table (root on a GPU host, none for a
    Job created from the controller: tests/specs/test_execenv_playbooks.py renders it)."""
    import yaml

    controller_plays = []
    for pb in PLAYBOOKS:
        for play in yaml.safe_load(pb.read_text()):
            if "ansible.builtin.import_playbook" in play:
                continue  # its plays are checked in their own file
            if pb.name == "wait.yml":
                # waiting for the login needs no root: cloud-init may not have written the
                # sudo rule yet
                assert play.get("become") is False, play["name"]
            elif play.get("connection") == "local":
                controller_plays.append(play["name"])
                assert play.get("become") is False, f"{pb.name}: play {play['name']!r}"
            elif pb.name == "workloads.yml":
                assert play.get("become") == (
                    "{{ gpulab_exec_env_become[workload_run_exec_env | default('native')] }}"
                ), play["name"]
            else:
                assert play.get("become") is True, f"{pb.name}: play {play['name']!r}"
    assert controller_plays == ["Kubernetes GPU support"]
    delegated = []
    for f in sorted((REPO / "playbooks" / "roles").glob("*/tasks/*.yml")):
        for task in _tasks(yaml.safe_load(f.read_text())):
            if task.get("delegate_to") in ("localhost", "127.0.0.1"):
                delegated.append(f"{f.parent.parent.name}: {task.get('name')}")
                assert task.get("become") is False, f"{f}: {task.get('name')!r}"
    assert delegated  # workload_env packs workloads/ on the controller
