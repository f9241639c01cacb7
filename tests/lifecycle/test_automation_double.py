"""The Automation API layer (infra.automation) against a DOUBLE of pulumi.automation.

The Pulumi CLI and engine cannot run here, so ``AutoDouble`` stands in for the
``pulumi.automation`` module: it records every call in order and answers with the real SDK's
result and error types (OutputValue, CommandResult, CommandError and its subclasses). What is
tested is our layer: order of operations, what is kept, and every error path's one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from pulumi.automation import (
    CommandError,
    CommandResult,
    ConcurrentUpdateError,
    ConfigValue,
    OutputValue,
    StackNotFoundError,
)

from infra.automation import SECRET_MASK, Lab, LabError, PulumiMissingError, engine_path
from infra.cli.errors import UsageError

REPO = Path(__file__).resolve().parents[2]


class StackDouble:
    def __init__(self, auto: AutoDouble, name: str) -> None:
        self.auto, self.name = auto, name

    def up(self, on_output=None, on_event=None, color=None, **kw: Any) -> Any:
        self.auto.calls.append(("up", self.name, *sorted(kw.items())))
        on_output("Updating (local):")
        on_output("  + gpulab:AnsibleRun site created")
        if self.auto.during_up is not None:  # what the engine does next (a test's script)
            self.auto.during_up(on_output, on_event)
        if self.auto.fail.get("up"):
            raise self.auto.fail["up"]
        self.auto.deployed = True
        return SimpleNamespace(outputs=self.auto.output_map(), summary=None)

    def destroy(self, on_output=None, color=None) -> Any:
        self.auto.calls.append(("destroy", self.name))
        on_output("Destroying (local):")
        if self.auto.fail.get("destroy"):
            raise self.auto.fail["destroy"]
        self.auto.deployed = False
        return SimpleNamespace(summary=None)

    def set_config(self, key: str, value: ConfigValue, path: bool = False) -> None:
        """As ``pulumi config set``: the value lands in the project's Pulumi.<stack>.yaml."""
        self.auto.calls.append(("set_config", self.name, key, value.value))
        stack_file = self.auto.work_dir / f"Pulumi.{self.name}.yaml"
        data = yaml.safe_load(stack_file.read_text()) or {}
        data.setdefault("config", {})[key] = value.value
        stack_file.write_text(yaml.safe_dump(data, sort_keys=False))

    def outputs(self) -> dict[str, OutputValue]:
        self.auto.calls.append(("outputs", self.name))
        return self.auto.output_map() if self.auto.deployed else {}

    def info(self, show_secrets: bool = True) -> Any:
        self.auto.calls.append(("info", self.name, show_secrets))
        if self.auto.last_update is not None:
            return self.auto.last_update
        return SimpleNamespace(
            kind="update",
            result="succeeded",
            start_time="t0",
            end_time="t1",
            resource_changes={"create": 3},
        )


class AutoDouble:
    """Stands in for the pulumi.automation module (same names, same error classes)."""

    CommandError = CommandError
    StackNotFoundError = StackNotFoundError
    ConcurrentUpdateError = ConcurrentUpdateError
    ConfigValue = ConfigValue

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.stacks: set[str] = set()
        self.deployed = False
        self.fail: dict[str, Exception] = {}
        self.opts: list[dict] = []
        self.work_dir = Path(".")
        self.during_up: Any = None  # called inside up(on_output, on_event), before a failure
        self.last_update: Any = None  # what info() answers, when set

    @staticmethod
    def LocalWorkspaceOptions(**kw: Any) -> dict:  # the SDK class name
        return kw

    def output_map(self) -> dict[str, OutputValue]:
        return {
            "topology": OutputValue("local", False),
            "lab": OutputValue("local", False),
            "hosts": OutputValue([{"name": "h0", "address": "127.0.0.1"}], False),
            "results": OutputValue({"status": "ok", "rows": []}, False),
            "kubeconfig": OutputValue("apiVersion: v1 token: s3cr3t", True),
        }

    def create_or_select_stack(self, stack_name: str, work_dir: str, opts: dict) -> StackDouble:
        self.calls.append(("create_or_select", stack_name))
        self.opts.append(opts)
        self.work_dir = Path(work_dir)
        self.stacks.add(stack_name)
        return StackDouble(self, stack_name)

    def select_stack(self, stack_name: str, work_dir: str, opts: dict) -> StackDouble:
        self.calls.append(("select", stack_name))
        self.opts.append(opts)
        self.work_dir = Path(work_dir)
        if stack_name not in self.stacks:
            raise StackNotFoundError(CommandResult("", f"no stack named '{stack_name}' found", 255))
        return StackDouble(self, stack_name)


