"""`gpulab init TOPOLOGY`: a stack file from -c KEY=VALUE or prompts, valid once the required
values are given; run as a user runs it, from a directory outside the checkout."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

import yaml

from infra.config.model import keys
from infra.topologies import get
from tests.cli.conftest import GPULAB

NOVA = [
    "-c", "ssh_public_key=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGs9v1 lab@ops",
    "-c", "external_network=public", "-c", "admin_cidr=198.51.100.0/24",
    "-c", "image=ubuntu-22.04", "-c", "flavor_vcpus=8", "-c", "flavor_ram_mb=65536",
    "-c", "flavor_disk_gb=80", "-c", "pci_alias=a100:1", "-c", "host_count=2",
    "-c", "execution_envs=[native, docker]",
]  # fmt: skip


def test_init_with_every_required_value_then_validate(gpulab, tmp_path: Path) -> None:
    r = gpulab("init", "nova-pci", "-s", "mylab", *NOVA)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "wrote Pulumi.mylab.yaml\n"
    assert "valid: next `gpulab preflight mylab`, then `gpulab up mylab`" in r.stderr
    config = yaml.safe_load((tmp_path / "Pulumi.mylab.yaml").read_text())["config"]
    assert config["gpulab:host_count"] == 2 and config["gpulab:lab"] == "mylab"
    assert config["gpulab:execution_envs"] == ["native", "docker"]
    assert config["gpulab:pci_alias"] == "a100:1"  # a string stays a string
    assert {"Pulumi.yaml", "__main__.py"} <= {p.name for p in tmp_path.iterdir()}
    v = gpulab("validate", "mylab", "--json")
    assert v.returncode == 0, v.stdout
    assert '"gpulab:host_count": 2' in v.stdout  # typed, not "2"


def test_init_without_values_lists_them_and_validate_names_all_at_once(
    gpulab, tmp_path: Path
) -> None:
    r = gpulab("init", "nova-pci", "-s", "todo", "-c", "image=ubuntu-22.04")
    assert r.returncode == 0, r.stderr
    missing = [k.key for k in keys(get("nova-pci")) if k.required and k.key not in
               ("topology", "lab", "image")]  # fmt: skip
    assert "still to set: " + ", ".join(f"gpulab:{k}" for k in missing) in r.stderr
    text = (tmp_path / "Pulumi.todo.yaml").read_text()
    for key in missing:
        assert f"  # gpulab:{key}:\n" in text
    v = gpulab("validate", "todo")
    assert v.returncode == 2 and v.stderr.count("\n") == 1
    for key in missing:
        assert f"gpulab:{key} is required for nova-pci" in v.stderr


def test_a_required_secret_gets_the_placeholder_and_validate_says_so(
    gpulab, tmp_path: Path
) -> None:
    r = gpulab("init", "vsphere-gpu", "-s", "vg", "-c", "vsphere_server=vc.lab.internal")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "Pulumi.vg.yaml").read_text()
    assert "`pulumi config set --secret gpulab:vsphere_password -s vg`" in text
    v = gpulab("validate", "vg")
    assert "gpulab:vsphere_password still holds an example's placeholder value" in v.stderr
    assert "gpulab:datacenter is required for vsphere-gpu" in v.stderr  # all at once


def test_bad_values_are_refused_before_anything_is_written(gpulab, tmp_path: Path) -> None:
    r = gpulab("init", "nova-pci", "-s", "bad", "-c", "flavor_vcpus=zero", "-c", "nope=1",
               "-c", "os_password=hunter2")  # fmt: skip
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "gpulab:flavor_vcpus must be an integer >= 1, got 'zero'" in r.stderr
    assert "gpulab:nope is not a key of nova-pci" in r.stderr
    assert "gpulab:os_password is a secret" in r.stderr and "hunter2" not in r.stderr
    assert list(tmp_path.iterdir()) == []
    assert gpulab("init", "moon").returncode == 2
    assert gpulab("init", "local", "-s", "mine").returncode == 0
    again = gpulab("init", "local", "-s", "mine")
    assert again.returncode == 2 and "exists: --force replaces it" in again.stderr
    assert gpulab("init", "local", "-s", "mine", "--force").returncode == 0


def test_values_that_do_not_go_together_are_refused(gpulab, tmp_path: Path) -> None:
    r = gpulab("init", "local", "-s", "xy", "-c", "execution_envs=[native]",
               "-c", "measure_envs=[docker]")  # fmt: skip
    assert r.returncode == 2 and "gpulab:measure_envs names docker" in r.stderr
    assert not (tmp_path / "Pulumi.xy.yaml").exists()


def _talk(argv: list[str], cwd: Path, answers: list[str], timeout: float = 60) -> tuple[int, str]:
    """Run ``argv`` on a pseudo-terminal, typing each answer after its prompt."""
    master, slave = pty.openpty()
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200", TERM="dumb")
    proc = subprocess.Popen(argv, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    seen, pending, deadline = b"", list(answers), time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if pending and seen.rstrip().endswith(b":"):
                os.write(master, pending.pop(0).encode() + b"\n")
        elif proc.poll() is not None:
            break
    proc.wait(timeout=10)
    os.close(master)
    return proc.returncode, seen.decode(errors="replace")


def test_init_on_a_terminal_asks_for_each_required_value(tmp_path: Path) -> None:
    """On a terminal: one prompt per required key, a bad answer asked again, the example's
    value offered as the default (an empty answer takes it)."""
    answers = ["", "public", "198.51.100.0/24", "ubuntu-22.04", "0", "8", "", "", ""]
    rc, text = _talk([GPULAB, "init", "nova-pci", "-s", "tty",
                      "-c", "ssh_public_key=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGs9v1 a@b"],
                     tmp_path, answers)  # fmt: skip
    assert rc == 0, text
    assert "gpulab:external_network (provider network the lab router uplinks to) [public]:" \
        in text  # fmt: skip
    assert "gpulab:flavor_vcpus must be an integer >= 1, got 0" in text  # asked again
    config = yaml.safe_load((tmp_path / "Pulumi.tty.yaml").read_text())["config"]
    assert config["gpulab:flavor_vcpus"] == 8 and config["gpulab:pci_alias"] == "p100:1"
    assert "valid: next" in text


def test_init_into_a_directory_of_its_own(gpulab, tmp_path: Path) -> None:
    """--dir makes the directory (a lab project); the directory then names the stack."""
    r = gpulab("init", "local", "-s", "two", "--dir", "labs/two")
    assert r.returncode == 0, r.stderr
    lab = tmp_path / "labs" / "two"
    assert sorted(p.name for p in lab.iterdir()) == ["Pulumi.two.yaml", "Pulumi.yaml",
                                                     "__main__.py"]  # fmt: skip
    v = gpulab("validate", "labs/two")
    assert v.returncode == 0 and v.stdout.startswith(f"{lab / 'Pulumi.two.yaml'}: valid local")
