"""One option spec: a flag that several commands take is one definition (infra/cli/options.py),
so its help, default, type, metavar and variable cannot drift apart between commands."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from infra.cli import command, main

# Flags whose meaning differs on purpose from one command to another (a file here, a directory
# there; a label for `run local`, a stack elsewhere).
DIFFERENT_ON_PURPOSE = {
    ("--out",), ("--out-dir",), ("--suite",), ("--pool",), ("--image-size",), ("--stack", "-s"),
}  # fmt: skip


def _spec(param: Any) -> tuple[Any, ...]:
    return (
        param.help, param.default, param.metavar, param.envvar, param.hidden,
        param.is_flag, type(param.type_descriptor).__name__, tuple(param.secondary_opts),
    )  # fmt: skip


def options_by_flag() -> dict[tuple[str, ...], dict[str, tuple[Any, ...]]]:
    found: dict[tuple[str, ...], dict[str, tuple[Any, ...]]] = defaultdict(dict)

    def walk(cmd: Any, path: list[str]) -> None:
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
            return
        for p in cmd.params:
            if p.param_type_name == "option":
                found[tuple(sorted(p.opts + p.secondary_opts))][" ".join(path)] = _spec(p)

    walk(command(), [])
    return found


def test_a_flag_taken_by_several_commands_is_one_option() -> None:
    shared = {k: v for k, v in options_by_flag().items() if len(v) > 1}
    # the options of `run local` and `study run` are among them (six were defined twice)
    for flag in ("--results-dir", "--docker-host", "--base-image", "--docker-python"):
        assert {"run local", "study run"} <= set(shared[(flag,)]), flag
    drifted = {
        flag: by_command
        for flag, by_command in shared.items()
        if flag not in DIFFERENT_ON_PURPOSE and len(set(by_command.values())) > 1
    }
    assert drifted == {}


def test_study_run_refuses_a_bad_python_mode_as_run_local_does(capsys: Any) -> None:
    assert main(["study", "run", "local-first-run", "--docker-python", "conda"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'--docker-python'" in err[0] and "'conda'" in err[0], err
