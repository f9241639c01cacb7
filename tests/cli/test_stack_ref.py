"""One stack resolver for every command (infra/cli/stack_ref.py): a name or a path, as STACK
or -s/--stack; `preflight local` works where `up local` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.cli.stack_ref import PROJECT, resolve, resolve_value
from infra.errors import UsageError


def test_a_name_is_found_here_first_then_in_the_project(tmp_path: Path) -> None:
    ref = resolve("local", cwd=tmp_path)
    assert ref.name == "local" and ref.file == PROJECT / "Pulumi.local.yaml"
    assert ref.project == PROJECT
    mine = tmp_path / "Pulumi.local.yaml"
    mine.write_text("config:\n  gpulab:topology: local\n  gpulab:lab: mine\n")
    ref = resolve(None, "local", cwd=tmp_path)
    assert ref.file == mine and ref.project == PROJECT  # no Pulumi.yaml here: the project's


def test_a_path_names_its_stack_and_its_project(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: gpulab\nruntime: python\n")
    ref = resolve_value(str(tmp_path / "Pulumi.nova-pci.yaml"))
    assert (ref.name, ref.project) == ("nova-pci", tmp_path)
    ref = resolve_value("lab.yaml", cwd=tmp_path)
    assert ref.name == "lab" and ref.file == tmp_path / "lab.yaml"


@pytest.mark.parametrize(
    ("positional", "option", "needle"),
    [
        (None, None, "no stack given"),
        ("local", "nova-pci", "give the stack once"),
        ("no-such", None, "stack 'no-such' has no stack file Pulumi.no-such.yaml"),
        ("bad name!", None, "is not a stack name"),
    ],
)
def test_bad_stacks_are_one_line(positional: str | None, option: str | None, needle: str,
                                 tmp_path: Path) -> None:  # fmt: skip
    with pytest.raises(UsageError, match=needle) as exc:
        resolve(positional, option, cwd=tmp_path)
    assert "\n" not in str(exc.value)


def test_preflight_takes_a_stack_name_from_another_directory(gpulab, tmp_path: Path) -> None:
    """The issue's case: `preflight local` said "stack file 'local' does not exist"."""
    r = gpulab("preflight", "local", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["stack"] == "local"
    r = gpulab("validate", "-s", str(PROJECT / "Pulumi.local.yaml"), "--json", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["file"] == str(PROJECT / "Pulumi.local.yaml")
