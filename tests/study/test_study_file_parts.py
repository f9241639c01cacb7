"""The study file's parts that the CLI cases reach only in passing (infra/study/model.py and
plan.py), called directly, milliseconds a case: the project's stacks and their projects, the
one line each bad arm key gives (its stack, its stack file, its exec_env, sharing and config),
the arms' and claims' limits, the built-in studies' names, the study file's bytes, and the seed
of a randomized order. The project's stacks are read from a project folder made per case
(``model.PROJECT`` pointed at it), so the cases do not depend on the repository's stack files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.cli import main
from infra.errors import UsageError
from infra.paths import PROJECT
from infra.study import model
from infra.study.model import (
    MAX_ARMS,
    MAX_CLAIMS,
    MAX_FILE_BYTES,
    MAX_TEXT,
    _short,
    load_study,
    parse_study,
    study_stack_name,
)
from infra.study.plan import new_seed
from workloads import execenv

SMOKE = PROJECT / "workloads" / "suites" / "smoke.yaml"
CLAIM = "closer2018/single_synthetic"


def stack_file(path: Path, topology: str | None = "local", **keys: Any) -> Path:
    config: dict[str, Any] = {f"gpulab:{k}": v for k, v in keys.items()}
    if topology is not None:
        config["gpulab:topology"] = topology
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"config": config}))
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with two root stacks (``lab``, ``bare`` without a topology) and one
    example stack; ``model.PROJECT`` points at it."""
    root = tmp_path / "project"
    stack_file(root / "Pulumi.lab.yaml", lab="lab")
    stack_file(root / "Pulumi.bare.yaml", topology=None, lab="bare")
    stack_file(root / "examples" / "ex" / "Pulumi.example.yaml", lab="ex")
    monkeypatch.setattr(model, "PROJECT", root)
    return root


def doc(*arms: dict[str, Any], **change: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": "t",
        "suite": "smoke",
        "arms": list(arms) or [{"name": "a", "stack": "local", "exec_env": "native"}],
    }
    d.update(change)
    return d


def refusal(path: Path, d: Any) -> str:
    with pytest.raises(UsageError) as exc:
        parse_study(d, path)
    return str(exc.value)


# -- the project's stacks ----------------------------------------------------------------------


def test_stack_paths_take_plain_names_the_roots_over_the_examples(project: Path) -> None:
    stack_file(project / "Pulumi.Not_A_Name.yaml")  # not a plain stack name: not a stack
    stack_file(project / "examples" / "ex" / "Pulumi.lab.yaml")  # the root's lab wins
    assert model.stack_paths() == {
        "bare": project / "Pulumi.bare.yaml",
        "example": project / "examples" / "ex" / "Pulumi.example.yaml",
        "lab": project / "Pulumi.lab.yaml",
    }


def test_project_of_a_stack_file_is_its_folder_only_when_that_holds_a_pulumi_yaml(
    tmp_path: Path,
) -> None:
    alone = stack_file(tmp_path / "alone" / "Pulumi.x.yaml")
    own = stack_file(tmp_path / "own" / "Pulumi.x.yaml")
    (own.parent / "Pulumi.yaml").write_text("name: own\n")
    assert model.project_of(alone) == PROJECT
    assert model.project_of(own) == own.parent.resolve()


def test_a_stack_file_arm_belongs_to_the_gpulab_project_even_beside_a_pulumi_yaml(
    tmp_path: Path,
) -> None:
    """Its stack is copied into the gpulab project (``Pulumi.study-<study>-<arm>.yaml``); a
    named example stack with its own ``Pulumi.yaml`` is that project's."""
    f = stack_file(tmp_path / "labs" / "Pulumi.mine.yaml")
    (f.parent / "Pulumi.yaml").write_text("name: labs\n")
    s = parse_study(
        doc({"name": "a", "stack_file": "labs/Pulumi.mine.yaml", "exec_env": "native"}),
        tmp_path / "s.yaml",
    )
    assert (s.arms[0].stack_file, s.arms[0].project) == (f.resolve(), PROJECT)


# -- an arm's keys -----------------------------------------------------------------------------


