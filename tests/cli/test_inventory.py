"""`gpulab inventory STACK --out FILE` writes the inventory the lab's Ansible runs use, read by
the real `ansible-inventory`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from infra.ansible.inventory import build_inventory
from infra.hosts import Host

ANSIBLE_INVENTORY = str(Path(sys.executable).parent / "ansible-inventory")


def _outputs(tmp_path: Path) -> Path:
    hosts = [
        Host("bm-0", "10.0.0.5", ssh_user="ubuntu", gpu_path="whole-machine", groups=["gpu"]),
        Host("api", "10.0.0.9", ssh_user="ubuntu", gpu_path="none", groups=["k8s_control"]),
    ]
    path = tmp_path / "outputs.json"  # the shape of `gpulab outputs --json`
    path.write_text(json.dumps({"topology": "local", "hosts": [h.to_output() for h in hosts]}))
    return path


def test_inventory_file_is_what_ansible_reads(gpulab, tmp_path: Path) -> None:
    out = tmp_path / "inv" / "lab.yml"
    r = gpulab("inventory", "local", "--outputs", str(_outputs(tmp_path)), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and "wrote" in r.stderr
    listed = subprocess.run([ANSIBLE_INVENTORY, "-i", str(out), "--list"], capture_output=True,
                            text=True, timeout=120, check=True)  # fmt: skip
    inv = json.loads(listed.stdout)
    assert sorted(inv["gpu_path_whole_machine"]["hosts"]) == ["bm-0"]
    assert inv["k8s_control"]["hosts"] == ["api"] and inv["gpu_path_none"]["hosts"] == ["api"]
    bm = inv["_meta"]["hostvars"]["bm-0"]
    assert bm["ansible_host"] == "10.0.0.5" and bm["ansible_user"] == "ubuntu"
    assert bm["gpulab_gpu_path"] == "whole-machine"
    assert bm["gpulab_exec_envs"] == ["native"] and bm["gpulab_topology"] == "local"
    # the same inventory the lab's runs build (infra.ansible.inventory), plus the site vars
    data = yaml.safe_load(out.read_text())
    built = build_inventory([Host.from_output(h) for h in json.loads(
        (tmp_path / "outputs.json").read_text())["hosts"]])  # fmt: skip
    assert data["all"]["hosts"] == built["all"]["hosts"]


def test_inventory_to_stdout_and_bad_outputs(gpulab, tmp_path: Path) -> None:
    r = gpulab("inventory", "-s", "local", "--outputs", str(_outputs(tmp_path)))
    assert r.returncode == 0 and yaml.safe_load(r.stdout)["all"]["hosts"]["bm-0"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"topology": "local"}')
    r = gpulab("inventory", "local", "--outputs", str(bad))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "has no 'hosts' list" in r.stderr