def engine_error(cls: type[CommandError], stderr: str) -> CommandError:
    return cls(CommandResult("Updating (local):\n", stderr, 255))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the project, also the working directory: results go to ./results/<stack>."""
    for name in ("Pulumi.yaml", "Pulumi.local.yaml"):
        shutil.copy(REPO / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPULAB_RESULTS", raising=False)
    return tmp_path


def make_lab(project: Path, auto: AutoDouble, lines: list[str] | None = None) -> Lab:
    out = lines if lines is not None else []
    return Lab("local", repo=project, auto=auto, on_output=out.append)


def test_up_streams_progress_and_masks_secret_outputs(project: Path) -> None:
    auto, lines = AutoDouble(), list[str]()
    outputs = make_lab(project, auto, lines).up()
    assert auto.calls == [("create_or_select", "local"), ("up", "local")]
    assert auto.opts[0]["work_dir"] == str(project)  # this repository's project, local program
    assert auto.opts[0]["env_vars"] == {
        "GPULAB_RESULTS": str(project / "results"),
        "PATH": engine_path(),  # this interpreter's bin first: the program runs on it
    }
    assert engine_path().split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert "  + gpulab:AnsibleRun site created" in lines
    assert outputs["kubeconfig"] == SECRET_MASK
    assert outputs["results"] == {"status": "ok", "rows": []}
    saved = list((project / "results" / "local").glob("outputs-*-up.json"))
    assert len(saved) == 1 and "s3cr3t" not in saved[0].read_text()


def test_rebuild_is_destroy_then_up_with_the_same_config(project: Path) -> None:
    auto = AutoDouble()
    lab = make_lab(project, auto)
    lab.up()
    config_before = (project / "Pulumi.local.yaml").read_text()
    auto.calls.clear()
    lab.rebuild()
    ops = [c[0] for c in auto.calls]
    assert ops == ["select", "outputs", "destroy", "create_or_select", "up"]
    assert ops.index("destroy") < ops.index("up")
    assert (project / "Pulumi.local.yaml").read_text() == config_before
    assert auto.opts[-1] == auto.opts[-2]  # same workspace options for both halves


def test_down_keeps_results_and_the_stack(project: Path) -> None:
    auto = AutoDouble()
    lab = make_lab(project, auto)
    lab.up()
    old = project / "results" / "local" / "20260101T000000Z-abc.jsonl"
    old.write_text('{"kept": true}\n')
    saved = lab.down()
    assert saved is not None
    kept = json.loads(Path(saved).read_text())
    assert kept["results"]["status"] == "ok" and kept["kubeconfig"] == SECRET_MASK
    assert old.read_text() == '{"kept": true}\n'
    assert ("destroy", "local") in auto.calls
    assert "local" in auto.stacks  # destroy, never `stack rm`


def test_status_and_outputs(project: Path) -> None:
    auto = AutoDouble()
    lab = make_lab(project, auto)
    lab.up()
    st = lab.status()
    assert st["last_update"]["result"] == "succeeded"
    assert st["hosts"] == 1 and st["results_status"] == "ok"
    assert "results" in st["outputs"]
    assert ("info", "local", False) in auto.calls  # never asks for secrets in config
    assert lab.outputs()["kubeconfig"] == SECRET_MASK


def test_status_of_a_stack_never_built_says_so(project: Path) -> None:
    with pytest.raises(
        UsageError, match=r"stack 'local' does not exist yet: run `gpulab up local`"
    ):
        make_lab(project, AutoDouble()).status()


def test_unknown_stack_names_its_stack_file(project: Path) -> None:
    auto = AutoDouble()
    with pytest.raises(UsageError, match=r"Pulumi\.nope\.yaml; known stacks: local"):
        Lab("nope", repo=project, auto=auto, on_output=print).up()
    assert auto.calls == []


def test_bad_stack_config_stops_before_the_engine(project: Path) -> None:
    pytest.importorskip("infra.config")
    (project / "Pulumi.local.yaml").write_text(
        "config:\n  gpulab:topology: moon\n  gpulab:lab: x\n"
    )
    auto = AutoDouble()
    with pytest.raises(UsageError, match="gpulab:topology"):
        make_lab(project, auto).up()
    assert auto.calls == []


def test_engine_failure_is_one_line(project: Path) -> None:
    auto = AutoDouble()
    auto.fail["up"] = engine_error(
        CommandError, "warning: x\nerror: update failed: AnsibleRun site: host 'h0' failed\n"
    )
    with pytest.raises(LabError) as err:
        make_lab(project, auto).up()
    assert (
        str(err.value) == "up local failed: error: update failed: AnsibleRun site: host 'h0' failed"
    )
    assert "\n" not in str(err.value)


def test_failed_up_keeps_state_and_down_destroys_it(project: Path) -> None:
    """A failing step leaves the resources made so far in the state (the engine's behaviour,
    here the DOUBLE's): the stack is not removed and `down` runs the destroy."""
    auto = AutoDouble()
    lab = make_lab(project, auto)
    lab.up()
    auto.fail["up"] = engine_error(CommandError, "error: update failed\n")
    with pytest.raises(LabError):
        lab.up()
    assert auto.deployed and "local" in auto.stacks  # nothing destroyed behind the user's back
    assert [c[0] for c in auto.calls].count("destroy") == 0
    lab.down()
    assert auto.calls[-1] == ("destroy", "local") and not auto.deployed


def test_concurrent_update_is_named(project: Path) -> None:
    auto = AutoDouble()
    lab = make_lab(project, auto)
    lab.up()
    auto.fail["destroy"] = engine_error(ConcurrentUpdateError, "error: [409] Conflict")
    with pytest.raises(LabError, match="another update is in progress"):
        lab.rebuild()
    assert ("up", "local") not in auto.calls[-2:]  # rebuild stops: no up after a failed destroy


def test_without_the_pulumi_cli_one_line_with_install_hint(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "nohome"))
    with pytest.raises(
        PulumiMissingError, match=r"not installed: install it with .*get\.pulumi\.com"
    ):
        Lab("local", repo=project).up()


