"""The ``static`` topology: machines listed in the stack. Its keys and their one-line errors,
a machine listed twice, each machine's route (key, bastion) from its own fields or the stack's,
and the program under Pulumi's MOCK runtime (no engine here; the SSH logins that check each
machine before anything is built are doubled by a recorder: tests/e2e/test_static_e2e.py runs
them for real through a bastion)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest

from infra import access, program
from infra.config import ConfigError, load_stack_file, validate
from infra.keys.access import Bastion
from infra.topologies import get
from infra.topologies.contract import facts
from report.mapping import SETTING_LABELS, Arm, arm_settings
from tests.pulumi.mocks import LabMocks

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "static" / "Pulumi.static.yaml"


def stack(**over: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "topology": "static",
        "lab": "own",
        "hosts": [
            {"name": "gpu-a", "address": "10.0.0.11", "machine": "bare-metal"},
            {"name": "gpu-b", "address": "10.0.0.12", "machine": "vm-passthrough"},
        ],
    }
    raw.update(over)
    return raw


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        validate(raw)
    return err.value.problems


def test_the_example_stack_validates_and_says_what_each_machine_is() -> None:
    cfg = load_stack_file(EXAMPLE, allow_placeholders=True)
    args = cfg.args
    assert [(h.name, h.machine, h.gpu_path) for h in args.hosts] == [
        ("gpu-a", "bare-metal", "whole-machine"),
        ("gpu-b", "vm-passthrough", "pci-passthrough"),
    ]
    assert args.bastion == Bastion(host="bastion.example.org", port=22, user="jump")
    assert args.ssh_private_key_file == str(Path("~/.ssh/gpulab_ed25519").expanduser())
    assert args.cleanup_on_down is False
    # the placeholders make a real validate refuse it, naming the keys
    with pytest.raises(ConfigError, match=r"gpulab:bastion, gpulab:hosts still hold"):
        load_stack_file(EXAMPLE)


def test_each_machine_states_its_setting_in_the_records() -> None:
    spec = get("static")
    want = {
        "bare-metal": ("whole-machine", "none", "bare-metal"),
        "vm-passthrough": ("pci-passthrough", "vm", "vm-passthrough"),
        "vgpu": ("vgpu", "vm", "vgpu"),
    }
    for machine, (gpu_path, virtualization, setting) in want.items():
        cfg = validate(stack(hosts=[{"address": "10.0.0.9", "machine": machine}]))
        (host,) = cfg.args.hosts
        got = facts(spec, host.gpu_path, "native")
        assert (got["gpu_path"], got["virtualization"], got["setting"]) == (
            gpu_path, virtualization, setting,
        )  # fmt: skip
    assert facts(spec, "whole-machine", "docker")["virtualization"] == "container"


def test_machines_of_two_kinds_in_one_lab_make_its_arm_mixed() -> None:
    """docs/topologies.md: one lab is one arm per execution environment; a bare-metal and a
    passthrough VM in it make that arm "mixed" (flagged), so kinds are compared as stacks."""
    spec = get("static")
    two = [
        {"address": "10.0.0.9", "machine": "bare-metal"},
        {"address": "10.0.0.10", "machine": "vm-passthrough"},
    ]
    cfg = validate(stack(hosts=two))
    records = [facts(spec, h.gpu_path, "native") for h in cfg.args.hosts]
    (got,) = arm_settings(records, lambda _rec: Arm("static", "native")).values()
    assert got.setting == "mixed" and SETTING_LABELS[got.setting] == "mixed settings"
    assert got.flags == ["records of this arm state different settings: bm (1 records), vm (1 "
                         "records)"]  # fmt: skip
    one_kind = [facts(spec, cfg.args.hosts[0].gpu_path, "native")] * 2
    (alone,) = arm_settings(one_kind, lambda _rec: Arm("static", "bm")).values()
    assert (alone.setting, alone.flags) == ("bm", [])


def test_a_machine_listed_twice_is_refused_naming_both_entries() -> None:
    same_address = [
        {"name": "gpu-a", "address": "10.0.0.11", "machine": "bare-metal"},
        {"name": "gpu-b", "address": "10.0.0.11", "port": 22, "machine": "bare-metal"},
    ]
    assert problems(stack(hosts=same_address)) == [
        "gpulab:hosts[1] (gpu-b, 10.0.0.11:22) is the machine of gpulab:hosts[0] (gpu-a) "
        "again: list each machine once"
    ]
    # the same address written two ways, or the same host name in another case
    v6 = [{"address": "fe80::1", "machine": "vgpu"}, {"address": "FE80:0::1", "machine": "vgpu"}]
    assert (
        "gpulab:hosts[1] (own-1, FE80:0::1:22) is the machine of gpulab:hosts[0]"
        in (problems(stack(hosts=v6))[0])
    )
    dns = [{"address": "gpu.lab.", "machine": "vgpu"}, {"address": "GPU.lab", "machine": "vgpu"}]
    assert "is the machine of gpulab:hosts[0] (own-0) again" in problems(stack(hosts=dns))[0]
    same_name = [
        {"name": "gpu-a", "address": "10.0.0.11", "machine": "bare-metal"},
        {"name": "gpu-a", "address": "10.0.0.12", "machine": "bare-metal"},
    ]
    assert problems(stack(hosts=same_name)) == [
        "gpulab:hosts[1] is named gpu-a like gpulab:hosts[0]: list each machine once, each "
        "with its own name"
    ]
    # the same address on another port is another machine (two sshd, or a NAT)
    ports = [{"address": "10.0.0.11", "machine": "vgpu"},
             {"address": "10.0.0.11", "port": 2222, "machine": "vgpu"}]  # fmt: skip
    assert [h.name for h in validate(stack(hosts=ports)).args.hosts] == ["own-0", "own-1"]


@pytest.mark.parametrize(
    ("hosts", "needle"),
    [
        ([], "gpulab:hosts must be a list of machines"),
        ("10.0.0.1", "gpulab:hosts must be a list of machines"),
        ([{"address": "10.0.0.1"}], "; hosts[0] has no machine"),
        ([{"machine": "bare-metal"}], "; hosts[0] has no address"),
        ([{"address": "10.0.0.1", "machine": "laptop"}],
         "; hosts[0].machine must be one of bare-metal, vm-passthrough, vgpu"),
        ([{"address": "10.0.0.1 -oProxyCommand=id", "machine": "vgpu"}],
         "; hosts[0].address must be an IP address or a host name"),
        ([{"address": "10.0.0.1", "machine": "vgpu", "user": "root -x"}],
         "; hosts[0].user must be a login name"),
        ([{"address": "10.0.0.1", "machine": "vgpu", "port": 0}], "; hosts[0].port must be"),
        ([{"address": "10.0.0.1", "machine": "vgpu", "key": "id_rsa"}],
         "; hosts[0].key must be an absolute path"),
        ([{"address": "10.0.0.1", "machine": "vgpu", "bastion": 5}],
         "; hosts[0].bastion must be [user@]host[:port], a mapping {host, user, port, key}, or "
         "false, got"),
        ([{"address": "10.0.0.1", "machine": "vgpu", "bastion": "jump;id"}],
         "; hosts[0].bastion must be [user@]host[:port] (an IPv6 address in brackets to give a "
         "port), or a mapping {host: <IP address or host name>, "),
        ([{"address": "10.0.0.1", "machine": "vgpu", "bastion": {"host": "j", "port": "x"}}],
         "; port must be 1-65535"),
        ([{"address": "10.0.0.1", "machine": "vgpu", "vars": {"ansible_ssh_common_args": "x"}}],
         "; hosts[0] has vars, which is not a field"),
    ],
)  # fmt: skip
def test_a_bad_machine_entry_is_one_line_naming_the_field(hosts: Any, needle: str) -> None:
    (line,) = problems(stack(hosts=hosts))
    assert line.startswith("gpulab:hosts must be ") and needle in line, line


def test_each_machine_takes_its_own_route_else_the_stacks() -> None:
    cfg = validate(
        stack(
            ssh_user="ops",
            ssh_private_key_file="/keys/lab",
            bastion={"host": "jump.lab", "user": "hop"},
            hosts=[
                {"name": "a", "address": "10.0.0.1", "machine": "bare-metal"},
                {"name": "b", "address": "10.0.0.2", "machine": "vgpu", "user": "cloud",
                 "key": "/keys/b", "port": 2222, "bastion": {"host": "10.9.9.9", "key": "/k/j"}},
                {"name": "c", "address": "10.0.0.3", "machine": "vgpu", "bastion": False},
                {"name": "d", "address": "10.0.0.4", "machine": "vgpu",
                 "bastion": "hop2@[fd00::9]:2200"},
            ],
        )
    )  # fmt: skip
    a, b, c, d = cfg.args.routes()
    assert (a.user, a.key, a.key_from, a.bastion_from) == (
        "ops", "/keys/lab", "gpulab:ssh_private_key_file", "gpulab:bastion",
    )  # fmt: skip
    assert a.bastion_vars() == {"host": "jump.lab", "user": "hop", "port": 22, "key": "/keys/lab"}
    assert (b.user, b.key, b.port, b.key_from) == ("cloud", "/keys/b", 2222, "gpulab:hosts[1].key")
    assert b.bastion_from == "gpulab:hosts[1].bastion"
    assert b.bastion_vars() == {"host": "10.9.9.9", "user": "cloud", "port": 22, "key": "/k/j"}
    assert c.bastion is None and c.bastion_vars() is None  # false: reached directly
    # ProxyJump's text form: [user@]host[:port], each part checked as a mapping's field
    assert d.bastion_from == "gpulab:hosts[3].bastion"
    assert d.bastion_vars() == {"host": "fd00::9", "user": "hop2", "port": 2200, "key": "/keys/lab"}


def test_local_refuses_a_key_file_or_bastion_it_would_ignore() -> None:
    assert problems({"topology": "local", "lab": "lo", "bastion": {"host": "j"}}) == [
        "gpulab:bastion is not used by topology local: this machine is the lab, reached without SSH"
    ]


def test_the_program_builds_nothing_in_a_cloud_and_reaches_each_machine_mock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under the mock runtime: the machines are checked (ssh logins, recorded by a double)
    before any resource; no cloud resource; each host carries its key and bastion, and states
    its own setting; a CleanupRun only because the stack names cleanup_on_down."""
    logins: list[list[str]] = []
    monkeypatch.setattr(access, "_ssh", lambda argv: logins.append(argv))
    mocks = LabMocks()
    pulumi.runtime.set_mocks(mocks, project="gpulab", stack="test", preview=False)
    cfg = validate(
        stack(
            ssh_private_key_file="/keys/lab",
            bastion={"host": "10.0.0.2", "user": "jump", "key": "/keys/jump"},
            cleanup_on_down=True,
        )
    )
    monkeypatch.setattr(access, "key_problem", lambda path: None)  # no such files here
    exports: dict[str, Any] = {}

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def body() -> Any:
        original = pulumi.export
        pulumi.export = exports.__setitem__  # type: ignore[assignment]
        try:
            made = program.run(cfg)
        finally:
            pulumi.export = original  # type: ignore[assignment]

        async def go() -> None:
            from pulumi.runtime.stack import wait_for_rpcs

            await wait_for_rpcs(await_all_outstanding_tasks=False)
            made_by = sorted((r.typ, r.name) for r in mocks.resources)
            assert made_by == [  # gpulab's own resources, nothing in a cloud
                ("gpulab:topology:StaticLab", "own"),
                ("pulumi-python:dynamic/gpulab:AnsibleRun", "own-site"),
                ("pulumi-python:dynamic/gpulab:CleanupRun", "own-cleanup"),
                ("pulumi-python:dynamic/gpulab:WorkloadRun", "own-workloads-native"),
            ], made_by
            hosts = {h.name: h for h in made["hosts"]}
            assert {n: h.gpu_path for n, h in hosts.items()} == {
                "gpu-a": "whole-machine", "gpu-b": "pci-passthrough",
            }  # fmt: skip
            for h in hosts.values():
                assert h.vars["ansible_ssh_private_key_file"] == "/keys/lab"
                assert h.vars["gpulab_bastion"] == {
                    "host": "10.0.0.2", "user": "jump", "port": 22, "key": "/keys/jump",
                }  # fmt: skip
            (site,) = [r for r in mocks.resources if r.name == "own-site"]
            assert [h["vars"]["gpulab_bastion"]["host"] for h in site.inputs["hosts"]] == [
                "10.0.0.2", "10.0.0.2",
            ]  # fmt: skip
            (cleanup,) = [r for r in mocks.resources if r.name == "own-cleanup"]
            assert cleanup.inputs["enabled"] is True
            assert exports["topology"] == "static"

        return pulumi.Output.from_input(go())

    body()
    # before anything: the bastion once, then each machine through it
    assert [argv[-2] for argv in logins] == ["10.0.0.2", "10.0.0.11", "10.0.0.12"]
    assert all("ProxyCommand=" in " ".join(a) for a in logins[1:])


def test_no_resource_when_a_machine_does_not_answer_mock(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"10.0.0.12": "ssh: connect to host 10.0.0.12 port 22: No route to host"}
    monkeypatch.setattr(access, "_ssh", lambda argv: answers.get(argv[-2]))
    mocks = LabMocks()
    pulumi.runtime.set_mocks(mocks, project="gpulab", stack="test", preview=False)
    cfg = validate(stack())
    with pytest.raises(access.AccessError) as err:
        program.run(cfg)
    assert str(err.value) == (
        "gpulab:hosts[1]: host gpu-b (10.0.0.12:22) does not answer SSH: ssh: connect to host "
        "10.0.0.12 port 22: No route to host"
    )
    assert mocks.resources == []
