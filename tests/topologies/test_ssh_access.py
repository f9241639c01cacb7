"""The SSH routes are checked before anything is built, one line per problem naming the key
and the host: a key file ssh would refuse (missing, a directory, readable by others), a
bastion that does not answer or refuses, a listed machine that does not answer. The logins
are real ``ssh`` runs against a closed port of this machine (nothing listens on it) or, where
a test needs an answer, a recorder of the argv instead of ssh (named in the test); the nspawn
end-to-end test (tests/e2e/test_static_e2e.py) runs them against real sshd."""

from __future__ import annotations

import shlex
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from infra import access
from infra.ansible.inventory import build_inventory
from infra.config import ConfigError, load_stack_file, validate
from infra.hosts import Host
from infra.keys.access import bastion
from infra.preflight import preflight


def closed_port() -> int:
    """A TCP port of 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def key(tmp_path: Path, mode: int = 0o600, name: str = "id") -> str:
    path = tmp_path / name
    path.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n")
    path.chmod(mode)
    return str(path)


def static(**over: Any) -> Any:
    raw: dict[str, Any] = {
        "topology": "static",
        "lab": "own",
        "hosts": [{"name": "gpu-a", "address": "127.0.0.1", "machine": "bare-metal"}],
    }
    raw.update(over)
    return validate(raw).args


def test_a_key_file_ssh_would_refuse_is_named_with_its_hosts(tmp_path: Path) -> None:
    assert access.key_problem(key(tmp_path)) is None
    loose = key(tmp_path, 0o644, "loose")
    assert access.key_problem(loose) == (
        f"permissions 0644 are too open: ssh refuses a private key that group or others can "
        f"read (chmod 600 {loose})"
    )
    assert access.key_problem(str(tmp_path / "missing")) == "no such file"
    assert access.key_problem(str(tmp_path)) == "is not a file"
    args = static(ssh_private_key_file=loose, bastion={"host": "127.0.0.1", "key": loose})
    tried: list[list[str]] = []
    found = access.problems(args.routes(), run=lambda argv: tried.append(argv))
    assert found == [
        f"gpulab:ssh_private_key_file {loose} (for host gpu-a): permissions 0644 are too open: "
        f"ssh refuses a private key that group or others can read (chmod 600 {loose})",
        f"gpulab:bastion.key {loose} (for host gpu-a): permissions 0644 are too open: ssh "
        f"refuses a private key that group or others can read (chmod 600 {loose})",
    ]
    assert tried == []  # nothing is tried with a key ssh would refuse


def test_a_bastion_that_does_not_answer_is_one_line_and_hides_no_host(tmp_path: Path) -> None:
    """Real ssh: the bastion is a closed port of this machine."""
    port = closed_port()
    args = static(ssh_private_key_file=key(tmp_path), bastion={"host": "127.0.0.1", "port": port})
    (line,) = access.problems(args.routes())
    assert line.startswith(
        f"gpulab:bastion: bastion 127.0.0.1:{port} (user ubuntu, key {tmp_path / 'id'}) does "
        "not answer on the way to host gpu-a: "
    ), line
    assert "Connection refused" in line and "\n" not in line


def test_a_machine_that_does_not_answer_is_one_line_naming_its_entry(tmp_path: Path) -> None:
    """Real ssh: the machine is a closed port of this machine, reached directly."""
    port = closed_port()
    args = static(
        hosts=[
            {"name": "gpu-a", "address": "127.0.0.1", "port": port, "machine": "bare-metal"},
        ]
    )
    with pytest.raises(access.AccessError) as err:
        access.check(args.routes())
    (line,) = err.value.problems
    assert line.startswith(
        f"gpulab:hosts[0]: host gpu-a (127.0.0.1:{port}) does not answer SSH: "
    ) and line.endswith("Connection refused"), line


def test_a_refusing_bastion_and_a_refused_login_say_whose_key(tmp_path: Path) -> None:
    """A recorder stands in for ssh here: it answers as a bastion that takes no key would."""
    lab_key = key(tmp_path)
    args = static(
        ssh_private_key_file=lab_key,
        bastion={"host": "10.0.0.2", "user": "jump"},
        hosts=[
            {"name": "gpu-a", "address": "10.0.0.11", "machine": "bare-metal"},
            {"name": "gpu-b", "address": "10.0.0.12", "machine": "vgpu", "bastion": False},
        ],
    )
    denied = "jump@10.0.0.2: Permission denied (publickey)."

    def ssh(argv: list[str]) -> str | None:
        return denied if argv[-2] in ("10.0.0.2", "10.0.0.12") else None

    assert access.problems(args.routes(), run=ssh) == [
        f"gpulab:bastion: bastion 10.0.0.2:22 (user jump, key {lab_key}) refused the login on "
        f"the way to host gpu-a: {denied}",
        f"gpulab:hosts[1]: host gpu-b (10.0.0.12:22) refused the login of user ubuntu with "
        f"gpulab:ssh_private_key_file {lab_key}: {denied}",
    ]


def test_preflight_has_a_row_per_key_bastion_and_machine(tmp_path: Path) -> None:
    """Every topology gets the rows of its routes; a cloud lab's only its key and bastion."""
    port = closed_port()
    path = tmp_path / "Pulumi.own.yaml"
    path.write_text(
        "config:\n  gpulab:topology: static\n  gpulab:lab: own\n"
        f"  gpulab:ssh_private_key_file: {key(tmp_path)}\n"
        "  gpulab:hosts:\n"
        f"    - {{name: gpu-a, address: 127.0.0.1, port: {port}, machine: bare-metal}}\n"
    )
    rows = preflight(load_stack_file(path))
    assert [(r.name, r.passed) for r in rows] == [
        ("topology static", True), ("ssh key file", True), ("host gpu-a", False),
    ]  # fmt: skip
    assert rows[0].detail == "1 machines listed (1 bare-metal): nothing to build"
    assert "does not answer SSH" in rows[2].detail and rows[2].fix


