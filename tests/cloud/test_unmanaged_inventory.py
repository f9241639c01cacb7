"""Unmanaged hosts stay out of every play: the Bitfusion server of a vsphere-gpu bitfusion lab
(an appliance gpulab does not build or configure) is no inventory host, as ansible-inventory
and ``ansible-playbook site.yml --list-hosts`` (what every site play would target) show."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from infra.ansible.inventory import build_inventory
from infra.hosts import Host
from tests.parts import REPO

BIN = Path(sys.executable).parent


def bitfusion_hosts() -> list[Host]:
    """The hosts a bitfusion lab gives (infra/topologies/vsphere_gpu.py; the mock test
    test_vsphere_bitfusion_mock_clients_and_server_record holds the builder to this)."""
    clients = [
        Host(
            f"vs-lab-gpu-{i}",
            f"10.0.0.{10 + i}",
            ssh_user="ubuntu",
            groups=["gpu_hosts", "vsphere_bitfusion"],
            gpu_path="bitfusion",
            vars={"lab": "vs-lab", "bitfusion_server": "10.0.0.50"},
        )
        for i in range(2)
    ]
    server = Host(
        "vs-lab-bitfusion-server",
        "10.0.0.50",
        ssh_user="ubuntu",
        groups=["bitfusion_server"],
        gpu_path="none",
        vars={"lab": "vs-lab", "managed_by_gpulab": False},
    )
    return [*clients, server]


def run(*argv: str, inventory: Path) -> str:
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    p = subprocess.run(
        [str(BIN / argv[0]), "-i", str(inventory), *argv[1:]],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_bitfusion_server_is_in_no_group_and_no_site_play(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(build_inventory(bitfusion_hosts())))
    listed = json.loads(run("ansible-inventory", "--list", inventory=inv))
    every_host = set(listed["_meta"]["hostvars"])
    assert every_host == {"vs-lab-gpu-0", "vs-lab-gpu-1"}
    for group, body in listed.items():
        assert "vs-lab-bitfusion-server" not in (body.get("hosts") or []), group
    assert "bitfusion_server" not in listed  # its group is not made either
    # kept for reference, with its address, in all.vars
    ref = listed["_meta"]["hostvars"]["vs-lab-gpu-0"]["gpulab_unmanaged_hosts"]
    assert ref["vs-lab-bitfusion-server"]["address"] == "10.0.0.50"
    assert ref["vs-lab-bitfusion-server"]["groups"] == ["bitfusion_server"]
    # what site.yml's plays would target: the clients only, never the server
    out = run("ansible-playbook", "playbooks/site.yml", "--list-hosts", inventory=inv)
    print(out)
    assert "vs-lab-gpu-0" in out and "vs-lab-bitfusion-server" not in out
    graph = run("ansible-inventory", "--graph", inventory=inv)
    assert "vs-lab-bitfusion-server" not in graph


def test_managed_hosts_keep_their_groups(tmp_path: Path) -> None:
    """The filter drops only managed_by_gpulab: false; a host with it true stays."""
    hosts = bitfusion_hosts()
    hosts[-1].vars["managed_by_gpulab"] = True
    inv = build_inventory(hosts)
    assert "vs-lab-bitfusion-server" in inv["all"]["hosts"]
    assert "vs-lab-bitfusion-server" in inv["all"]["children"]["bitfusion_server"]["hosts"]
    assert "gpulab_unmanaged_hosts" not in inv["all"].get("vars", {})