def test_an_unknown_named_stack_lists_the_known_ones(project: Path, tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    bad = refusal(p, doc({"name": "a", "stack": "nope", "exec_env": "native"}))
    assert bad == f"study {p}: arms[0].stack: unknown stack 'nope' (known: bare, example, lab)"


def test_a_stack_that_is_no_plain_name_is_one_line_naming_the_key(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    bad = refusal(p, doc({"name": "a", "stack": "Bad Name", "exec_env": "native"}))
    assert bad == (
        f"study {p}: arms[0].stack: 'Bad Name' is not a plain name ([a-z0-9._-], at most 63)"
    )


def test_a_stack_without_a_topology_names_the_key_the_arm_gave(
    project: Path, tmp_path: Path
) -> None:
    p = tmp_path / "s.yaml"
    bad = refusal(p, doc({"name": "a", "stack": "bare", "exec_env": "native"}))
    assert bad == f"study {p}: arms[0].stack: {project / 'Pulumi.bare.yaml'} has no gpulab:topology"
    f = stack_file(tmp_path / "bare.yaml", topology=None)
    bad = refusal(p, doc({"name": "a", "stack_file": "bare.yaml", "exec_env": "native"}))
    assert bad == f"study {p}: arms[0].stack_file: {f} has no gpulab:topology"


def test_a_stack_file_that_does_not_read_is_one_line_naming_it(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    f = tmp_path / "broken.yaml"
    f.write_text("config: [unclosed\n")
    bad = refusal(p, doc({"name": "a", "stack_file": "broken.yaml", "exec_env": "native"}))
    assert bad.startswith(f"study {p}: arms[0].stack_file: {f} does not read as a stack file: ")
    assert "\n" not in bad and len(bad) > len(
        f"study {p}: arms[0].stack_file: {f} does not read as a stack file: "
    )


def test_an_unknown_exec_env_lists_the_accepted_ones(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    for raw in ("vmware-magic", 5, None, [1]):  # a list is no key of the table: refused alike
        bad = refusal(p, doc({"name": "a", "stack": "local", "exec_env": raw}))
        assert bad == (
            f"study {p}: arms[0].exec_env: {raw!r} is not one of {', '.join(execenv.accepted())}"
        )


def test_a_sharing_that_is_not_text_is_refused_by_its_value(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    bad = refusal(p, doc({"name": "a", "stack": "local", "exec_env": "native", "sharing": [1]}))
    assert bad.startswith(f"study {p}: arms[0].sharing: sharing '[1]' is not one of ")
    s = parse_study(
        doc({"name": "a", "stack": "local", "exec_env": "native", "sharing": "exclusive"}), p
    )
    assert s.arms[0].sharing == "exclusive"
    assert parse_study(doc(), p).arms[0].sharing is None


def test_an_arm_config_copies_its_stack_under_the_studys_name(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    s = parse_study(
        doc({"name": "big", "stack": "local", "exec_env": "native", "config": {"lab": "biglab"}}), p
    )
    a = s.arms[0]
    assert a.config == (("lab", "biglab"),)
    assert (a.stack, a.stack_file) == (study_stack_name("t", "big"), PROJECT / "Pulumi.local.yaml")
    assert parse_study(doc(), p).arms[0].config == ()


def test_a_bad_arm_config_key_is_one_line_naming_it(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    arm = {"name": "a", "stack": "local", "exec_env": "native", "config": {"no_such_key": 1}}
    assert refusal(p, doc(arm)) == (
        f"study {p}: arms[0].config.no_such_key: not a gpulab stack key (docs/topologies.md)"
    )


def test_a_named_stack_that_a_stack_file_arm_copies_to_is_refused_on_the_copying_arm(
    project: Path, tmp_path: Path
) -> None:
    """Arm ``b`` copies its stack file to ``study-t-b``; arm ``c``, after it, names that stack:
    the copying arm is the one to rename, whichever comes first."""
    stack_file(project / "Pulumi.study-t-b.yaml")
    stack_file(tmp_path / "mine.yaml")
    p = tmp_path / "s.yaml"
    copying = {"name": "b", "stack_file": "mine.yaml", "exec_env": "native"}
    named = {"name": "c", "stack": "study-t-b", "exec_env": "native"}
    for arms, i, j in (((copying, named), 0, 1), ((named, copying), 1, 0)):
        assert refusal(p, doc(*arms)) == (
            f"study {p}: arms[{i}].stack_file: its stack name study-t-b is the stack arms[{j}] "
            "names; rename the arm"
        )


# -- the study's keys and limits ---------------------------------------------------------------


def test_an_unknown_top_level_key_is_named_as_it_is(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    assert refusal(p, doc(colour="red")).startswith(
        f"study {p}: colour: unknown key (known: name, "
    )


def test_a_study_parsed_without_a_digest_has_none(tmp_path: Path) -> None:
    assert parse_study(doc(), tmp_path / "s.yaml").digest == ""


def test_a_study_takes_at_most_max_arms(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    arms = [{"name": f"a{i}", "stack": "local", "exec_env": "native"} for i in range(MAX_ARMS + 1)]
    assert len(parse_study(doc(*arms[:MAX_ARMS]), p).arms) == MAX_ARMS
    assert refusal(p, doc(*arms)) == f"study {p}: arms: {MAX_ARMS + 1} arms; at most {MAX_ARMS}"


def test_a_study_takes_at_most_max_claims(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    assert parse_study(doc(claims=[CLAIM] * MAX_CLAIMS), p).claims == (CLAIM,)
    assert refusal(p, doc(claims=[CLAIM] * (MAX_CLAIMS + 1))) == (
        f"study {p}: claims: a list of at most {MAX_CLAIMS} claim ids (paper/id)"
    )


def test_an_unknown_claim_is_one_line_with_an_example(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    assert refusal(p, doc(claims=[CLAIM, "x/y"])) == (
        f"study {p}: claims[1]: unknown claim 'x/y' (ids of "
        "workloads/reference/published-results.yaml, e.g. closer2018/single_synthetic)"
    )


def test_a_suite_name_of_max_text_characters_is_looked_up(tmp_path: Path) -> None:
    """1024 characters is a name to look up (longer than a file name may be: an unknown suite,
    once an OSError traceback); one more is refused as no suite name."""
    p = tmp_path / "s.yaml"
    at_limit = refusal(p, doc(suite="a" * MAX_TEXT))
    assert at_limit.startswith(f"study {p}: suite: unknown suite 'aaaa")
    over = refusal(p, doc(suite="a" * (MAX_TEXT + 1)))
    assert over == (
        f"study {p}: suite: {_short('a' * (MAX_TEXT + 1))} is not a suite name or .yaml path"
    )


def test_gpulab_study_status_on_a_suite_name_too_long_for_a_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc(suite="a" * 300)))
    assert main(["study", "status", str(path), "--results-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpulab: error: study {path}: suite: unknown suite 'aaaa")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_yml_suite_is_read_beside_the_study_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(SMOKE, tmp_path / "mine.yml")
    shutil.copy(SMOKE, tmp_path / "mine.YML")
    monkeypatch.chdir(PROJECT)  # elsewhere than the study file
    s = parse_study(doc(suite="mine.yml"), tmp_path / "s.yaml")
    assert s.suite == str((tmp_path / "mine.yml").resolve())


# -- built-in studies and the study file -------------------------------------------------------


def test_without_built_in_studies_the_refusal_says_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model, "STUDIES_DIR", tmp_path / "none-here")
    with pytest.raises(UsageError) as exc:
        model.find_study("nosuch")
    assert (
        str(exc.value) == "study 'nosuch': no such file and no studies/nosuch.yaml (built-in: none)"
    )


def study_file(tmp_path: Path, extra: bytes = b"") -> Path:
    path = tmp_path / "t.yaml"
    path.write_bytes(yaml.safe_dump(doc()).encode() + extra)
    return path


def test_a_study_file_that_cannot_be_read_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tests run as root, whom a file mode does not stop: the read fails by a stand-in."""
    path = study_file(tmp_path)

    def unreadable(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", unreadable)
    with pytest.raises(UsageError) as exc:
        load_study(str(path))
    assert str(exc.value) == f"study {path}: cannot be read: Permission denied"


def test_a_study_file_of_exactly_the_size_limit_is_read(tmp_path: Path) -> None:
    """At the limit the file is parsed (a tab cannot start a YAML token: a parse error at
    once); one byte more is refused unread."""
    path = tmp_path / "t.yaml"
    path.write_bytes(b"\t" + b"x" * (MAX_FILE_BYTES - 1))
    with pytest.raises(UsageError) as exc:
        load_study(str(path))
    assert str(exc.value).startswith(f"study {path}: ")
    assert "larger than" not in str(exc.value)
    path.write_bytes(b"\t" + b"x" * MAX_FILE_BYTES)
    with pytest.raises(UsageError, match=f"larger than {MAX_FILE_BYTES} bytes"):
        load_study(str(path))


def test_a_study_file_with_bytes_that_are_not_utf8_still_reads(tmp_path: Path) -> None:
    path = study_file(tmp_path, b"# caf\xe9 (Latin-1 in a comment)\n")
    assert load_study(str(path)).name == "t"


def test_a_study_file_that_is_no_yaml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(UsageError) as exc:
        load_study(str(path))
    assert str(exc.value).startswith(f"study {path}: ")


# -- the seed of a randomized order ------------------------------------------------------------


def test_a_new_seed_is_drawn_from_the_whole_32_bit_range() -> None:
    seeds = {new_seed() for _ in range(200)}
    assert all(0 <= s < 2**32 for s in seeds)
    assert len(seeds) > 190  # drawn, not fixed
    assert max(seeds) >= 2**31  # the upper half is reached (probability 1 - 2^-200 each way)
    assert min(seeds) < 2**31
