"""A bastion and a key file reach the inventory as checked fields, never as text: the writer
makes ``ansible_ssh_common_args`` (a ProxyCommand) from ``gpulab_bastion``'s four checked
fields alone, keeps refusing ``ansible_ssh_common_args`` from data, and the real
``ansible-inventory`` reads the result back as the same unsafe text."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infra.ansible.inventory import InventoryError, build_inventory
from infra.ansible.ssh_route import jump_argv, login_argv
from infra.ansible.untrusted import dump_unsafe_yaml
from infra.hosts import Host

ANSIBLE_INVENTORY = str(Path(sys.executable).parent / "ansible-inventory")
JUMP = {"host": "10.0.0.2", "user": "jump", "port": 2222, "key": "/keys/jump_ed25519"}


def host(**vars_: Any) -> Host:
    return Host("gpu-a", "10.0.0.11", ssh_user="ubuntu", gpu_path="whole-machine", vars=vars_)


def test_the_proxy_command_is_made_of_the_checked_fields() -> None:
    hv = build_inventory([host(gpulab_bastion=JUMP, ansible_ssh_private_key_file="/keys/lab")])
    hv = hv["all"]["hosts"]["gpu-a"]
    assert hv["ansible_ssh_private_key_file"] == "/keys/lab"
    assert hv["gpulab_bastion"] == JUMP
    # Ansible's ssh connection shlex-splits the option; ssh runs the ProxyCommand with sh -c
    # after putting the lab host for %h and %p.
    opt, proxy = shlex.split(hv["ansible_ssh_common_args"])
    assert opt == "-o" and proxy.startswith("ProxyCommand=")
    command = proxy.removeprefix("ProxyCommand=").replace("%h", "10.0.0.11").replace("%p", "22")
    assert shlex.split(command) == [
        "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
        "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10",
        "-l", "jump", "-p", "2222", "-i", "/keys/jump_ed25519", "-o", "IdentitiesOnly=yes",
        "-W", "[10.0.0.11]:22", "10.0.0.2",
    ]  # fmt: skip
    # the check before a build logs in the same way
    argv = login_argv("10.0.0.11", 22, "ubuntu", "/keys/lab", JUMP)
    assert argv[-3:] == ["--", "10.0.0.11", "true"] and argv[argv.index("-i") + 1] == "/keys/lab"
    assert f"ProxyCommand={' '.join(map(shlex.quote, jump_argv(JUMP)))}" in argv


def test_no_bastion_no_option_and_none_means_direct() -> None:
    for vars_ in ({}, {"gpulab_bastion": None}):
        hv = build_inventory([host(**vars_)])["all"]["hosts"]["gpu-a"]
        assert "ansible_ssh_common_args" not in hv


HOSTILE = [
    ({"host": "-oProxyCommand=id", "user": "u", "port": 22, "key": None}, ".host must be"),
    ({"host": "10.0.0.2 -oProxyCommand=id", "user": "u"}, ".host must be"),
    ({"host": "j;id", "user": "u"}, ".host must be"),
    ({"host": "j", "user": "u -oProxyCommand=id"}, ".user must be a login name"),
    ({"host": "j", "user": "u$(id)"}, ".user must be a login name"),
    ({"host": "j", "user": "u", "port": "22 -o x"}, ".port must be 1-65535"),
    ({"host": "j", "user": "u", "port": True}, ".port must be 1-65535"),
    ({"host": "j", "user": "u", "key": "/k; id"}, ".key must be an absolute path"),
    ({"host": "j", "user": "u", "key": "/k %h"}, ".key must be an absolute path"),
    ({"host": "j", "user": "u", "command": "id"}, "has command: only host, user, port, key"),
    ("-o ProxyCommand=id", "gpulab_bastion must be a mapping"),
]


@pytest.mark.parametrize(("bastion", "needle"), HOSTILE)
def test_a_hostile_bastion_field_is_refused_in_one_line(bastion: Any, needle: str) -> None:
    with pytest.raises(InventoryError) as err:
        build_inventory([host(gpulab_bastion=bastion)])
    assert str(err.value).startswith("host 'gpu-a': gpulab_bastion") and needle in str(err.value)
    assert "\n" not in str(err.value)


def test_free_text_ssh_arguments_stay_refused() -> None:
    with pytest.raises(InventoryError, match="variable 'ansible_ssh_common_args' is not allowed"):
        build_inventory([host(ansible_ssh_common_args="-o ProxyCommand=id", gpulab_bastion=JUMP)])


def test_ansible_reads_the_route_back_as_the_same_unsafe_text(tmp_path: Path) -> None:
    inv = build_inventory([host(gpulab_bastion=JUMP, ansible_ssh_private_key_file="/keys/lab")])
    path = tmp_path / "inventory.yml"
    path.write_text(dump_unsafe_yaml(inv))
    listed = subprocess.run([ANSIBLE_INVENTORY, "-i", str(path), "--list"], capture_output=True,
                            text=True, timeout=120, check=True)  # fmt: skip
    hv = json.loads(listed.stdout)["_meta"]["hostvars"]["gpu-a"]
    want = inv["all"]["hosts"]["gpu-a"]["ansible_ssh_common_args"]
    assert hv["ansible_ssh_common_args"] == {"__ansible_unsafe": want}
    assert hv["ansible_ssh_private_key_file"] == {"__ansible_unsafe": "/keys/lab"}