def test_cli_without_pulumi_exits_2_with_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, PATH="/usr/bin:/bin", PULUMI_HOME=str(tmp_path))
    if shutil.which("pulumi", path=env["PATH"]):
        pytest.skip("a Pulumi CLI is installed in /usr/bin")
    r = subprocess.run(
        [sys.executable, "-m", "infra.cli", "down", "local"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0
    assert "the Pulumi CLI is not installed" in r.stderr and "get.pulumi.com" in r.stderr


def test_cli_commands_through_the_double(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gpulab up|status|outputs|rebuild|down` wired to Lab (the engine is the DOUBLE)."""
    from rich.console import Console

    from infra.cli import lifecycle, main

    auto = AutoDouble()

    def lab(stack: str, backend: str | None):
        env = {"PULUMI_BACKEND_URL": backend} if backend else {}
        return Lab(stack, repo=project, auto=auto, on_output=print, env=env), Console()

    monkeypatch.setattr(lifecycle, "_lab", lab)
    assert main(["up", "local", "--state-url", "file:///tmp/state"]) == 0
    out = capsys.readouterr().out
    assert "gpulab:AnsibleRun site created" in out and '"kubeconfig": "[secret]"' in out
    assert auto.opts[-1]["env_vars"] == {
        "PULUMI_BACKEND_URL": "file:///tmp/state",
        "GPULAB_RESULTS": str(project / "results"),  # where the program's workload runs write
        "PATH": engine_path(),
    }
    assert main(["up", "local", "--refresh"]) == 0
    assert auto.calls[-1] == ("up", "local", ("refresh", True))
    assert main(["measure", "local"]) == 0
    assert [c[0] for c in auto.calls[-2:]] == ["set_config", "up"]
    assert "gpulab:measure_id = " in capsys.readouterr().out
    assert main(["outputs", "local"]) == 0
    assert json.loads(capsys.readouterr().out)["topology"] == "local"
    assert main(["status", "local"]) == 0
    assert json.loads(capsys.readouterr().out)["last_update"]["result"] == "succeeded"
    assert main(["rebuild", "local"]) == 0
    assert main(["down", "local"]) == 0
    assert "last outputs kept in" in capsys.readouterr().out
    auto.fail["up"] = engine_error(CommandError, "error: boom\n")
    assert main(["up", "local"]) == 1
    err = capsys.readouterr().err
    assert err == "gpulab: error: up local failed: error: boom\n"


def test_results_follow_gpulab_results(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One rule (infra.paths): $GPULAB_RESULTS, else ./results, then <stack>/; the engine is
    told the same root so the program's workload runs write where the commands read."""
    elsewhere = project / "elsewhere"
    monkeypatch.setenv("GPULAB_RESULTS", str(elsewhere))
    auto = AutoDouble()
    make_lab(project, auto).up()
    assert auto.opts[0]["env_vars"]["GPULAB_RESULTS"] == str(elsewhere)
    assert list((elsewhere / "local").glob("outputs-*-up.json"))
    assert not (project / "results").exists()


def test_up_refresh_passes_refresh_to_the_engine(project: Path) -> None:
    auto = AutoDouble()
    make_lab(project, auto).up(refresh=True)
    assert auto.calls == [("create_or_select", "local"), ("up", "local", ("refresh", True))]


def test_measure_of_a_lab_never_built_says_so(project: Path) -> None:
    auto = AutoDouble()
    auto.stacks.add("local")  # the stack exists, nothing is deployed
    with pytest.raises(UsageError, match=r"has no lab built: run `gpulab up local`"):
        make_lab(project, auto).measure()
    assert not [c for c in auto.calls if c[0] in ("set_config", "up")]


def test_measure_sets_a_fresh_measure_id_then_up(project: Path) -> None:
    auto = AutoDouble()
    lab = make_lab(project, auto)
    lab.up()
    auto.calls.clear()
    lab.measure()
    assert [c[0] for c in auto.calls] == ["select", "outputs", "set_config", "up"]
    _, _, key, first = auto.calls[2]
    assert key == "gpulab:measure_id"
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{6}Z", first)
    lab.measure()
    second = [c for c in auto.calls if c[0] == "set_config"][-1][3]
    assert second != first  # every measure is a new id
    assert list((project / "results" / "local").glob("outputs-*-measure.json"))


def test_measure_reruns_only_the_workload_runs_mock(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The measure_id that `gpulab measure` writes into the stack config changes every
    WorkloadRun's triggers and no AnsibleRun input: the program runs under Pulumi's MOCK
    runtime (no engine here) before and after, from the stack file the double updated."""
    import pulumi

    from infra.config import raw_from_stack_file
    from tests.pulumi.entry import run_entry_point

    def program_inputs() -> dict[str, dict[str, Any]]:
        raw = raw_from_stack_file(project / "Pulumi.local.yaml")
        seen: dict[str, dict[str, Any]] = {}

        @pulumi.runtime.test
        def body() -> Any:
            monitor, _ = run_entry_point("local", raw, monkeypatch)

            async def go() -> None:
                from pulumi.runtime.stack import wait_for_rpcs

                await wait_for_rpcs(await_all_outstanding_tasks=False)
                for reg in monitor.regs:
                    if reg.typ.startswith("pulumi-python:dynamic/gpulab:"):
                        inputs = {k: v for k, v in reg.inputs.items() if k != "__provider"}
                        seen[f"{reg.typ.rsplit(':', 1)[1]} {reg.name}"] = inputs

            return pulumi.Output.from_input(go())

        body()
        monkeypatch.chdir(project)
        return seen

    auto = AutoDouble()
    lab = make_lab(project, auto)
    lab.up()
    before = program_inputs()
    lab.measure()
    after = program_inputs()
    measure_id = [c for c in auto.calls if c[0] == "set_config"][-1][3]
    assert (
        sorted(before)
        == sorted(after)
        == ["AnsibleRun local-site", "WorkloadRun local-workloads-native"]
    )
    assert after["AnsibleRun local-site"] == before["AnsibleRun local-site"]
    work_before, work_after = (x["WorkloadRun local-workloads-native"] for x in (before, after))
    assert work_before["triggers"] == [""] and work_after["triggers"] == [measure_id]
    assert {k: v for k, v in work_after.items() if k != "triggers"} == {
        k: v for k, v in work_before.items() if k != "triggers"
    }