def test_a_cloud_labs_bastion_is_checked_before_its_hosts_exist() -> None:
    """nova-pci's example with a bastion: the route has no address yet, the bastion is tried
    (real ssh, a closed port of this machine)."""
    nova = Path(__file__).resolve().parents[2] / "examples/nova-pci/Pulumi.nova-pci.yaml"
    args = load_stack_file(nova, allow_placeholders=True).args
    assert access.problems(args.routes()) == []  # no key, no bastion: nothing to check
    port = closed_port()
    args = replace(args, bastion=bastion({"host": "127.0.0.1", "port": port}))
    (line,) = access.problems(args.routes())
    assert line.startswith(f"gpulab:bastion: bastion 127.0.0.1:{port} (user ubuntu) does not "
                           "answer on the way to the lab's hosts: ")  # fmt: skip


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("bastion.lab.example.net", ("bastion.lab.example.net", 22, None)),
        ("jump@192.0.2.10", ("192.0.2.10", 22, "jump")),
        ("jump@192.0.2.10:2200", ("192.0.2.10", 2200, "jump")),
        ("fd00::10", ("fd00::10", 22, None)),  # a bare IPv6 address: its colons are no port
        ("jump@[fd00::10]:2200", ("fd00::10", 2200, "jump")),
    ],
)
def test_a_bastion_may_be_written_as_proxyjumps_text(text: str, want: tuple[Any, ...]) -> None:
    b = static(bastion=text).bastion
    assert (b.host, b.port, b.user, b.key) == (*want, None)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("-oProxyCommand=id", "host must be an IP address or a host name"),
        ("jump@192.0.2.10 -oProxyCommand=id", "host must be an IP address or a host name"),
        ("$(id)@192.0.2.10", "user must be a login name"),
        ("u -oProxyCommand=id@192.0.2.10", "user must be a login name"),
        ("jump@192.0.2.10:22;id", "port must be 1-65535"),
        ("jump@192.0.2.10:0", "port must be 1-65535"),
        ("jump@192.0.2.10:", "port must be 1-65535"),
        ("a@b@192.0.2.10", "cannot read 'a@b@192.0.2.10' as [user@]host[:port]"),
        ("[fd00::10:22", "cannot read '[fd00::10:22' as [user@]host[:port]"),
    ],
)
def test_a_bastion_text_that_is_not_plain_user_host_port_is_refused(text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        static(bastion=text)
    line = str(err.value)
    assert line.startswith("gpulab:bastion must be [user@]host[:port] "), line
    assert needle in line and "\n" not in line, line


def test_a_text_bastion_reaches_the_inventory_as_the_checked_proxy_command() -> None:
    """From the stack's text to ``ansible_ssh_common_args``: the writer makes the command of
    the parsed fields, the lab host's key standing in for the bastion's."""
    args = static(ssh_private_key_file="/keys/lab", bastion="hop@192.0.2.10:2200")
    (h,) = access.apply(args.routes(), [Host("gpu-a", "127.0.0.1", ssh_user="ubuntu")])
    hv = build_inventory([h])["all"]["hosts"]["gpu-a"]
    assert hv["gpulab_bastion"] == {
        "host": "192.0.2.10", "user": "hop", "port": 2200, "key": "/keys/lab",
    }  # fmt: skip
    (opt, proxy) = shlex.split(hv["ansible_ssh_common_args"])
    assert opt == "-o" and proxy.startswith("ProxyCommand=ssh ")
    command = shlex.split(proxy.removeprefix("ProxyCommand="))
    assert command[command.index("-l") :] == [
        "-l", "hop", "-p", "2200", "-i", "/keys/lab", "-o", "IdentitiesOnly=yes",
        "-W", "[%h]:%p", "192.0.2.10",
    ]  # fmt: skip


def test_preflight_names_a_machine_whose_login_user_has_no_passwordless_sudo(
    tmp_path: Path,
) -> None:
    """A recorder of the ssh argv stands in for ssh (the logins answer; ``sudo -n`` asks for a
    password on gpu-b): the row names the entry, the host, the user and the command."""
    args = static(
        ssh_private_key_file=key(tmp_path),
        bastion="jump@127.0.0.1:2200",
        hosts=[{"name": "gpu-a", "address": "10.0.0.11", "machine": "bare-metal"},
               {"name": "gpu-b", "address": "10.0.0.12", "machine": "vgpu", "user": "ops"}],
    )  # fmt: skip

    def ssh(argv: list[str]) -> str | None:
        if argv[-1] == "sudo -n true" and "10.0.0.12" in argv:
            return "sudo: a password is required"
        return None

    rows = access.rows(args.routes(), run=ssh)
    assert [(r.name, r.passed) for r in rows] == [
        ("ssh key file", True), ("bastion", True), ("host gpu-a", True), ("host gpu-b", False),
    ]  # fmt: skip
    assert rows[1].detail == (
        "gpulab:bastion: bastion 127.0.0.1:2200 (user jump, key "
        f"{tmp_path / 'id'}) on the way to host gpu-a, host gpu-b: logged in"
    )
    assert rows[3].detail == (
        "gpulab:hosts[1]: host gpu-b (10.0.0.12:22 through bastion 127.0.0.1:2200): user ops "
        "cannot run `sudo -n true`: sudo: a password is required"
    )
    assert rows[3].fix == "give the login user passwordless sudo"
    assert rows[2].detail.endswith(": login as ubuntu, passwordless sudo")


def test_ssh_command_options_are_never_taken_from_gpulab_site() -> None:
    """docs/topologies.md: the bastion is the one way to a ProxyCommand; gpulab:site cannot
    add one (nor the host's variables: tests/ansible/test_ssh_route.py)."""
    with pytest.raises(ConfigError) as err:
        static(bastion="jump@192.0.2.10", site={"ansible_ssh_common_args": "-o ProxyCommand=id"})
    line = str(err.value)
    assert line.startswith("gpulab:site ") and "\n" not in line, line
    assert "'ansible_ssh_common_args': ansible_* connection variables are not role inputs" in line


def test_a_machine_the_bastion_cannot_reach_says_so_with_ssh_s_telling_line() -> None:
    """Through a bastion, OpenSSH 9's jump ssh prints its fatal "stdio forwarding failed"
    (the "open failed" line is INFO, hidden by LogLevel=ERROR), then the outer ssh its
    "Connection closed": the first is the one shown. A recorder stands in for ssh here; the
    nspawn end-to-end test meets the real lines."""
    assert access._telling([
        "stdio forwarding failed",
        "kex_exchange_identification: Connection closed by remote host",
    ]) == "stdio forwarding failed"  # fmt: skip
    assert access._telling(["x", "Connection closed by 10.0.0.2 port 22"]) == (
        "Connection closed by 10.0.0.2 port 22"
    )
    args = static(bastion="jump@127.0.0.1:2200")

    def ssh(argv: list[str]) -> str | None:  # the bastion lets us in; nothing beyond it
        through = any(a.startswith("ProxyCommand=") for a in argv)
        return "stdio forwarding failed" if through else None

    (line,) = access.problems(args.routes(), run=ssh)
    assert line == (
        "gpulab:hosts[0]: host gpu-a (127.0.0.1:22 through bastion 127.0.0.1:2200) does not "
        "answer SSH from the bastion: stdio forwarding failed"
    )
