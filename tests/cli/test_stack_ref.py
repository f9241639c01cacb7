"""One stack resolver for every command (infra/cli/stack_ref.py): a name or a path, as STACK
or -s/--stack; the current directory first, then the project; an error names where it looked;
`validate`, `preflight` and `up` of one name read the same file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from infra.cli.stack_ref import resolve, resolve_value
from infra.errors import UsageError
from infra.paths import PROJECT

LOCAL = "config:\n  gpulab:topology: local\n  gpulab:lab: {lab}\n"


def test_a_name_is_found_here_first_then_in_the_project(tmp_path: Path) -> None:
    ref = resolve("local", cwd=tmp_path)
    assert ref.name == "local" and ref.file == PROJECT / "Pulumi.local.yaml"
    assert ref.project == PROJECT
    mine = tmp_path / "Pulumi.local.yaml"
    mine.write_text(LOCAL.format(lab="mine"))
    ref = resolve(None, "local", cwd=tmp_path)
    assert ref.file == mine and ref.project == tmp_path  # the engine runs where the file is


def test_a_path_names_its_stack_and_its_project(tmp_path: Path) -> None:
    ref = resolve_value(str(tmp_path / "Pulumi.nova-pci.yaml"))
    assert (ref.name, ref.project, ref.pulumi_named) == ("nova-pci", tmp_path, True)
    ref = resolve_value("lab.yaml", cwd=tmp_path)
    assert ref.name == "lab" and ref.file == tmp_path / "lab.yaml" and not ref.pulumi_named


def test_a_directory_names_its_one_stack_file(tmp_path: Path) -> None:
    ref = resolve_value(str(PROJECT / "examples" / "nova-pci"), cwd=tmp_path)
    assert ref.file == PROJECT / "examples" / "nova-pci" / "Pulumi.nova-pci.yaml"
    (tmp_path / "two").mkdir()
    for name in ("a", "b"):
        (tmp_path / "two" / f"Pulumi.{name}.yaml").write_text(LOCAL.format(lab=name))
    with pytest.raises(UsageError, match=r"several stack files \(Pulumi.a.yaml, Pulumi.b.yaml\)"):
        resolve_value("two/", cwd=tmp_path)


@pytest.mark.parametrize(
    ("positional", "option", "needle"),
    [
        (None, None, "no stack given"),
        ("local", "nova-pci", "give the stack once"),
        ("no-such", None, "stack 'no-such' has no stack file Pulumi.no-such.yaml: looked in "),
        ("bad name!", None, "is not a stack name"),
    ],
)
def test_bad_stacks_are_one_line(positional: str | None, option: str | None, needle: str,
                                 tmp_path: Path) -> None:  # fmt: skip
    with pytest.raises(UsageError, match=needle) as exc:
        resolve(positional, option, cwd=tmp_path)
    assert "\n" not in str(exc.value)


def test_the_error_names_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as exc:
        resolve("mylab", cwd=tmp_path)
    assert f"looked in {tmp_path} (here) and {PROJECT} (the gpulab project)" in str(exc.value)
    assert "`gpulab init TOPOLOGY -s mylab` writes one" in str(exc.value)


def test_preflight_takes_a_stack_name_from_another_directory(gpulab, tmp_path: Path) -> None:
    """The issue's case: `preflight local` said "stack file 'local' does not exist"."""
    r = gpulab("preflight", "local", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["data"]["stack"] == "local"
    r = gpulab("validate", "-s", str(PROJECT / "Pulumi.local.yaml"), "--json", cwd=tmp_path)
    assert r.returncode == 0
    assert json.loads(r.stdout)["data"]["file"] == str(PROJECT / "Pulumi.local.yaml")


@pytest.mark.integration
def test_validate_preflight_and_up_read_the_same_file_here(gpulab, tmp_path: Path) -> None:
    """The issue's case: `gpulab up mylab` could not find the Pulumi.mylab.yaml that
    `validate` and `preflight` had just accepted in the current directory. Now up resolves it
    too and goes on to the engine: here, the Pulumi CLI is missing (the line says how to
    install it), and nothing was written (exit 2 changes nothing)."""
    (tmp_path / "Pulumi.mylab.yaml").write_text(LOCAL.format(lab="mylab"))
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": str(Path(shutil.which("sh") or "/bin/sh").parent)}
    for command in ("validate", "preflight"):
        r = gpulab(command, "mylab", cwd=tmp_path, env=env)
        assert r.returncode == 0, (command, r.stderr)
    r = gpulab("up", "mylab", cwd=tmp_path, env=env)
    assert r.returncode == 2
    assert r.stderr == (
        "gpulab: error: the Pulumi CLI is not installed: install it with `curl -fsSL "
        "https://get.pulumi.com | sh` (https://www.pulumi.com/docs/install/)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Pulumi.mylab.yaml", "home"]
    r = gpulab("up", "nolab", cwd=tmp_path, env=env)
    assert r.returncode == 2 and f"looked in {tmp_path} (here)" in r.stderr


def test_up_refuses_a_stack_file_pulumi_cannot_read(gpulab, tmp_path: Path) -> None:
    (tmp_path / "lab.yaml").write_text(LOCAL.format(lab="lab"))
    assert gpulab("validate", "lab.yaml", cwd=tmp_path).returncode == 0
    r = gpulab("up", "./lab.yaml", cwd=tmp_path)
    assert r.returncode == 2
    assert "Pulumi reads a stack's config only from Pulumi.<stack>.yaml; rename it to " \
           "Pulumi.lab.yaml" in r.stderr  # fmt: skip
