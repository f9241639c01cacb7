"""``GPULAB_ANSIBLE_STRATEGY`` as a user sets it: in the environment of ``gpulab up``.

The Pulumi CLI and engine cannot run here, so ``gpulab up`` (``infra.cli.main``, the console
script's function) drives a DOUBLE of pulumi.automation whose ``up`` is the engine double of
tests/e2e/engine.py: the real program, the dynamic resources in the REAL provider host
(tests/parts/provider_host.py), started with this process's environment and the Lab's
``env_vars`` over it, as the Pulumi CLI hands both to its plugins. The site run is real Ansible
on the ``local`` topology's one host (this machine, local connection) and stops in its second
play ("Discover GPUs", the first one under the configured strategy: wait.yml's play names
``strategy: linear`` itself) at lab_network's proxy check (the stack's proxy is a closed port),
or, where sudo is missing or asks for a password, at that play's first become task: nothing on
this machine is changed.

What Ansible ran is read from Ansible itself: a callback plugin (enabled through the same
environment) records, for each play, ``play.strategy`` and the class of the strategy object
that runs the play (found on the call stack). Mitogen's strategies are Ansible's linear/free
with ``ansible_mitogen.strategy.StrategyMixin`` mixed in; without the variable the same run
shows Mitogen's, so the check fails if the variable were dropped on the way.

A bad value stops ``gpulab up`` before anything is made: one line naming the variable, exit 2,
no project files, no stack, no state.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pulumi.automation import (
    CommandError,
    CommandResult,
    ConcurrentUpdateError,
    ConfigValue,
    StackNotFoundError,
)

import infra.automation
from infra.cli import main
from infra.config import raw_from_stack_file
from tests.e2e.engine import Engine
from tests.parts.provider_host import ProviderHost

GPULAB = str(Path(sys.executable).parent / "gpulab")
STACK = "stratlab"
PLAY = "Discover GPUs"  # site.yml's first play under the configured strategy
LINEAR = "ansible.plugins.strategy.linear.StrategyModule"
MITOGEN = "ansible_mitogen.strategy.StrategyMixin"

PROBE = '''"""Test probe: the strategy each play runs under, as Ansible loaded it."""

from __future__ import annotations

import json
import os
import sys

from ansible.plugins.callback import CallbackBase
from ansible.plugins.strategy import StrategyBase

DOCUMENTATION = """
name: strategy_probe
type: aggregate
short_description: write the strategy that runs each play
description: [a gpulab test probe]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "strategy_probe"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self._play = None
        self._seen = set()

    def v2_playbook_on_play_start(self, play):
        self._play = play

    def v2_playbook_on_task_start(self, task, is_conditional):
        name = self._play.get_name()
        if name in self._seen:
            return
        self._seen.add(name)
        strategy = None  # the strategy object running this play: it sent this callback
        frame = sys._getframe()
        while frame is not None and strategy is None:
            if isinstance(frame.f_locals.get("self"), StrategyBase):
                strategy = frame.f_locals["self"]
            frame = frame.f_back
        mro = [] if strategy is None else type(strategy).__mro__
        row = {"play": name, "strategy": self._play.strategy,
               "class": [f"{c.__module__}.{c.__qualname__}" for c in mro]}
        with open(os.environ["STRATEGY_PROBE_OUT"], "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\\n")
