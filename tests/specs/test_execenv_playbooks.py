"""workloads.yml and validate.yml take the hosts and the per-runtime checks from the ExecEnv
table (runs_on, validate_argv, generated into playbooks/vars/exec_envs.yml): no play names an
execution environment."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from infra.ansible.inventory import build_inventory
from infra.hosts import Host
from infra.specs import ansible_vars
from workloads import execenv

REPO = Path(__file__).resolve().parents[2]
PLAYBOOKS = REPO / "playbooks"
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")


def test_no_play_branches_on_an_execution_environment_name() -> None:
    names = "|".join(execenv.accepted())
    for name in ("workloads.yml", "validate.yml"):
        text = (PLAYBOOKS / name).read_text()
        code = "\n".join(ln.split("#")[0] for ln in text.splitlines())  # comments may say them
        code = re.sub(r"default\([^)]*\)", "", code)  # a default is not a branch
        assert not re.search(rf"['\"]({names})['\"]", code), name


def _hosts(tmp_path: Path, *extra: str) -> set[str]:
    hosts = [
        Host("bm", "10.0.0.1", gpu_path="whole-machine"),
        Host("vg", "10.0.0.3", gpu_path="vgpu"),
        Host("api", "10.0.0.5", gpu_path="none", groups=["k8s_control"]),
    ]
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(build_inventory(hosts)))
    r = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(inv), "--list-hosts", "workloads.yml", *extra],
        cwd=PLAYBOOKS, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return {ln.strip() for ln in r.stdout.split("hosts (")[1].splitlines()[1:] if ln.strip()}


def test_workloads_yml_runs_where_the_table_says(tmp_path: Path) -> None:
    assert _hosts(tmp_path) == {"bm", "vg"}  # native: every GPU host
    assert _hosts(tmp_path, "-e", "workload_run_exec_env=k8s") == {"api"}
    # a new entry's runs_on, handed over as the generated map would hold it
    made_up = {"gpulab_exec_env_hosts": {"podman": "gpu_path_vgpu"},
               "workload_run_exec_env": "podman"}  # fmt: skip
    assert _hosts(tmp_path, "-e", json.dumps(made_up)) == {"vg"}


def test_validate_runs_each_environments_argv() -> None:
    """The loop of validate.yml over the generated validate argv, rendered as Ansible does."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    play = yaml.safe_load((PLAYBOOKS / "validate.yml").read_text())[0]
    task = next(t for t in play["tasks"] if "loop" in t)

    def trusted(value: Any) -> Any:  # as Ansible trusts what vars_files hold
        if isinstance(value, str):
            return trust_as_template(value)
        if isinstance(value, list):
            return [trusted(v) for v in value]
        if isinstance(value, dict):
            return {k: trusted(v) for k, v in value.items()}
        return value

    variables = {
        **trusted(ansible_vars.site_vars()),
        "validate_cuda_image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
        "validate_sif": "/opt/gpulab/workloads.sif",
        "validate_exec_envs": ["native", "docker", "apptainer", "k8s"],
    }
    templar = Templar(loader=DataLoader(), variables=variables)
    envs = templar.template(trust_as_template(task["loop"]))
    assert envs == ["docker", "apptainer"]  # those with a validate_argv, in the host's order
    argvs = [
        Templar(loader=DataLoader(), variables={**variables, "validate_env": e}).template(
            trust_as_template(task["ansible.builtin.command"]["argv"])
        )
        for e in envs
    ]
    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
    assert argvs[0] == ["docker", "run", "--rm", "--gpus=all", image, "nvidia-smi", "-L"]
    assert argvs[1] == ["apptainer", "exec", "--nv", "/opt/gpulab/workloads.sif", "nvidia-smi",
                        "-L"]  # fmt: skip
    # the docker check's GPU flag is the launch's (one spelling of --gpus)
    assert "--gpus=all" in execenv.render_launch("docker", inner=[], gpus="all")


def test_workloads_yml_becomes_root_only_where_the_launch_needs_it() -> None:
    """workloads.yml's ``become``, rendered as Ansible renders a play keyword from the generated
    vars/exec_envs.yml: root for a launch on a GPU host (native, docker, apptainer and its
    alias, bitfusion), none for the k8s Job created from the controller as its user. The real
    run as a non-root user is tests/ansible/test_workload_run_rootless.py."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    play = yaml.safe_load((PLAYBOOKS / "workloads.yml").read_text())[0]
    generated = yaml.safe_load((PLAYBOOKS / "vars" / "exec_envs.yml").read_text())
    assert generated["gpulab_exec_env_become"] == ansible_vars.site_vars()["gpulab_exec_env_become"]

    def become(**extra: str) -> Any:
        if not isinstance(play["become"], str):  # a literal yes/no: the same for every env
            return play["become"]
        templar = Templar(loader=DataLoader(), variables={**generated, **extra})
        return templar.template(trust_as_template(play["become"]))

    want = {"native": True, "docker": True, "apptainer": True, "singularity": True,
            "bitfusion": True, "k8s": False}  # fmt: skip
    assert set(want) == set(execenv.accepted())
    for env, root in want.items():
        assert become(workload_run_exec_env=env) is root, env
    assert become() is True  # no workload_run_exec_env: native
    # the table is the one place: an entry's launch_needs_root is what the play gets
    assert {n: execenv.get(n).launch_needs_root for n in execenv.accepted()} == want


def test_validate_reads_the_labs_kubeconfig_on_the_controller() -> None:
    """validate.yml's Kubernetes play uses the kubeconfig the lab hands the controller (magnum-k8s
    sets workload_run_k8s_kubeconfig from $KUBECONFIG); admin.conf only on a kubeadm host."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    play = next(
        p
        for p in yaml.safe_load((PLAYBOOKS / "validate.yml").read_text())
        if p["hosts"] == "k8s_control"
    )
    expr = trust_as_template(play["vars"]["validate_kubeconfig"])

    def render(**variables: str) -> Any:
        return Templar(loader=DataLoader(), variables=variables).template(expr)

    assert render(workload_run_k8s_kubeconfig="/home/me/.kube/lab") == "/home/me/.kube/lab"
    assert render() == "/etc/kubernetes/admin.conf"
    assert render(workload_run_k8s_kubeconfig="") == "/etc/kubernetes/admin.conf"
