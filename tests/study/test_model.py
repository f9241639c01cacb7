"""Study files: every bad key is one line naming it (exit 2, nothing written); the built-in
studies of the four seed papers validate and name suites, claims and execution environments
that exist."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infra.cli import main
from infra.study.model import STUDIES_DIR, load_study, parse_study, study_stack_name
from infra.study.plan import Unit, plan
from report.published import load_published
from workloads import execenv
from workloads.suites import load_suite

GOOD = {
    "name": "t",
    "suite": "smoke",
    "repeats": 2,
    "claims": ["closer2018/single_synthetic"],
    "arms": [
        {"name": "a", "stack": "local", "exec_env": "native"},
        {"name": "b", "stack": "local", "exec_env": "docker"},
    ],
}


def write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def with_(change: dict, arm: dict | None = None) -> dict:
    doc = yaml.safe_load(yaml.safe_dump(GOOD))
    doc.update(change)
    if arm is not None:
        doc["arms"][1].update(arm)
    return doc


BAD = [
    (with_({"repeats": 0}), "repeats: 0 is out of range 1..1000"),
    (with_({"repeats": True}), "repeats: True is not an integer"),
    (
        with_({"order": "alphabetical"}),
        "order: 'alphabetical' is not one of interleaved, randomized",
    ),
    (with_({"rebuild": "always"}), "rebuild: 'always' is not one of never, between-repeats"),
    (with_({"seed": -1}), "seed: -1 is out of range 0..4294967295"),
    (with_({"suite": "nosuch"}), "suite: unknown suite 'nosuch'"),
    (with_({"claims": ["closer2018/nosuch"]}), "claims[0]: unknown claim 'closer2018/nosuch'"),
    (with_({"baseline": "z"}), "baseline: 'z' is not an arm"),
    (with_({"baseline": ["a"]}), "baseline: ['a'] is not an arm (a, b)"),
    (with_({"baseline": {"a": 1}}), "baseline: {'a': 1} is not an arm (a, b)"),
    (with_({"repeats": 10**9}), "repeats: 1000000000 is out of range 1..1000"),
    (with_({"colour": "red"}), "colour: unknown key"),
    (with_({"arms": []}), "arms: a non-empty list of arms"),
    (with_({}, {"exec_env": "podman"}), "arms[1].exec_env: 'podman' is not one of native"),
    (with_({}, {"stack": "nosuch"}), "arms[1].stack: unknown stack 'nosuch'"),
    (with_({}, {"name": "a"}), "arms[1].name: 'a' is named twice"),
    (with_({}, {"name": "Bad Name"}), "arms[1].name: 'Bad Name' is not a plain name"),
    (with_({}, {"sharing": "half"}), "arms[1].sharing: sharing 'half' is not one of"),
    (with_({}, {"suite": "nosuch.yaml"}), "arms[1].suite:"),
    (with_({}, {"stack_file": "x.yaml"}), "arms[1].stack: give exactly one of stack"),
    (with_({}, {"gpus": 2}), "arms[1].gpus: unknown key"),
]


@pytest.mark.parametrize(("doc", "line"), BAD, ids=[b[1].split(":")[0] for b in BAD])
def test_bad_study_is_one_line_naming_the_key_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict, line: str
) -> None:
    path = write(tmp_path, doc)
    rc = main(["study", "run", str(path), "--results-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.startswith(f"gpulab: error: study {path}: ")
    assert line in err
    assert "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "results").exists()  # nothing half-built


def test_not_yaml_and_unknown_study_are_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "s.yaml"
    bad.write_text("name: [unclosed\n")
    assert main(["study", "status", str(bad)]) == 2
    assert "not valid YAML at line" in capsys.readouterr().err
    assert main(["study", "report", "no-such-study"]) == 2
    assert "built-in: bitfusion-sharing, closer2018" in capsys.readouterr().err
    assert (
        main(
            ["study", "run", "local-first-run", "--suite", "nosuch", "--results-dir", str(tmp_path)]
        )
        == 2
    )
    assert capsys.readouterr().err.startswith("gpulab: error: --suite: unknown suite 'nosuch'")
    assert not list(tmp_path.glob("study-*"))


SEED_STUDIES = ("closer2018", "vmware-vgpu", "ibm-containers", "bitfusion-sharing")


@pytest.mark.parametrize("name", [*SEED_STUDIES, "local-first-run"])
def test_built_in_studies_validate_and_name_what_exists(name: str) -> None:
    path = STUDIES_DIR / f"{name}.yaml"
    study = load_study(str(path))
    assert study.name == name
    pub = load_published()
    assert study.claims, "a built-in study names the claims it checks"
    for claim in study.claims:
        assert claim in pub.claim_texts
    for arm in study.arms:
        assert arm.exec_env in execenv.names()
        load_suite(arm.suite)  # raises on a missing or bad suite
        assert arm.stack_path.is_file()
        if arm.stack_file is None:
            assert arm.stack_path.name == f"Pulumi.{arm.stack}.yaml"
        else:  # a copied stack (stack_file or config): the copy's name is the study's
            assert arm.stack == study_stack_name(name, arm.name)
    raw = yaml.safe_load(path.read_text())
    assert {a["name"] for a in raw["arms"]} == {a.name for a in study.arms}


def test_seed_studies_cover_the_four_papers() -> None:
    papers = {c.split("/")[0] for n in SEED_STUDIES for c in load_study(n).claims}
    assert papers == {
        "closer2018",
        "vmware_vgpu_containers",
        "ibm_containers",
        "vmware_bitfusion_singularity",
    }


def test_interleaved_order_rotates_and_randomized_replays_its_seed(tmp_path: Path) -> None:
    doc = with_({"repeats": 3})
    doc["arms"].append({"name": "c", "stack": "local", "exec_env": "native"})
    study = parse_study(doc, write(tmp_path, doc))
    assert [u.arm for u in plan(study)] == list("abc" + "bca" + "cab")
    rnd = parse_study(with_({"repeats": 3, "order": "randomized"}), tmp_path / "s.yaml")
    first, again = plan(rnd, seed=7), plan(rnd, seed=7)
    assert first == again and sorted(first) == sorted(Unit(a, r) for a in "ab" for r in (1, 2, 3))
    assert any(plan(rnd, seed=s) != first for s in range(1, 6))
