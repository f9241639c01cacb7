"""The study file's validation at its edges, called as the CLI calls it (``parse_study``,
``load_study``; milliseconds a case): the defaults a study gets, the bounds of its numbers,
the one line each bad key gives, and the order of the units it plans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.errors import UsageError
from infra.study.model import MAX_CLAIMS, MAX_SEED, find_study, load_study, parse_study
from infra.study.plan import Unit, plan
from tests.study.helpers import study_doc as doc


def refused(tmp_path: Path, d: Any) -> str:
    path = tmp_path / "s.yaml"
    with pytest.raises(UsageError) as exc:
        parse_study(d, path)
    text = str(exc.value)
    assert text.startswith(f"study {path}")
    assert "\n" not in text
    return text


def test_a_study_without_optional_keys_gets_their_defaults(tmp_path: Path) -> None:
    s = parse_study(doc(), tmp_path / "s.yaml", "d1")
    assert (s.name, s.suite, s.repeats, s.order, s.seed, s.rebuild) == (
        "t",
        "smoke",
        1,
        "interleaved",
        None,
        "never",
    )
    assert (s.baseline, s.claims, s.description, s.digest) == ("a", (), "", "d1")
    assert [(a.name, a.label, a.exec_env, a.stack, a.stack_file) for a in s.arms] == [
        ("a", "a", "native", "local", None),
        ("b", "b", "docker", "local", None),
    ]
    assert s.arm("b").exec_env == "docker"
    with pytest.raises(KeyError, match="'c'"):
        s.arm("c")
    assert "smoke" in s.suites


def test_every_key_a_study_gives_is_kept(tmp_path: Path) -> None:
    s = parse_study(
        doc(
            repeats=1000,
            order="randomized",
            seed=MAX_SEED,
            rebuild="between-arms",
            baseline="b",
            description="x" * 1024,
            claims=["closer2018/single_synthetic", "closer2018/single_synthetic"],
        ),
        tmp_path / "s.yaml",
    )
    assert (s.repeats, s.order, s.seed, s.rebuild, s.baseline) == (
        1000,
        "randomized",
        MAX_SEED,
        "between-arms",
        "b",
    )
    assert s.claims == ("closer2018/single_synthetic",)  # named twice, kept once
    assert len(s.description) == 1024
    assert parse_study(doc(seed=0), tmp_path / "s.yaml").seed == 0
    assert parse_study(doc(rebuild="every-unit"), tmp_path / "s.yaml").rebuild == "every-unit"


@pytest.mark.parametrize(
    ("d", "line"),
    [
        ("text", "must be a YAML mapping with name, suite and arms"),
        ({"suite": "smoke", "arms": []}, ": name: required"),
        ({"name": "t", "arms": []}, ": suite: required"),
        ({"name": "t", "suite": "smoke"}, ": arms: required"),
        (doc(repeats=1001), "repeats: 1001 is out of range 1..1000"),
        (doc(repeats="2"), "repeats: '2' is not an integer (1..1000)"),
        (doc(seed=MAX_SEED + 1), f"seed: {MAX_SEED + 1} is out of range 0..{MAX_SEED}"),
        (doc(seed=1.5), "seed: 1.5 is not an integer"),
        (doc(description=5), "description: a string of at most 1024 characters"),
        (doc(description="x" * 1025), "description: a string of at most 1024 characters"),
        (doc(arms="a"), "arms: a non-empty list of arms"),
        (doc(arms=[{"name": f"a{i}"} for i in range(65)]), "arms: 65 arms; at most 64"),
        (doc(arms=["a"]), "arms[0]: must be a mapping with name, stack"),
        (doc(claims="closer2018/single_synthetic"), "claims: a list of at most 256 claim ids"),
        (doc(claims=["x"] * (MAX_CLAIMS + 1)), "claims: a list of at most 256 claim ids"),
        (doc(claims=["closer2018/single_synthetic", 3]), "claims[1]: unknown claim 3"),
        (doc(name="x" * 64), "name: '" + "x" * 56 + "... is not a plain name"),
        (doc(name=7), "name: 7 is not a plain name ([a-z0-9._-], at most 63)"),
        (doc(suite=""), "suite: '' is not a suite name or .yaml path"),
        (doc(suite="nosuch.yaml"), "suite: suite file 'nosuch.yaml' cannot be read"),
        (doc(suite="x" * 1025), "suite: 'xxxxxxxxxx"),
        (doc(order=None), "order: None is not one of interleaved, randomized"),
        (
            doc(rebuild="sometimes"),
            "rebuild: 'sometimes' is not one of never, between-repeats, between-arms, every-unit",
        ),
        (doc(colour=1), "colour: unknown key (known: name, "),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None,
)
def test_a_bad_key_is_one_line_naming_it(tmp_path: Path, d: Any, line: str) -> None:
    assert line in refused(tmp_path, d)


def test_a_long_value_is_cut_to_sixty_characters(tmp_path: Path) -> None:
    text = refused(tmp_path, doc(name="y" * 58 + "Z"))  # repr is 61 characters
    assert f"name: '{'y' * 56}... is not a plain name" in text
    text = refused(tmp_path, doc(name="y" * 57 + "Z"))  # repr is exactly 60
    assert f"name: '{'y' * 57}Z' is not a plain name" in text


def test_an_arms_keys_are_checked_one_by_one(tmp_path: Path) -> None:
    def arm(**kw: Any) -> dict[str, Any]:
        return doc(arms=[{"name": "a", "stack": "local", "exec_env": "native", **kw}])

    assert "arms[0].label: 'Bad' is not a plain name" in refused(tmp_path, arm(label="Bad"))
    assert "arms[0].exec_env: None is not one of " in refused(
        tmp_path, {**doc(), "arms": [{"name": "a", "stack": "local"}]}
    )
    both = doc(arms=[{"name": "a", "exec_env": "native"}])
    assert "arms[0].stack: give exactly one of stack" in refused(tmp_path, both)
    (tmp_path / "dir").mkdir()
    no_stack: dict[str, Any] = {"name": "a", "exec_env": "native"}
    for raw, line in [
        ("", "arms[0].stack_file: '' is not a path"),
        (3, "arms[0].stack_file: 3 is not a path"),
        ("dir", "arms[0].stack_file: 'dir' is a directory, not a stack file"),
        ("none.yaml", "arms[0].stack_file: no such file 'none.yaml'"),
    ]:
        assert line in refused(tmp_path, doc(arms=[{**no_stack, "stack_file": raw}]))
    (tmp_path / "Pulumi.x.yaml").write_text("config: {}\n")
    assert "has no gpulab:topology" in refused(
        tmp_path, doc(arms=[{**no_stack, "stack_file": "Pulumi.x.yaml"}])
    )


def test_two_arms_with_one_label_are_refused(tmp_path: Path) -> None:
    d = doc()
    d["arms"][1]["label"] = "a"
    assert "arms[1].label: 'a' is another arm's label" in refused(tmp_path, d)
    d["arms"][1]["label"] = "other"
    s = parse_study(d, tmp_path / "s.yaml")
    assert [a.label for a in s.arms] == ["a", "other"]


def test_a_study_is_found_by_path_or_by_built_in_name(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(doc()))
    assert find_study(str(path)) == path
    assert find_study("closer2018").name == "closer2018.yaml"
    with pytest.raises(UsageError, match=r"is a directory, not a study file"):
        find_study(str(tmp_path))
    with pytest.raises(UsageError, match=r"'/no/such.yaml' does not exist \(built-in studies: "):
        find_study("/no/such.yaml")
    with pytest.raises(UsageError, match=r"study 'nosuch': no such file and no studies/nosuch"):
        find_study("nosuch")


def test_load_study_keeps_a_digest_of_the_file_and_refuses_a_large_one(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(doc()))
    first = load_study(str(path)).digest
    assert len(first) == 16 and first == load_study(str(path)).digest
    path.write_text(yaml.safe_dump(doc(repeats=2)))
    assert load_study(str(path)).digest != first
    path.write_bytes(b"#" * ((1 << 20) + 1))
    with pytest.raises(UsageError, match=r"larger than 1048576 bytes"):
        load_study(str(path))


@pytest.mark.parametrize("repeats", [1, 2, 4])
def test_interleaved_order_starts_each_repeat_one_arm_later(tmp_path: Path, repeats: int) -> None:
    d = doc(repeats=repeats)
    d["arms"].append({"name": "c", "stack": "local", "exec_env": "native"})
    units = plan(parse_study(d, tmp_path / "s.yaml"))
    rows = ["abc", "bca", "cab", "abc"][:repeats]
    assert units == [Unit(a, r + 1) for r, row in enumerate(rows) for a in row]
    assert Unit("b", 2).key == "b#2"


def test_randomized_order_is_every_unit_once_in_the_seeds_order(tmp_path: Path) -> None:
    s = parse_study(doc(repeats=5, order="randomized"), tmp_path / "s.yaml")
    units = plan(s, seed=3)
    assert sorted(units) == [Unit(a, r) for a in "ab" for r in range(1, 6)]
    assert units == plan(s, seed=3)
    assert units != sorted(units)  # shuffled, not the file's order


def test_a_stack_name_of_exactly_63_characters_is_kept_whole() -> None:
    from infra.study.model import study_stack_name

    name = study_stack_name("s" * 25, "a" * 31)  # study-<25>-<31>: 63 characters
    assert name == f"study-{'s' * 25}-{'a' * 31}" and len(name) == 63
    longer = study_stack_name("s" * 25, "a" * 32)
    assert len(longer) == 63 and longer.startswith(f"study-{'s' * 25}-{'a' * 22}-")


@pytest.mark.parametrize(
    "text",
    ["- a\n- b\n", "config: [1, 2]\n", "config:\n  gpulab-study:arm: 3\n", "config: {\n"],
    ids=["a-list", "config-a-list", "owner-not-text", "not-yaml"],
)
def test_a_stack_file_that_names_no_owner_has_none(tmp_path: Path, text: str) -> None:
    from infra.study.model import stack_owner

    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(text)
    assert stack_owner(path) is None
    path.write_text("config:\n  gpulab-study:arm: st/a\n")
    assert stack_owner(path) == "st/a"


def test_a_stack_file_is_found_beside_the_study_first_then_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infra.paths import PROJECT

    here = tmp_path / "cwd"
    (here / "labs").mkdir(parents=True)
    (here / "labs" / "lab.yaml").write_text((PROJECT / "Pulumi.local.yaml").read_text())
    monkeypatch.chdir(here)
    d = doc(arms=[{"name": "a", "stack_file": "labs/lab.yaml", "exec_env": "native"}])
    s = parse_study(d, tmp_path / "studies" / "s.yaml")
    assert s.arms[0].stack_file == here / "labs" / "lab.yaml"  # absolute, resolved
    beside = tmp_path / "studies" / "labs"
    beside.mkdir(parents=True)
    (beside / "lab.yaml").write_text((PROJECT / "Pulumi.local.yaml").read_text())
    s = parse_study(d, tmp_path / "studies" / "s.yaml")
    assert s.arms[0].stack_file == beside / "lab.yaml"


@pytest.mark.parametrize("first", ["on-a-named-stack", "its-copy-not-made-yet"])
def test_every_copied_stack_is_checked_whatever_arm_comes_before_it(
    tmp_path: Path, first: str
) -> None:
    import dataclasses

    from infra.study.model import check_stack_files

    s = parse_study(doc(), tmp_path / "s.yaml")
    a, b = s.arms
    if first == "its-copy-not-made-yet":
        a = dataclasses.replace(a, stack="study-t-a", stack_file=tmp_path / "lab.yaml")
    b = dataclasses.replace(b, stack="study-t-b", stack_file=tmp_path / "lab.yaml")
    (tmp_path / "Pulumi.study-t-b.yaml").write_text("config: {}\n")  # made by hand
    with pytest.raises(UsageError, match=r"arms\[1\]\.stack_file: its stack study-t-b already"):
        check_stack_files(dataclasses.replace(s, arms=(a, b)), tmp_path)
