"""No value from a user, a cloud or a host is ever rendered as a template: a Jinja payload
planted in every field that reaches Ansible runs nothing, and arrives literally where it is used.

Each payload, if Ansible rendered it, would run ``touch PWNED-<field>`` through the ``pipe``
lookup on the controller (``cd $GPULAB_PWNED_DIR && ...``: no ``/``, so it fits in an arm label
or a file name); a command run on the target instead lands in the chroot's overlay upper
directory. Both are searched after every run. The two Jinja forms are used: ``{{ ... }}`` and
``{% set _ = ... %}``.

Real parts: the real playbooks on the chroot target (``community.general.chroot``), run the way
the code runs them:

- ``site.yml`` through ``AnsibleRunProvider.create`` (the play in a spawned interpreter, as the
  engine's provider host runs it), with the site variables ``infra.dynamic.site_variables``
  makes from a stack file (``gpulab:site``) and hosts shaped as the ``hosts`` stack output;
- ``workloads.yml`` through ``WorkloadRunProvider.create`` with ``gpulab:workload_variables``
  from the same stack file, a suite file, an arm label and a topology;
- ``validate.yml`` and an ad-hoc use of the host variables by ``ansible-playbook``/``ansible``
  against the file ``gpulab inventory --outputs FILE`` wrote (the CLI run as a user runs it).

The GPU facts the site run reports are read from the host itself too (a DMI product name in the
host's sysfs tree): a host's own text is data as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import load_stack_file
from infra.dynamic import execution_envs, site_variables
from infra.dynamic.ansible_run import AnsibleRunProvider
from infra.dynamic.workload_run import WorkloadRunProvider
from tests.ansible.helpers import install_docker_double, stdin_sha256
from tests.parts import REPO
from tests.parts.fixtures_nspawn import ChrootTarget

pytestmark = [pytest.mark.nspawn, pytest.mark.slow]

BIN = Path(sys.executable).parent
CHROOT_VARS = {
    "ansible_connection": "community.general.chroot",
    "ansible_python_interpreter": "/usr/bin/python3",
}
# The runner stand-in on the target: keeps its environment (what the role gave it) in a file.
SEEN = "/var/tmp/gpulab-template-seen.json"
DUMP = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"
FAKE_SYS = "/srv/gpulab-template-sys"  # a sysfs tree of the host's own (gpu_facts_sysfs_root)
ROWS: list[tuple[str, str, str]] = []


def payload(field: str, form: str = "expr") -> str:
    """A template that would create PWNED-<field> on the controller if it were rendered."""
    cmd = f"cd $GPULAB_PWNED_DIR && touch PWNED-{field}"
    lookup = f"lookup('pipe', '{cmd}')"
    if form == "expr":
        return "{{ " + lookup + " }}"
    return "{% set _ = " + lookup + " %}" + field


def lspci_line(name: str) -> str:
    return f"0000:01:00.0 3D controller [0302]: NVIDIA Corporation {name} [10de:2330] (rev a1)"


P = {
    "site.gpu_facts_lspci_output": payload("site-lspci", "block"),
    "workload_variables.workload_run_environment": payload("workload-env"),
    "hosts[].vars.lab": payload("host-lab"),
    "hosts[].vars.private_address": payload("host-private-address", "block"),
    "hosts[].vars.api_url": payload("host-api-url"),
    "hosts[].vars.workload_run_sharing": payload("host-sharing", "block"),
    "host sysfs product_name": payload("host-dmi"),
    "arm": payload("arm", "block"),
    "topology": payload("topology"),
    "suite file content": payload("suite", "block"),
    "workload_secrets.workload_run_registry_password": payload("registry-password"),
    "workload_variables.workload_run_registry_user": payload("registry-user", "block"),
    "workload_variables.workload_run_docker_image": payload("docker-image"),
}


@pytest.fixture
def pwned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "pwned"
    d.mkdir()
    monkeypatch.setenv("GPULAB_PWNED_DIR", str(d))
    return d


def executed(pwned: Path, chroot: ChrootTarget) -> list[str]:
    """Every PWNED-* file: on the controller, and anything the target wrote (its overlay)."""
    upper = chroot.path.parent / "upper"
    return sorted(str(p) for root in (pwned, upper) for p in root.rglob("PWNED-*"))


def stack_file(tmp_path: Path) -> Path:
    """A stack whose gpulab:site and gpulab:workload_variables carry payloads (valid data)."""
    doc = {
        "config": {
            "gpulab:topology": "local",
            "gpulab:lab": "tmpl",
            "gpulab:site": {
                "gpu_facts_lspci_output": lspci_line(P["site.gpu_facts_lspci_output"]),
                "gpu_facts_sysfs_root": FAKE_SYS,
            },
            "gpulab:workload_variables": {
                "workload_run_environment": {
                    "GPULAB_PAYLOAD": P["workload_variables.workload_run_environment"]
                },
                "workload_run_registry_user": P["workload_variables.workload_run_registry_user"],
                "workload_run_docker_image": P["workload_variables.workload_run_docker_image"],
            },
        }
    }
    path = tmp_path / "Pulumi.tmpl.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def host_output(chroot: ChrootTarget, gpu_path: str, **more: Any) -> dict[str, Any]:
    """One entry of the ``hosts`` stack output, its cloud-given vars carrying payloads."""
    return {
        "name": "tmpl-0",
        "address": str(chroot.path),
        "ssh_user": "root",
        "groups": ["gpu_hosts"],
        "gpu_path": gpu_path,
        "ssh_port": 22,
        "vars": {
            **CHROOT_VARS,
            "lab": P["hosts[].vars.lab"],
            "private_address": P["hosts[].vars.private_address"],
            "api_url": P["hosts[].vars.api_url"],
            **more,
        },
    }


def record(field: str, arrived: str) -> None:
    ROWS.append((field, P[field], arrived))


@pytest.fixture(scope="module", autouse=True)
def print_table() -> Iterator[None]:
    yield
    if ROWS:
        print("\n| field | payload | arrived |\n|---|---|---|")
        for field, sent, got in ROWS:
            print(f"| {field} | `{sent}` | `{got}` |")


def test_site_run_renders_nothing(chroot_target: ChrootTarget, tmp_path: Path, pwned: Path) -> None:
    """site.yml through the AnsibleRun provider: gpulab:site and the host's own DMI name arrive
    as the GPU facts the stack exports; the cloud's host vars run nothing."""
    dmi = chroot_target.path / FAKE_SYS.lstrip("/") / "class/dmi/id/product_name"
    dmi.parent.mkdir(parents=True, exist_ok=True)
    dmi.write_text(P["host sysfs product_name"] + "\n")
    cfg = load_stack_file(stack_file(tmp_path))
    props = {
        "hosts": [host_output(chroot_target, "none")],
        "playbook": "site.yml",
        "variables": site_variables(cfg, execution_envs(cfg)),
        "secrets": None,
        "playbook_digest": None,
        "triggers": [],
    }
    outs = AnsibleRunProvider().create(props).outs
    assert outs is not None and outs["status"] == "successful"
    assert executed(pwned, chroot_target) == []
    # the rootfs has cloud-init, but nothing booted the chroot: wait.yml does not wait for it
    assert outs["waited"]["tmpl-0"]["cloud_init"] == "not booted", outs["waited"]
    facts = outs["facts"]["tmpl-0"]["facts"]  # the provision output of the stack
    gpus = facts["gpu_facts_gpus"]
    assert [g["name"] for g in gpus] == [P["site.gpu_facts_lspci_output"]]
    assert facts["gpu_facts_dmi_product"] == P["host sysfs product_name"]
    record("site.gpu_facts_lspci_output", f"facts gpu_facts_gpus[0].name = {gpus[0]['name']}")
    record(
        "host sysfs product_name", f"facts gpu_facts_dmi_product = {facts['gpu_facts_dmi_product']}"
    )
    for key in ("lab", "private_address", "api_url"):
        record(f"hosts[].vars.{key}", "inventory var, unused by site.yml: nothing ran")


