"""gpu_facts on this machine through a real ansible-playbook run (local connection), reading a
sysfs tree and a /proc/driver/nvidia/version file built in a temporary directory from
tests/data/gpu_facts (the GPU values copied from a real NVIDIA H200 host): what is mocked is the
hardware only, through the role's gpu_facts_sysfs_root / gpu_facts_proc_root, since no NVIDIA
device exists here. PATH is reduced to a directory of chosen programs so that lspci is absent
(as on the air-gapped H200 image) or is a script printing what lspci prints for that tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.parts import REPO

DATA = REPO / "tests" / "data" / "gpu_facts"
ROLES = REPO / "playbooks" / "roles"

pytestmark = pytest.mark.slow  # one ansible-playbook run each, about 30 s on 2 cores

H200 = {"pci": "0000:00:06.0", "class": "0302", "device_id": "2335", "numa_node": None}
# What `lspci -Dnn -d 10de:` prints for sysfs_h200_vm.yaml (pci.ids names 10de:2335 so).
H200_LSPCI = (
    "0000:00:06.0 3D controller [0302]: NVIDIA Corporation GH100 [H200 SXM 141GB] [10de:2335]"
    " (rev a1)\n"
    "0000:00:06.1 Audio device [0403]: NVIDIA Corporation GA104 High Definition Audio"
    " Controller [10de:228b] (rev a1)\n"
)
FACTS = [
    "gpu_facts_gpus", "gpu_facts_gpu_count", "gpu_facts_has_gpu", "gpu_facts_pci_source",
    "gpu_facts_lspci_ok", "gpu_facts_driver_loaded", "gpu_facts_driver_version",
    "gpu_facts_driver_flavor", "gpu_facts_is_dgx",
]  # fmt: skip


def sysfs_tree(root: Path, fixture: str) -> Path:
    """Write the fixture's PCI functions as sysfs has them: a directory per function (inside its
    bridge's for functions behind one) with vendor/device/class/numa_node plus files and links
    the role must pass over, and bus/pci/devices/<address> links to those directories."""
    spec = yaml.safe_load((DATA / fixture).read_text())
    links = root / "bus" / "pci" / "devices"
    links.mkdir(parents=True)
    for dev in spec["devices"]:
        d = root / dev["path"]
        d.mkdir(parents=True, exist_ok=True)
        for attr in ("vendor", "device", "class", "numa_node"):
            if attr in dev:
                (d / attr).write_text(dev[attr] + "\n")
        (d / "subsystem_vendor").write_text("0x10de\n")  # not the function's vendor
        (d / "power").mkdir()
        (d / "power" / "control").write_text("on\n")
        # subsystem -> bus/pci, a link back up the tree as in sysfs
        (d / "subsystem").symlink_to(os.path.relpath(root / "bus" / "pci", d))
        (links / d.name).symlink_to(os.path.relpath(d, links))
    return root


def bin_dir(tmp: Path, lspci: str | None) -> Path:
    """A PATH directory: links to every program on this PATH except lspci, plus, when given,
    an lspci script printing ``lspci``."""
    b = tmp / "bin"
    b.mkdir()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or not Path(d).is_dir():
            continue
        for prog in Path(d).iterdir():
            target = b / prog.name
            if prog.name != "lspci" and not target.exists() and os.access(prog, os.X_OK):
                target.symlink_to(prog)
    assert (b / "grep").exists() and not (b / "lspci").exists()
    if lspci is not None:
        script = b / "lspci"
        body = "".join(f"printf '%s\\n' '{line}'\n" for line in lspci.splitlines())
        script.write_text(
            "#!/bin/sh\n"
            '[ "$*" = "-Dnn -d 10de:" ] || { echo "lspci: unexpected arguments $*" >&2; exit 2; }\n'
            + body
        )
        script.chmod(0o755)
    return b


def run_role(tmp: Path, role_vars: dict[str, Any], path: Path) -> tuple[dict[str, Any], str]:
    """Run gpu_facts on localhost; the facts it set and the ansible-playbook output."""
    out = tmp / "facts.json"
    play = [{
        "name": "gpu_facts on a fake sysfs tree", "hosts": "localhost", "connection": "local",
        "become": False, "gather_facts": False,
        "vars": {"ansible_python_interpreter": sys.executable},
        "roles": [{"role": "gpu_facts", "gpu_facts_fail_on_unsupported": False, **role_vars}],
        "post_tasks": [{
            "name": "Write the facts",
            "ansible.builtin.copy": {
                "dest": str(out), "mode": "0600",
                "content": "{{ dict(names | zip(names | map('extract', hostvars[inventory_hostname]"
                           "))) | to_json }}",
            },
            "vars": {"names": FACTS},
        }],
    }]  # fmt: skip
    (tmp / "play.yml").write_text(yaml.safe_dump(play))
    r = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), str(tmp / "play.yml")],
        capture_output=True, text=True, timeout=300, cwd=tmp,  # implicit localhost
        env=dict(os.environ, ANSIBLE_ROLES_PATH=str(ROLES), ANSIBLE_NOCOLOR="1",
                 ANSIBLE_LOCALHOST_WARNING="false", PATH=str(path)),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    return json.loads(out.read_text()), r.stdout


def task_block(stdout: str, task: str) -> str:
    """The output lines of one task (from its TASK header to the next header)."""
    head = f"TASK [gpu_facts : {task}]"
    assert head in stdout, stdout
    return stdout.split(head, 1)[1].split("TASK [", 1)[0]


@pytest.fixture()
def proc_open(tmp_path: Path) -> Path:
    p = tmp_path / "proc"
    (p / "driver" / "nvidia").mkdir(parents=True)
    shutil.copy(DATA / "proc_nvidia_version_open.txt", p / "driver" / "nvidia" / "version")
    return p


def test_h200_seen_from_sysfs_without_lspci(tmp_path: Path, proc_open: Path) -> None:
    """The air-gapped H200 image: no lspci on PATH (and none installed: the role's defaults),
    the GPU comes from sysfs (numa_node -1 -> None), the open kernel module is recognised; the
    audio function, the non-NVIDIA VGA controller and the virtio devices are not GPUs."""
    sysfs = sysfs_tree(tmp_path / "sys", "sysfs_h200_vm.yaml")
    facts, stdout = run_role(
        tmp_path,
        {"gpu_facts_sysfs_root": str(sysfs), "gpu_facts_proc_root": str(proc_open)},
        bin_dir(tmp_path, lspci=None),
    )
    assert facts["gpu_facts_gpus"] == [{**H200, "name": ""}]
    assert facts["gpu_facts_gpu_count"] == 1 and facts["gpu_facts_has_gpu"] is True
    assert facts["gpu_facts_pci_source"] == "sysfs"
    assert facts["gpu_facts_lspci_ok"] is False  # lspci was asked and is missing
    assert facts["gpu_facts_driver_loaded"] is True
    assert facts["gpu_facts_driver_version"] == "580.159.04"
    assert facts["gpu_facts_driver_flavor"] == "open"
    assert "skipping: [localhost]" in task_block(
        stdout, "Install pciutils (for the GPU names only)"
    )
    assert "ok: [localhost]" in task_block(stdout, "Ask lspci for the GPUs' names")


def test_h200_named_by_lspci_when_present(tmp_path: Path, proc_open: Path) -> None:
    """Where lspci is installed it only adds the name. lspci here is a script printing what
    lspci prints for this tree (NVIDIA functions only, as -d 10de: asks); it fails on other
    arguments."""
    sysfs = sysfs_tree(tmp_path / "sys", "sysfs_h200_vm.yaml")
    facts, _ = run_role(
        tmp_path,
        {"gpu_facts_sysfs_root": str(sysfs), "gpu_facts_proc_root": str(proc_open)},
        bin_dir(tmp_path, lspci=H200_LSPCI),
    )
    assert facts["gpu_facts_gpus"] == [{**H200, "name": "GH100 [H200 SXM 141GB]"}]
    assert facts["gpu_facts_lspci_ok"] is True


def test_gpu_behind_a_bridge_with_numa_node_and_proprietary_driver(tmp_path: Path) -> None:
    """A GPU whose directory sits inside its root port's (found once, NUMA node 1), an NVSwitch
    (an NVIDIA bridge, not a GPU), a GPU without a numa_node file (kernel without NUMA), and the
    proprietary driver's version line."""
    sysfs = sysfs_tree(tmp_path / "sys", "sysfs_bridged_numa.yaml")
    proc = tmp_path / "proc"
    (proc / "driver" / "nvidia").mkdir(parents=True)
    shutil.copy(DATA / "proc_nvidia_version_proprietary.txt", proc / "driver/nvidia/version")
    facts, _ = run_role(
        tmp_path,
        {"gpu_facts_sysfs_root": str(sysfs), "gpu_facts_proc_root": str(proc)},
        bin_dir(tmp_path, lspci=None),
    )
    assert facts["gpu_facts_gpus"] == [
        {"pci": "0000:17:00.0", "class": "0302", "name": "", "device_id": "20b0", "numa_node": 1},
        {"pci": "0000:81:00.0", "class": "0300", "name": "", "device_id": "2230",
         "numa_node": None},
    ]  # fmt: skip
    assert facts["gpu_facts_driver_version"] == "550.54.15"
    assert facts["gpu_facts_driver_flavor"] == "proprietary"


def test_no_pci_tree_and_no_driver(tmp_path: Path) -> None:
    """Empty sysfs and procfs directories (a container without /sys/bus/pci): no GPU, no
    driver, and no failure."""
    (tmp_path / "sys").mkdir()
    (tmp_path / "proc").mkdir()
    facts, stdout = run_role(
        tmp_path,
        {
            "gpu_facts_sysfs_root": str(tmp_path / "sys"),
            "gpu_facts_proc_root": str(tmp_path / "proc"),
        },
        bin_dir(tmp_path, lspci=None),
    )
    assert facts["gpu_facts_gpus"] == [] and facts["gpu_facts_has_gpu"] is False
    assert facts["gpu_facts_pci_source"] == "none"
    assert facts["gpu_facts_driver_loaded"] is False
    assert facts["gpu_facts_driver_version"] == "" and facts["gpu_facts_driver_flavor"] == ""
    assert "skipping: [localhost]" in task_block(stdout, "Ask lspci for the GPUs' names")


def test_lspci_text_double_replaces_the_scan(tmp_path: Path) -> None:
    """gpu_facts_lspci_output (the older hardware double, lspci text) still gives the GPUs and
    their names; the NUMA node is looked up in sysfs by address."""
    sysfs = sysfs_tree(tmp_path / "sys", "sysfs_bridged_numa.yaml")
    text = (
        "0000:17:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 40GB]"
        " [10de:20b0] (rev a1)\n"
        "0000:18:00.0 Bridge [0680]: NVIDIA Corporation GA100 [NVSwitch] [10de:22a3] (rev a1)\n"
    )
    facts, _ = run_role(
        tmp_path,
        {"gpu_facts_sysfs_root": str(sysfs), "gpu_facts_proc_root": str(tmp_path / "none"),
         "gpu_facts_lspci_output": text},
        bin_dir(tmp_path, lspci=None),
    )  # fmt: skip
    assert facts["gpu_facts_gpus"] == [
        {"pci": "0000:17:00.0", "class": "0302", "name": "GA100 [A100 SXM4 40GB]",
         "device_id": "20b0", "numa_node": 1},
    ]  # fmt: skip
    assert facts["gpu_facts_pci_source"] == "lspci_output"
    assert facts["gpu_facts_lspci_ok"] is True
