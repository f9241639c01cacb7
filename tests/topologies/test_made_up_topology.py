"""Adding a topology is one package and its example stack: a made-up ``fake-pool`` topology,
written into ``tmp_path`` and put on the registry's path at test time, is validated, built by
the program (under Pulumi's MOCK runtime: no engine here), checked by preflight and audit, and
has its rows in the generated Pulumi project files and docs tables, with no other file of
the checkout touched."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest

import infra.topologies
from infra import program
from infra.cli import main
from infra.config import ConfigError, load_stack_file, schema, validate
from infra.preflight import audit, preflight
from infra.specs import docs
from infra.topologies import get, names, registry
from tests.pulumi.mocks import LabMocks

# The made-up topology's package, file by file: all it needs beside its example stack.
PACKAGE = {
    "__init__.py": '''
        """``fake-pool``: whole machines leased from a pool (made up by a test)."""

        from infra.topologies.contract import Topology
        from infra.topologies.fake_pool.args import FakePoolArgs

        SPEC = Topology(
            name="fake-pool",
            summary="nothing in a cloud: machines leased from a pool, whole",
            order=95,
            args=FakePoolArgs,
            builder="infra.topologies.fake_pool.build",
            checks="infra.topologies.fake_pool.checks",
            gpu_paths=("whole-machine",),
            gpu_path=lambda _args: "whole-machine",
            default_envs=("native", "docker"),
            stack_file=STACK_FILE,
        )
        ''',
    "args.py": '''
        """The keys of ``fake-pool``."""

        from dataclasses import dataclass
        from typing import Annotated as A

        from infra.keys.key import K
        from infra.keys.lab import HOST_COUNT, LabArgs
        from infra.keys.types import List, Name, Parsed, _ip


        @dataclass(frozen=True, kw_only=True)
        class FakePoolArgs(LabArgs):
            pool: A[str | None, K(Name, "the pool the machines are leased from", True)] = None
            host_count: A[int | None, HOST_COUNT] = None
            addresses: A[tuple[str, ...], K(List(Parsed(_ip, ""), "IP addresses"),
                                            "the leased machines", default=())] = ()
        ''',
    "build.py": '''
        """``fake-pool``'s builder: no resource but its component; one host per address."""

        import pulumi

        from infra.hosts import Host
        from infra.topologies.common import TYPE_PREFIX, host_groups
        from infra.topologies.fake_pool import SPEC


        class FakePoolLab(pulumi.ComponentResource):
            def __init__(self, args):
                super().__init__(f"{TYPE_PREFIX}:FakePoolLab", args.lab, None, None)
                self.hosts = [
                    Host(name=f"{args.lab}-{i}", address=address, ssh_user=args.ssh_user,
                         groups=host_groups(args), gpu_path=SPEC.gpu_path(args),
                         vars={"lab": args.lab, "pool": args.pool})
                    for i, address in enumerate(args.addresses[: args.host_count or 1])
                ]
                self.register_outputs({"hosts": [h.to_output() for h in self.hosts]})


        def build(args):
            lab = FakePoolLab(args)
            return lab, lab.hosts
        ''',
    "checks.py": '''
        """``fake-pool``'s preflight and audit."""

        from infra.clouds import fail, ok


        def preflight(args, _conns):
            want = args.host_count or 1
            if len(args.addresses) < want:
                return [fail(f"pool {args.pool}", f"{len(args.addresses)} of {want} machines",
                             "list more gpulab:addresses")]
            return [ok(f"pool {args.pool}", f"{want} machines listed")]


        def audit(args, _conns):
            return [ok(f"pool {args.pool}", "nothing is built in a cloud")]
        ''',
}
EXAMPLE = """\
config:
  gpulab:topology: fake-pool
  gpulab:lab: pool1
  gpulab:pool: gpu-a
  gpulab:host_count: 2
  gpulab:addresses: [192.0.2.10, 192.0.2.11]
"""


@pytest.fixture
def fake_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The package under ``tmp_path/topologies/fake_pool``, on the registry's path; its example
    stack under ``tmp_path/examples/fake-pool``. Returns the example stack file."""
    stack = tmp_path / "examples" / "fake-pool" / "Pulumi.fake-pool.yaml"
    stack.parent.mkdir(parents=True)
    stack.write_text(EXAMPLE)
    package = tmp_path / "topologies" / "fake_pool"
    package.mkdir(parents=True)
    for name, text in PACKAGE.items():
        code = textwrap.dedent(text).lstrip()
        (package / name).write_text(code.replace("STACK_FILE", repr(str(stack))))
    monkeypatch.setattr(infra.topologies, "__path__", [*infra.topologies.__path__,
                                                       str(tmp_path / "topologies")])  # fmt: skip
    registry.cache_clear()
    yield stack
    registry.cache_clear()
    for module in [m for m in sys.modules if m.startswith("infra.topologies.fake_pool")]:
        del sys.modules[module]


def test_the_registry_finds_it(fake_pool: Path) -> None:
    assert names()[-1] == "fake-pool" and names()[:-1] == (
        "ironic-bm", "nova-pci", "magnum-k8s", "vsphere-gpu", "static", "local",
    )  # fmt: skip
    assert {k.key for k in get("fake-pool").keys} == {
        "topology", "lab", "ssh_user", "ssh_private_key_file", "bastion", "pool", "host_count",
        "addresses",
    }  # fmt: skip


def test_validate_takes_its_keys_and_refuses_them_elsewhere(
    fake_pool: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = load_stack_file(fake_pool)
    assert type(cfg.args).__name__ == "FakePoolArgs"
    assert (cfg.args.pool, cfg.args.host_count, cfg.args.addresses) == (
        "gpu-a", 2, ("192.0.2.10", "192.0.2.11"),
    )  # fmt: skip
    assert cfg.ssh_user == "ubuntu" and cfg.suite == "smoke"  # the shared keys' defaults
    with pytest.raises(ConfigError) as err:
        validate({"topology": "fake-pool", "lab": "pool1", "addresses": ["nowhere"]})
    assert err.value.problems == [
        "gpulab:pool is required for fake-pool: the pool the machines are leased from",
        "gpulab:addresses must be a list of IP addresses, got ['nowhere']",
    ]
    with pytest.raises(ConfigError, match=r"gpulab:pool is not used by topology local \(only by "
                       r"fake-pool\)"):  # fmt: skip
        validate({"topology": "local", "lab": "lo", "pool": "gpu-a"})
    with pytest.raises(ConfigError, match=r"one of ironic-bm, .*, local, fake-pool, got 'x'"):
        validate({"topology": "x", "lab": "lo"})
    # the CLI, in this process (the registry's path is this test's)
    assert main(["validate", str(fake_pool)]) == 0
    out = capsys.readouterr().out
    assert "valid fake-pool stack, lab pool1" in out and "192.0.2.10, 192.0.2.11" in out


def test_the_program_builds_and_measures_it_mock(fake_pool: Path) -> None:
    mocks = LabMocks()
    pulumi.runtime.set_mocks(mocks, project="gpulab", stack="test", preview=False)
    cfg = load_stack_file(fake_pool)
    exports: dict[str, Any] = {}

    @pulumi.runtime.test
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
            assert [h.address for h in made["hosts"]] == ["192.0.2.10", "192.0.2.11"]
            assert {h.gpu_path for h in made["hosts"]} == {"whole-machine"}
            assert made["hosts"][0].groups == ["gpu_hosts", "fake_pool"]
            assert exports["topology"] == "fake-pool"
            types = [r.typ for r in mocks.resources]
            assert types.count("gpulab:topology:FakePoolLab") == 1
            runs = [r for r in mocks.resources if r.typ.endswith(":WorkloadRun")]
            assert [r.inputs["execution_env"] for r in runs] == ["native", "docker"]

        return pulumi.Output.from_input(go())

    body()


def test_preflight_and_audit_are_its_own(fake_pool: Path) -> None:
    cfg = load_stack_file(fake_pool)
    (row,) = preflight(cfg)
    assert row.passed and row.name == "pool gpu-a" and row.detail == "2 machines listed"
    (row,) = audit(cfg)
    assert row.passed and row.detail == "nothing is built in a cloud"


def test_generated_files_and_docs_pick_it_up(fake_pool: Path) -> None:
    assert "local, fake-pool)" in schema.render_root()
    project = fake_pool.parent / "Pulumi.yaml"
    text = schema.targets()[project]
    assert "topology fake-pool: nothing in a cloud" in text and "    default: fake-pool" in text
    assert "pool:\n    type: string\n    description: the pool the machines are leased from" in (
        text
    )
    (row,) = [r for r in docs.topology_table() if r.startswith("| `fake-pool` |")]
    assert "whole-machine: bare-metal | native, docker |" in row
    header, _, *rows = docs.key_table()
    assert header.split(" | ")[-3] == "`fake-pool`"
    (pool,) = [r for r in rows if r.startswith("| `pool` |")]
    assert pool.split(" | ")[-3] == "R"  # required, and only there
    assert pool.split(" | ")[1:-3] == [""] * (len(names()) - 1)
