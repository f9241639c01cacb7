"""``gpulab validate <stack-file>``: checks stack files without Pulumi; one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infra.cli import main
from tests.pulumi.mocks import REPO, STACKS


@pytest.mark.parametrize("topology", sorted(STACKS))
def test_validate_accepts_every_example_stack(
    topology: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(STACKS[topology])]) == 0
    out = capsys.readouterr().out
    assert f"valid {topology} stack" in out and "gpulab:lab" in out
    assert "mock-" not in out


def test_validate_shows_secrets_only_as_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(STACKS["vsphere-gpu"])]) == 0
    out = capsys.readouterr().out
    assert "(secret, set)" in out and "REPLACE_ME" not in out


def test_validate_bad_stack_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    text = (
        STACKS["nova-pci"].read_text().replace("gpulab:pci_alias: p100:1", "gpulab:pci_alias: p100")
    )
    bad.write_text(text.replace("gpulab:host_count: 2", "gpulab:host_count: 0"))
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(
        "gpulab: error: gpulab:host_count must be an integer >= 1, got 0; "
        "gpulab:pci_alias must be <alias>:<count>"
    )


def test_validate_missing_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "Pulumi.x.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_gpulab_console_script_validate_by_stack_name() -> None:
    gpulab = Path(sys.executable).with_name("gpulab")
    cmd = [str(gpulab)] if gpulab.exists() else [sys.executable, "-m", "infra.cli"]
    ok = subprocess.run(
        [*cmd, "validate", "local"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    assert "valid local stack" in ok.stdout
    bad = subprocess.run(
        [*cmd, "validate", "no-such-stack"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == "gpulab: error: stack file 'no-such-stack' does not exist"