'''


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stack_text(lab: str, proxy_port: int) -> str:
    return (
        f"config:\n  gpulab:topology: local\n  gpulab:lab: {lab}\n"
        f"  gpulab:proxy:\n    http: http://127.0.0.1:{proxy_port}\n"
        "  gpulab:site:\n    lab_network_timeout_s: 1\n"
    )


class _Stack:
    def __init__(self, auto: EngineAuto, name: str, work_dir: Path) -> None:
        self.auto, self.name, self.work_dir = auto, name, work_dir

    def up(self, on_output: Any = None, on_event: Any = None, color: Any = None, **kw: Any) -> Any:
        env = dict(self.auto.env_vars)
        engine = Engine(lambda: ProviderHost(env=env, stack=self.name), log=on_output)
        result = engine.up(
            self.name, raw_from_stack_file(self.work_dir / f"Pulumi.{self.name}.yaml")
        )
        self.auto.results.append(result)
        if result.error is not None:
            raise CommandError(CommandResult("Updating:\n", f"error: {result.error}", 255))
        return SimpleNamespace(outputs={}, summary=None)


class EngineAuto:
    """Stands in for pulumi.automation: its stacks' ``up`` runs the engine double."""

    CommandError = CommandError
    StackNotFoundError = StackNotFoundError
    ConcurrentUpdateError = ConcurrentUpdateError
    ConfigValue = ConfigValue

    def __init__(self) -> None:
        self.env_vars: dict[str, str] = {}
        self.results: list[Any] = []

    @staticmethod
    def LocalWorkspaceOptions(**kw: Any) -> dict[str, Any]:  # the SDK's class name
        return kw

    def create_or_select_stack(self, stack_name: str, work_dir: str, opts: Any) -> _Stack:
        # the Pulumi CLI runs with this process's environment and env_vars over it; its
        # plugins (the provider host) inherit both
        self.env_vars = dict(opts["env_vars"])
        return _Stack(self, stack_name, Path(work_dir))


@pytest.mark.integration
@pytest.mark.parametrize("strategy", ["linear", None], ids=["linear", "default"])
def test_up_runs_ansible_with_the_strategy_of_its_environment(
    strategy: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / f"Pulumi.{STACK}.yaml").write_text(stack_text(STACK, closed_port()))
    plugins = tmp_path / "callbacks"
    plugins.mkdir()
    (plugins / "strategy_probe.py").write_text(PROBE)
    probe = tmp_path / "probe.jsonl"
    monkeypatch.chdir(lab)
    monkeypatch.setenv("GPULAB_RESULTS", str(tmp_path / "results"))
    if strategy is None:
        monkeypatch.delenv("GPULAB_ANSIBLE_STRATEGY", raising=False)
    else:
        monkeypatch.setenv("GPULAB_ANSIBLE_STRATEGY", strategy)
    monkeypatch.setenv("ANSIBLE_CALLBACK_PLUGINS", str(plugins))
    monkeypatch.setenv("ANSIBLE_CALLBACKS_ENABLED", "strategy_probe")
    monkeypatch.setenv("STRATEGY_PROBE_OUT", str(probe))
    auto = EngineAuto()

    class EngineLab(infra.automation.Lab):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, auto=auto, **kw)

    monkeypatch.setattr(infra.automation, "Lab", EngineLab)

    assert main(["up", STACK]) == 1
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("gpulab: error:")]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"gpulab: error: up {STACK} failed: "), err
    assert "site.yml: host 'localhost' failed at task " in lines[0], err
    assert "Traceback" not in err
    (result,) = auto.results
    ops = {s.name: s.op for s in result.steps}
    assert ops[f"{STACK}-site"] == "failed" and f"{STACK}-workloads-native" not in ops, ops

    rows = {r["play"]: r for r in map(json.loads, probe.read_text().splitlines())}
    assert list(rows) == ["Wait for the hosts", PLAY], rows  # stopped in the second play
    assert rows["Wait for the hosts"]["strategy"] == "linear"  # wait.yml's own
    ran = rows[PLAY]
    if strategy == "linear":
        assert ran["strategy"] == "linear", ran
        assert ran["class"][0] == LINEAR and not any("mitogen" in c for c in ran["class"]), ran
    else:
        assert ran["strategy"] == "mitogen_linear", ran
        assert MITOGEN in ran["class"] and LINEAR in ran["class"], ran


def test_up_with_an_unknown_strategy_stops_before_anything_is_made(tmp_path: Path) -> None:
    """The console script, as a user runs it: exit 2, one line naming the variable, no
    traceback; the directory is not made a project, no state is written (--state-url)."""
    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / f"Pulumi.{STACK}.yaml").write_text(stack_text(STACK, 9))
    state = tmp_path / "state"
    state.mkdir()
    env = {**os.environ, "GPULAB_ANSIBLE_STRATEGY": "bogus", "GPULAB_RESULTS": str(lab / "res")}
    for args in (["up", STACK], ["up", STACK, "--refresh"], ["measure", STACK],
                 ["rebuild", STACK], ["down", STACK]):  # fmt: skip
        r = subprocess.run(
            [GPULAB, *args, "--state-url", state.as_uri()], cwd=lab, env=env,
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert r.returncode == 2, (args, r.stderr)
        assert r.stdout == ""
        assert r.stderr == (
            "gpulab: error: GPULAB_ANSIBLE_STRATEGY='bogus' is not one of mitogen_linear, "
            "mitogen_free, linear, free\n"
        ), args
    assert sorted(p.name for p in lab.iterdir()) == [f"Pulumi.{STACK}.yaml"]
    assert list(state.iterdir()) == []


def test_up_with_an_unknown_strategy_never_reaches_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same in process, with the engine doubled: no stack is created or selected."""
    from tests.lifecycle.test_automation_double import AutoDouble

    (tmp_path / f"Pulumi.{STACK}.yaml").write_text(stack_text(STACK, 9))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPULAB_ANSIBLE_STRATEGY", "mitogen")
    auto = AutoDouble()

    class DoubleLab(infra.automation.Lab):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, auto=auto, **kw)

    monkeypatch.setattr(infra.automation, "Lab", DoubleLab)
    for command in ("up", "measure", "rebuild", "down"):
        assert main([command, STACK]) == 2
        assert capsys.readouterr().err == (
            "gpulab: error: GPULAB_ANSIBLE_STRATEGY='mitogen' is not one of mitogen_linear, "
            "mitogen_free, linear, free\n"
        )
    assert auto.calls == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"Pulumi.{STACK}.yaml"]