def test_workload_run_renders_nothing(
    chroot_target: ChrootTarget, tmp_path: Path, pwned: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """workloads.yml through the WorkloadRun provider, docker execution environment (a docker
    double on the target): the runner's environment and docker's command lines hold every value
    literally (workload_variables, a host var from the outputs, arm, topology), the registry
    password (a secret) reaches `docker login`'s stdin as it is, the suite file is copied as it
    is."""
    cfg = load_stack_file(stack_file(tmp_path))
    suite = tmp_path / "tmpl-suite.yaml"
    suite_text = f"name: tmpl\ndescription: {json.dumps(P['suite file content'])}\n"
    suite.write_text(suite_text)
    host = host_output(
        chroot_target,
        "pci-passthrough",
        workload_run_command=["/usr/bin/python3", "-c", DUMP, SEEN],
        workload_run_dir="/",
        workload_run_sharing=P["hosts[].vars.workload_run_sharing"],
    )
    secret = P["workload_secrets.workload_run_registry_password"]
    props = {
        "hosts": [host],
        "suite": str(suite),
        "suite_digest": None,
        "execution_env": "docker",
        "arm": P["arm"],
        "topology": P["topology"],
        "lab": "tmpl",
        "variables": dict(cfg.workload_variables),
        "secrets": {"workload_run_registry_password": secret},
        "stack": "tmpl",
        "triggers": [],
    }
    monkeypatch.setenv("GPULAB_RESULTS", str(tmp_path / "results"))  # records: results/tmpl/
    monkeypatch.delenv("GPULAB_DOCKER_DOUBLE_OUT", raising=False)  # its files: in the chroot
    docker = install_docker_double(chroot_target.path / "usr/local/bin/docker")
    try:
        outs = WorkloadRunProvider().create(props).outs
    finally:
        docker.unlink()
    assert outs is not None and outs["play_status"] == "successful"
    assert executed(pwned, chroot_target) == []
    tmp = chroot_target.path / "var/tmp"
    env = json.loads((tmp / SEEN.rsplit("/", 1)[1]).read_text())
    expect = {
        "GPULAB_PAYLOAD": "workload_variables.workload_run_environment",
        "GPULAB_SHARING": "hosts[].vars.workload_run_sharing",
        "GPULAB_ARM": "arm",
        "GPULAB_TOPOLOGY": "topology",
    }
    for name, field in expect.items():
        assert env[name] == P[field], name
        record(field, f"runner environment {name} = {env[name]}")
    assert (tmp / "gpulab-docker-double.login.sha256").read_text().strip() == stdin_sha256(secret)
    record("workload_secrets.workload_run_registry_password", "docker login stdin: its sha256")
    login = (tmp / "gpulab-docker-double.login.argv").read_text().splitlines()
    user = P["workload_variables.workload_run_registry_user"]
    assert login == ["login", "--username", user, "--password-stdin"]
    record("workload_variables.workload_run_registry_user", f"docker login argv: {login[2]}")
    run = (tmp / "gpulab-docker-double.run.argv").read_text().splitlines()
    image = P["workload_variables.workload_run_docker_image"]
    at = run.index("--entrypoint=")
    assert run[at + 1] == image and run[at + 2 :] == ["/usr/bin/python3", "-c", DUMP, SEEN]
    record("workload_variables.workload_run_docker_image", f"docker run argv image: {run[at + 1]}")
    copied = chroot_target.path / f"var/lib/gpulab/results/{outs['run_id']}/suite.yaml"
    assert copied.read_text() == suite_text
    got = yaml.safe_load(copied.read_text())["description"]
    record("suite file content", f"suite.yaml on the host: {got}")


def test_inventory_file_is_inert_for_ansible_playbook(
    chroot_target: ChrootTarget, tmp_path: Path, pwned: Path
) -> None:
    """`gpulab inventory` from saved outputs, then validate.yml and an ad-hoc use of every host
    and site variable from that file: values arrive literally, nothing runs."""
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"hosts": [host_output(chroot_target, "pci-passthrough")]}))
    inv = tmp_path / "inventory.yml"
    env = dict(
        os.environ,
        PATH=f"{BIN}:{os.environ['PATH']}",
        NO_COLOR="1",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="False",
    )
    r = subprocess.run(
        [str(BIN / "gpulab"), "inventory", str(stack_file(tmp_path)), "--outputs", str(outputs),
         "--out", str(inv)],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    smi = chroot_target.path / "usr/local/bin/nvidia-smi"  # validate.yml's first check
    smi.write_text("#!/bin/sh\necho 'GPU 0: Stub GPU (UUID: GPU-0)'\n")
    smi.chmod(0o755)
    try:
        play = subprocess.run(
            [str(BIN / "ansible-playbook"), "-i", str(inv), str(REPO / "playbooks/validate.yml")],
            capture_output=True, text=True, timeout=300, env=env, cwd=REPO,
        )  # fmt: skip
        assert play.returncode == 0, play.stdout[-3000:] + play.stderr[-2000:]
        seen = "/var/tmp/gpulab-template-inventory.json"
        use = (
            "{{ {'lab': lab, 'private_address': private_address, 'api_url': api_url, "
            "'lspci': gpu_facts_lspci_output} | to_json }}"
        )
        adhoc = subprocess.run(
            [str(BIN / "ansible"), "-i", str(inv), "all", "-m", "ansible.builtin.copy",
             "-a", f"dest={seen} content={use}"],
            capture_output=True, text=True, timeout=300, env=env, cwd=REPO,
        )  # fmt: skip
        assert adhoc.returncode == 0, adhoc.stdout[-3000:] + adhoc.stderr[-2000:]
    finally:
        smi.unlink()
    assert executed(pwned, chroot_target) == []
    got = json.loads((chroot_target.path / seen.lstrip("/")).read_text())
    assert got == {
        "lab": P["hosts[].vars.lab"],
        "private_address": P["hosts[].vars.private_address"],
        "api_url": P["hosts[].vars.api_url"],
        "lspci": lspci_line(P["site.gpu_facts_lspci_output"]),
    }
    for key in ("lab", "private_address", "api_url"):
        record(f"hosts[].vars.{key}", f"gpulab inventory file, used by `ansible`: {got[key]}")
