"""The gpulab console script's error and exit-code conventions."""

from __future__ import annotations

import subprocess
import sys

import typer

import infra.cli
from infra.cli.errors import UsageError


def _app_with(fn) -> typer.Typer:
    app = typer.Typer()
    app.command("x")(fn)
    app.command("y")(lambda: None)
    return app


def test_exit_code_of_a_command_is_propagated(monkeypatch):
    def x() -> None:
        raise typer.Exit(3)

    monkeypatch.setattr(infra.cli, "app", _app_with(x))
    assert infra.cli.main(["x"]) == 3


def test_usage_error_is_one_line_and_exit_2(monkeypatch, capsys):
    def x() -> None:
        raise UsageError("gpulab:lab_cidr '10.0.0.0/33' is not a CIDR")

    monkeypatch.setattr(infra.cli, "app", _app_with(x))
    assert infra.cli.main(["x"]) == 2
    err = capsys.readouterr().err
    assert err == "gpulab: error: gpulab:lab_cidr '10.0.0.0/33' is not a CIDR\n"


def test_unknown_command_is_a_usage_error_without_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "infra.cli", "no-such-command"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "no-such-command" in proc.stderr


def test_help_lists_every_command_group():
    proc = subprocess.run(
        [sys.executable, "-m", "infra.cli", "--help"], capture_output=True, text=True
    )
    assert proc.returncode == 0
    for command in ("run", "up", "down", "bench", "data", "validate", "preflight", "report"):
        assert command in proc.stdout, command
