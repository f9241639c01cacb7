"""Stacks a study makes from its arms' stack files (`Pulumi.study-<study>-<arm>.yaml`) never
collide: a name over 63 characters keeps a hash of the whole, two arms on one name are
refused, and a stack file another study's arm made (study `a` + arm `b-c` against study
`a-b` + arm `c`) is refused in one line instead of being silently measured and destroyed.
The lab path runs against the DOUBLE of pulumi.automation (tests/lifecycle)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from infra.errors import UsageError
from infra.study import model
from infra.study.driver import Driver, RunOptions
from infra.study.model import OWNER_KEY, load_study, study_stack_name
from tests.lifecycle.test_automation_double import AutoDouble
from tests.study.test_lab_double import project
from workloads.records import make_record


def stack_file(tmp_path: Path) -> Path:
    """A lab's stack file given by path (the nova-pci example, valid as it stands)."""
    path = tmp_path / "labs" / "vm.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text((project(tmp_path / "src") / "Pulumi.nova-pci.yaml").read_text())
    return path


def engine(auto: AutoDouble, results: Path, stack: str) -> None:
    """What the workload run of ``stack`` does on each up: a run directory with records."""
    import json

    def during_up(on_output, on_event) -> None:  # type: ignore[no-untyped-def]
        host = results / stack / f"run{len(list((results / stack).glob('run*')))}" / "gpu-0"
        host.mkdir(parents=True)
        rec = make_record(run_id="r", suite="smoke", experiment="e", model="mnist_cnn",
                          arm="native", topology="nova-pci", images_per_sec=10.0)  # fmt: skip
        (host / "records.jsonl").write_text(json.dumps(rec) + "\n")

    auto.during_up = during_up


def study_file(tmp_path: Path, name: str, arms: list[dict[str, str]]) -> Path:
    path = tmp_path / f"{name}.yaml"
    doc = {"name": name, "suite": "smoke", "repeats": 1, "arms": arms}
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_long_name_keeps_a_hash_of_the_whole_and_stays_a_stack_name(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    labs = stack_file(tmp_path)
    study = "s" * 50
    arms = [{"name": f"arm-{c}-{'x' * 20}", "stack_file": str(labs), "exec_env": "native"}
            for c in "ab"]  # fmt: skip
    st = load_study(str(study_file(tmp_path, study, arms)))
    names = [a.stack for a in st.arms]
    assert names[0] != names[1]  # the old [:63] cut made both "study-sss...-arm-"
    assert all(len(n) == 63 and model.NAME_RE.match(n) for n in names)
    assert names == [study_stack_name(study, a["name"]) for a in arms]  # the same every run
    assert study_stack_name("a", "b") == "study-a-b"  # short names stay as they were


def test_two_arms_on_one_stack_name_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An arm given by stack file may not take the name of a stack another arm names."""
    (tmp_path / "src").mkdir()
    labs = stack_file(tmp_path)
    known = {**model.stack_paths(), "study-t-b": labs}
    monkeypatch.setattr(model, "stack_paths", lambda: known)
    path = study_file(tmp_path, "t", [
        {"name": "a", "stack": "study-t-b", "exec_env": "native"},
        {"name": "b", "stack_file": str(labs), "exec_env": "docker"},
    ])  # fmt: skip
    with pytest.raises(UsageError) as err:
        load_study(str(path))
    assert str(err.value) == (
        f"study {path}: arms[1].stack_file: its stack name study-t-b is the stack arms[0] "
        "names; rename the arm"
    )


def test_a_stack_another_studys_arm_made_is_refused_in_one_line_double(tmp_path: Path) -> None:
    """Study `a` with arm `b-c` and study `a-b` with arm `c` both name `study-a-b-c`."""
    (tmp_path / "src").mkdir()
    labs = stack_file(tmp_path)
    proj = project(tmp_path)
    auto = AutoDouble()
    engine(auto, tmp_path / "results", "study-a-b-c")

    def drive(name: str, arm: str) -> Driver:
        arms = [{"name": arm, "stack_file": str(labs), "exec_env": "native"}]
        st = load_study(str(study_file(tmp_path, name, arms)))
        opts = RunOptions(auto=auto, repo=proj, keep=True)
        return Driver(st, tmp_path / "results", opts, Console(file=io.StringIO()))

    first = drive("a", "b-c").run()
    assert first.counts()["done"] == 1
    copied = proj / "Pulumi.study-a-b-c.yaml"
    assert yaml.safe_load(copied.read_text())["config"][OWNER_KEY] == "a/b-c"
    before = copied.read_text()
    with pytest.raises(UsageError) as err:
        drive("a-b", "c")
    assert str(err.value) == (
        f"study {tmp_path / 'a-b.yaml'}: arms[0].stack_file: its stack study-a-b-c already "
        f"exists ({copied}) and belongs to study/arm a/b-c; rename the arm or the study, or "
        "remove that stack"
    )
    assert copied.read_text() == before  # the other study's stack, untouched
    assert drive("a", "b-c").run().counts()["done"] == 1  # its own study goes on using it


def test_a_stack_file_made_by_hand_under_the_name_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    labs = stack_file(tmp_path)
    proj = project(tmp_path)
    (proj / "Pulumi.study-t-vm.yaml").write_text(labs.read_text())  # not copied by a study
    st = load_study(str(study_file(tmp_path, "t", [
        {"name": "vm", "stack_file": str(labs), "exec_env": "native"}])))  # fmt: skip
    with pytest.raises(UsageError, match=r"belongs to no study \(not copied by gpulab\)"):
        Driver(st, tmp_path / "results", RunOptions(repo=proj), Console(file=io.StringIO()))
