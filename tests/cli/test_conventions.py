"""CLI conventions of every command (docs/cli.md): -h, --version, completion, no <bool>/<str>
metavars, examples in every command's help, one name per meaning, the exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.cli.conftest import GPULAB, REPO

COMMANDS = [
    ["run", "local"], ["up"], ["measure"], ["down"], ["rebuild"], ["status"], ["outputs"],
    ["bench"], ["data", "imagenet-like"], ["data", "mnist-like"], ["validate"], ["preflight"],
    ["audit"], ["report"], ["inventory"], ["compare"], ["export"], ["list"], ["init"],
    ["doctor"], ["docs"], ["study", "run"], ["study", "status"], ["study", "report"],
]  # fmt: skip
STACK_COMMANDS = ["up", "measure", "down", "rebuild", "status", "outputs", "validate",
                  "preflight", "audit", "inventory"]  # fmt: skip
JSON_COMMANDS = [
    "validate",
    "preflight",
    "audit",
    "outputs",
    "bench",
    "report",
    "up",
    "measure",
    "rebuild",
    "status",
    "down",
    "compare",
    "list",
    "init",
    "doctor",
    "docs",
]


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    """`gpulab <command> -h` of every command (run side by side), by command line."""
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200")

    def one(command: list[str]) -> str:
        r = subprocess.run([GPULAB, *command, "-h"], capture_output=True, text=True, env=env,
                           timeout=120)  # fmt: skip
        assert r.returncode == 0, (command, r.stderr)
        return r.stdout

    with ThreadPoolExecutor(4) as pool:
        return dict(zip((" ".join(c) for c in COMMANDS), pool.map(one, COMMANDS), strict=True))


def test_up_short_help_has_examples_and_plain_metavars(gpulab) -> None:
    """The fast one of the help checks (the slow ones cover every command)."""
    r = gpulab("up", "-h")
    assert r.returncode == 0 and "Examples:" in r.stdout and "gpulab up local" in r.stdout
    assert "[STACK]" in r.stdout and "--state-url" in r.stdout and "URL" in r.stdout
    assert not re.search(r"<(bool|str)>", r.stdout), r.stdout


def test_version_comes_from_the_package_metadata(gpulab) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    for flag in ("--version", "-V"):
        r = gpulab(flag)
        assert r.returncode == 0 and r.stdout == f"gpulab {version}\n", r


def test_short_help_and_completion(gpulab) -> None:
    r = gpulab("-h")
    assert r.returncode == 0
    for needle in ("--install-completion", "--show-completion", "--version", "inventory"):
        assert needle in r.stdout, needle
    # as typed in a bash: the completion script of the shell it runs in
    shown = subprocess.run(["bash", "-c", f"{GPULAB} --show-completion"], capture_output=True,
                           text=True, timeout=120, env=dict(os.environ, NO_COLOR="1"))  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "complete " in shown.stdout and "_GPULAB_COMPLETE" in shown.stdout


@pytest.mark.slow  # one gpulab subprocess per command (about 40 s on 2 busy cores)
@pytest.mark.parametrize("command", [" ".join(c) for c in COMMANDS])
def test_every_command_has_short_help_examples_and_no_bare_type_metavars(
    helps: dict[str, str], command: str
) -> None:
    out = helps[command]
    assert "Examples:" in out
    assert f"gpulab {command}" in out.split("Examples:")[1]
    assert not re.search(r"<(bool|str|int|path|float)>", out), out


@pytest.mark.slow  # one gpulab subprocess per command (about 40 s on 2 busy cores)
def test_stack_commands_take_a_name_or_dash_s(helps: dict[str, str]) -> None:
    for command in STACK_COMMANDS:
        out = helps[command]
        assert "[STACK]" in out and "--stack" in out and "-s" in out, command
        if command not in ("validate", "preflight", "audit"):
            assert "--state-url" in out and "PULUMI_BACKEND_URL" in out, command
            assert "--backend" not in out, command


@pytest.mark.slow  # one gpulab subprocess per command (about 40 s on 2 busy cores)
def test_json_is_offered(helps: dict[str, str]) -> None:
    for command in JSON_COMMANDS:
        assert "--json" in helps[command], command


@pytest.mark.slow  # one gpulab subprocess per command (about 40 s on 2 busy cores)
def test_out_is_a_file_and_out_dir_a_directory(helps: dict[str, str]) -> None:
    for command in ("report", "data imagenet-like", "data mnist-like"):
        assert "--out-dir" in helps[command] and not re.search(r"--out\b(?!-)", helps[command])
    for command in ("bench", "inventory"):
        out = helps[command]
        assert re.search(r"--out\s+FILE", out) and "--out-dir" not in out


@pytest.mark.slow  # one gpulab subprocess per command (about 40 s on 2 busy cores)
def test_bench_names_the_keras_backend_and_lists_the_choices(helps: dict[str, str]) -> None:
    out = helps["bench"]
    assert "--keras-backend" in out and "tensorflow|jax|torch" in out
    assert not re.search(r"--backend\b", out)
    assert "1..1000000" in out  # --steps shows its range


@pytest.mark.slow  # one gpulab subprocess per command (about 40 s on 2 busy cores)
def test_exit_2_is_one_line_for_click_errors_too(gpulab) -> None:
    for args in (["no-such-command"], ["bench", "--model", "alexnet", "--steps", "0"],
                 ["bench", "--model", "alexnet", "--keras-backend", "mxnet"],
                 ["data", "mnist-like", "--out-dir", "x", "--train", "ten"],
                 ["up", "local", "--stack", "nova-pci"], ["validate"]):  # fmt: skip
        r = gpulab(*args)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2, (args, r.stderr)
        assert len(lines) == 1 and lines[0].startswith("gpulab: error: "), (args, lines)
        assert "Traceback" not in r.stderr


def test_no_hidden_old_option_names(gpulab, tmp_path: Path) -> None:
    """Version 0.1.0 keeps no old names: --backend (bench, the lab commands) and --out (report,
    data) are unknown options, refused in one line before anything runs."""
    for args, line in (
        (["bench", "--model", "mnist_cnn", "--backend", "jax"],
         "unknown option or argument '--backend' for gpulab bench"),
        (["up", "local", "--backend", "file:///tmp/state"],
         "No such option: --backend (Possible options: --stack)"),
        (["report", str(tmp_path), "--out", str(tmp_path / "rep")],
         "No such option: --out (Possible options: --out-dir)"),
        (["data", "mnist-like", "--out", str(tmp_path / "d")],
         "No such option: --out (Possible options: --out-dir)"),
    ):  # fmt: skip
        r = gpulab(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.splitlines() == [f"gpulab: error: {line}"], (args, r.stderr)
    assert not (tmp_path / "rep").exists() and not (tmp_path / "d").exists()


def test_exit_codes_are_documented() -> None:
    doc = (REPO / "docs" / "cli.md").read_text()
    for code in ("0", "1", "2", "130", "143"):
        assert re.search(rf"^\| `{code}` \|", doc, re.M), code
    for command in {c[0] for c in COMMANDS}:
        assert f"gpulab {command}" in doc, command


def test_preflight_and_validate_json_on_stdout_only(gpulab) -> None:
    for command in ("validate", "preflight"):
        r = gpulab(command, "local", "--json")
        assert r.returncode == 0, r.stderr
        data = json.loads(r.stdout)["data"]  # stdout is exactly one JSON document
        assert data["stack"] == "local" and data["topology"] == "local"
    checks = json.loads(gpulab("preflight", "-s", "local", "--json").stdout)["data"]["checks"]
    assert checks and all({"name", "passed", "detail", "fix"} <= set(c) for c in checks)
