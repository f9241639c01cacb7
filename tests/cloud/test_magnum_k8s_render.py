"""magnum-k8s GPU enablement as a user's site run does it, rendered on this machine: the
site.yml play that runs k8s_gpu on the Kubernetes API host (k8s_control: the controller,
connection local, the lab's only inventory host), the RuntimeClass and Helm values it writes
with k8s_gpu_apply false (no cluster here) in both GPU stack modes, and the workload Job
manifest of the workload_run role with runtimeClassName, nvidia.com/gpu and the pull secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.ansible.inventory import build_inventory
from infra.hosts import Host
from infra.topologies.magnum_k8s.build import CONTROLLER_VARS
from tests.parts import REPO

PLAYBOOKS = REPO / "playbooks"


def site_play(role: str) -> dict[str, Any]:
    plays = yaml.safe_load((PLAYBOOKS / "site.yml").read_text())
    [play] = [p for p in plays if any(r.get("role") == role for r in p.get("roles", []))]
    return dict(play)


def playbook(tmp: Path, plays: list[dict[str, Any]], inventory: dict[str, Any], *extra: str) -> str:
    (tmp / "play.yml").write_text(yaml.safe_dump(plays))
    (tmp / "inventory.json").write_text(json.dumps(inventory))
    env = {
        **os.environ,
        "ANSIBLE_ROLES_PATH": str(PLAYBOOKS / "roles"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(tmp / "kubeconfig"),
    }
    p = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(tmp / "inventory.json"),
            str(tmp / "play.yml"),
            *extra,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def magnum_inventory() -> dict[str, Any]:
    """The inventory a magnum-k8s lab gives: the API host on the controller, nothing else
    (the cluster's nodes are never logged in to)."""
    api = Host(
        "k8s-lab-k8s-api",
        "198.51.100.200",
        ssh_user="ubuntu",
        groups=["k8s_control"],
        gpu_path="none",
        vars={"lab": "k8s-lab", "k8s_gpu_cluster": "k8s-lab-k8s", **CONTROLLER_VARS},
    )
    return build_inventory([api])


@pytest.mark.slow  # two ansible-playbook runs, about 40 s on 2 cores
def test_site_runs_k8s_gpu_on_the_api_host_and_writes_runtimeclass_and_values(
    tmp_path: Path,
) -> None:
    play = site_play("k8s_gpu")
    assert (play["hosts"], play["connection"], play["become"]) == ("k8s_control", "local", False)
    out = tmp_path / "k8s_gpu"
    for mode in ("operator", "device-plugin"):
        playbook(
            tmp_path,
            [play],
            magnum_inventory(),
            "-e",
            f"k8s_gpu_apply=false k8s_gpu_values_dir={out} k8s_gpu_mode={mode}",
        )
    rc = yaml.safe_load((out / "runtimeclass.yaml").read_text())
    assert rc == {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "nvidia", "labels": {"app.kubernetes.io/managed-by": "gpulab"}},
        "handler": "nvidia",
    }
    operator = yaml.safe_load((out / "operator-values.yaml").read_text())
    # operator mode: the nodes' image has no driver (the Cluster API driver's images do not):
    # the operator runs the driver and the container toolkit in containers
    assert operator["driver"]["enabled"] is True and operator["toolkit"]["enabled"] is True
    assert operator["operator"]["runtimeClass"] == "nvidia"
    assert "v25.10.1" in (out / "operator-values.yaml").read_text()
    # device-plugin mode: the image has driver and toolkit; pods name the RuntimeClass
    plugin = yaml.safe_load((out / "device-plugin-values.yaml").read_text())
    assert plugin["runtimeClassName"] == "nvidia"
    assert oct((out / "runtimeclass.yaml").stat().st_mode & 0o777) == "0o600"
    print((out / "runtimeclass.yaml").read_text())


def test_k8s_gpu_play_is_a_no_op_on_a_lab_without_a_kubernetes_api_host(tmp_path: Path) -> None:
    out = tmp_path / "k8s_gpu"
    inv = build_inventory([Host("gpu-0", "10.0.0.5", gpu_path="whole-machine", groups=["x"])])
    stdout = playbook(
        tmp_path, [site_play("k8s_gpu")], inv, "-e", f"k8s_gpu_apply=false k8s_gpu_values_dir={out}"
    )
    # the site run prepares what a lab has: a lab without k8s_control skips this play
    assert not out.exists() and "skipping: no hosts matched" in stdout


@pytest.mark.integration
def test_workload_job_manifest_has_runtime_class_and_gpu_limit(tmp_path: Path) -> None:
    dest = tmp_path / "job.yaml"
    job_vars = {
        "workload_run_job_name": "gpulab-k8s-run-1",
        "workload_run_k8s_namespace": "default",
        "workload_run_id_effective": "run-1",
        "workload_run_timeout_s": 7200,
        "workload_run_k8s_image": "registry.example.org/gpulab/workloads:1.0",
        "workload_run_environment": {"GPULAB_ARM": "k8s"},
        "workload_run_inner": ["python", "-m", "workloads", "bench", "--suite", "smoke"],
        "workload_run_begin_marker": "--- begin ---",
        "workload_run_end_marker": "--- end ---",
        "workload_run_out_file": "/tmp/out.jsonl",
        "workload_run_k8s_gpus": 1,
        "workload_run_k8s_pull_secret_name": "gpulab-registry",
    }
    play = {
        "name": "Render the Job",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "vars": job_vars,
        "tasks": [
            {
                "name": "Template",
                "ansible.builtin.template": {
                    "src": str(PLAYBOOKS / "roles/workload_run/templates/job.yaml.j2"),
                    "dest": str(dest),
                    "mode": "0644",
                },
            }
        ],
    }
    playbook(tmp_path, [play], magnum_inventory())
    print(dest.read_text())
    job = yaml.safe_load(dest.read_text())
    assert job["kind"] == "Job" and job["apiVersion"] == "batch/v1"
    pod = job["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "nvidia"
    [c] = pod["containers"]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert c["image"] == "registry.example.org/gpulab/workloads:1.0"
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["GPULAB_EXEC_ENV"] == "k8s" and env["GPULAB_GPU_PATH"] == "container-vm"
    assert env["GPULAB_EXPECT_DEVICE"] == "gpu"
    assert pod["imagePullSecrets"] == [{"name": "gpulab-registry"}]
