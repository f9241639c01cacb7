"""The study driver with a DOUBLE of the local unit runner (no framework): the journal, the
failed-arm path, --fail-fast, an injected interrupt mid-unit and the resume, counted in
records: nothing finished is lost or written twice."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from infra.paths import PROJECT
from infra.study.driver import Driver, RunOptions, StudyInterrupted
from infra.study.model import load_study
from infra.study.state import find_journal
from tests.study.helpers import UnitsDouble, ids, write_study


def driver(tmp_path: Path, units: UnitsDouble, **opts: object) -> Driver:
    study = load_study(str(tmp_path / "t.yaml"))
    d = Driver(study, tmp_path / "results", RunOptions(**opts), Console(file=io.StringIO()))  # type: ignore[arg-type]
    d.local = units  # type: ignore[assignment]
    return d


def test_failed_arm_is_recorded_and_the_study_goes_on_double(tmp_path: Path) -> None:
    write_study(tmp_path)
    units = UnitsDouble(script={2: "fail"})
    j = driver(tmp_path, units).run()
    assert units.calls == ["a", "b", "b", "a"]  # interleaved: repeat 2 starts with b
    assert j.counts() == {"pending": 0, "running": 0, "done": 3, "failed": 1, "skipped": 0}
    failed = j.data["units"]["b#1"]
    assert failed["reason"] == "runner exited 1: injected failure" and failed["records"] == 1
    # every record carries the study, the arm and the repeat (params: the schema is unchanged)
    recs = [json.loads(ln) for f in j.record_files() for ln in f.read_text().splitlines()]
    assert {(r["params"]["study"]["arm"], r["params"]["study"]["repeat"]) for r in recs} == {
        ("a", 1),
        ("a", 2),
        ("b", 2),
    }
    assert all(r["params"]["study"]["name"] == "t" for r in recs)
    # run again: only the failed unit runs, the done units' records stay as they were
    before = ids(j.record_files())
    units2 = UnitsDouble()
    j2 = driver(tmp_path, units2).run()
    assert units2.calls == ["b"]
    assert j2.counts()["done"] == 4
    after = ids(j2.record_files())
    assert set(before) <= set(after) and len(after) == len(set(after)) == 16  # 4 units x 4
    assert (j2.units_dir / "b.r1.retried-1.jsonl").is_file()  # the failed try kept aside


def test_fail_fast_stops_at_the_failed_unit_double(tmp_path: Path) -> None:
    write_study(tmp_path)
    units = UnitsDouble(script={1: "fail"})
    j = driver(tmp_path, units, fail_fast=True).run()
    assert units.calls == ["a"]
    assert j.counts()["failed"] == 1 and j.counts()["pending"] == 3
    assert j.data["teardown"] is not None  # the teardown ran although the study failed


def test_interrupt_mid_unit_then_resume_keeps_every_finished_record_double(
    tmp_path: Path,
) -> None:
    write_study(tmp_path)
    units = UnitsDouble(script={3: "interrupt"})
    with pytest.raises(StudyInterrupted, match="interrupted in arm b, repeat 2"):
        driver(tmp_path, units).run()
    assert units.closed  # the study's zygote (LocalUnits.close) ended with the stopped run
    j = find_journal(tmp_path / "results", "t")
    assert [j.unit(u)["status"] for u in j.order()] == ["done", "done", "pending", "pending"]
    done_before = ids(j.record_files())
    assert len(done_before) == 8  # 2 finished units x the smoke suite's 4 measurements
    assert len(ids([j.units_dir / "b.r2.stopped-1.jsonl"])) == 1  # the partial unit, aside
    units2 = UnitsDouble()
    j2 = driver(tmp_path, units2).run()
    assert units2.closed
    assert units2.calls == ["b", "a"]  # the stopped unit again, then the rest
    after = ids(j2.record_files())
    assert len(after) == 16 and len(set(after)) == 16
    assert after[:8] == done_before  # the finished units' records, unchanged and in order
    assert [r["resumed"] for r in j2.data["runs"]] == [False, True]
    assert j2.data["runs"][0]["interrupted"] is True


def test_edit_that_keeps_finished_units_continues_the_study_double(tmp_path: Path) -> None:
    """More repeats, a new arm and a new claim: the finished units are kept (records unchanged,
    not re-run), only the new units run, and the journal names what the edit changed."""
    write_study(tmp_path)
    driver(tmp_path, UnitsDouble()).run()
    before = ids(find_journal(tmp_path / "results", "t").record_files())
    arms = [{"name": n, "stack": "local", "exec_env": "native"} for n in ("a", "b", "c")]
    write_study(tmp_path, repeats=3, arms=arms, claims=["closer2018/single_synthetic"])
    units = UnitsDouble()
    d = driver(tmp_path, units)
    assert d.resumed and d.journal.edited == [
        "repeats",
        "claims",
        "arms[2]: c added",
    ]
    j = d.run()
    assert j.counts()["done"] == 9
    assert sorted(units.calls) == ["a", "b", "c", "c", "c"]  # 4 finished units not re-run
    after = ids(j.record_files())
    assert len(after) == 36 and set(before) <= set(after)
    assert j.data["claims"] == ["closer2018/single_synthetic"]
    assert j.data["runs"][-1]["edited"] == d.journal.edited
    assert j.data["edits"][-1]["to"] == load_study(str(tmp_path / "t.yaml")).digest
    assert not list((tmp_path / "results").glob("study-t.*"))  # nothing moved aside


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        ({"suite": "closer2018"}, r"suite changed \('smoke' -> 'closer2018'\)"),
        ({"arms": [{"name": "a", "stack": "local", "exec_env": "native"},
                   {"name": "b", "stack": "local", "exec_env": "docker"}]},
         r"arms\[1\]\.exec_env of arm b changed \('native' -> 'docker'\)"),
        ({"arms": [{"name": "a", "stack": "local", "exec_env": "native"}]},
         "arms no longer list arm 'b'"),
        ({"order": "randomized", "seed": 3}, "order changed"),
        ({"rebuild": "between-arms"}, "rebuild changed"),
        ({"repeats": 1}, "repeats is 1, fewer than the 2 with finished units"),
    ],
)  # fmt: skip
def test_edit_of_what_finished_units_ran_with_is_refused_unless_fresh(
    tmp_path: Path, edit: dict[str, object], key: str
) -> None:
    from infra.errors import UsageError

    write_study(tmp_path)
    driver(tmp_path, UnitsDouble()).run()
    write_study(tmp_path, **edit)
    with pytest.raises(UsageError, match=key) as err:
        driver(tmp_path, UnitsDouble())
    assert "pass --fresh to start over" in str(err.value) and "\n" not in str(err.value)
    j = driver(tmp_path, UnitsDouble(), fresh=True).run()
    assert j.counts()["done"] == len(j.order())
    assert len(list((tmp_path / "results").glob("study-t.*"))) == 1  # the old run, moved aside


def test_seed_edit_is_refused_once_units_finished_double(tmp_path: Path) -> None:
    from infra.errors import UsageError

    write_study(tmp_path, order="randomized", seed=1)
    driver(tmp_path, UnitsDouble()).run()
    write_study(tmp_path, order="randomized", seed=2)
    with pytest.raises(UsageError, match=r"seed changed \(1 -> 2\)"):
        driver(tmp_path, UnitsDouble())


def test_changed_suite_file_is_refused_even_with_the_same_study_file_double(
    tmp_path: Path,
) -> None:
    """The study file names the suite by path and is unchanged; the suite file's content changed
    after units ran it: their records are not the suite's any more."""
    from infra.errors import UsageError

    suite = tmp_path / "mine.yaml"
    suite.write_text((PROJECT / "workloads/suites/smoke.yaml").read_text())
    write_study(tmp_path, suite="mine.yaml")
    driver(tmp_path, UnitsDouble()).run()
    suite.write_text(suite.read_text() + "\n# steps changed\n")
    with pytest.raises(UsageError, match=r"suite file .*mine\.yaml changed since"):
        driver(tmp_path, UnitsDouble())


def test_edit_before_any_unit_finished_continues_and_keeps_the_built_stacks_double(
    tmp_path: Path,
) -> None:
    """Interrupted in the first unit: any edit continues (nothing finished to invalidate), and
    the journal keeps the stacks the study built so the teardown still finds them."""
    write_study(tmp_path)
    with pytest.raises(StudyInterrupted):
        driver(tmp_path, UnitsDouble(script={1: "interrupt"})).run()
    j = find_journal(tmp_path / "results", "t")
    j.built()["some-stack"] = {"up": True}
    j.save()
    write_study(tmp_path, suite="closer2018")
    d = driver(tmp_path, UnitsDouble())
    assert d.journal.edited == ["suite", "arms[0].suite", "arms[1].suite"]
    assert d.journal.built()["some-stack"] == {"up": True}
    assert d.journal.data["suite"] == "closer2018"


def test_lab_arm_with_a_suite_file_sets_the_workload_run_suite_double(tmp_path: Path) -> None:
    """A lab arm whose suite is a .yaml path: ``gpulab:suite`` names shipped suites only, so the
    file goes to ``gpulab:workload_variables`` (the stack's other variables kept) as
    ``workload_run_suite``; pulumi.automation is the DOUBLE of tests/lifecycle."""
    import yaml

    from tests.lifecycle.test_automation_double import AutoDouble
    from tests.study.test_lab_double import engine, project

    suite = tmp_path / "mine.yaml"
    suite.write_text((PROJECT / "workloads/suites/smoke.yaml").read_text())
    auto = AutoDouble()
    engine(auto, tmp_path / "results")
    proj = project(tmp_path)
    stack_file = proj / "Pulumi.nova-pci.yaml"
    doc = yaml.safe_load(stack_file.read_text())
    doc["config"]["gpulab:workload_variables"] = {"workload_run_expect_device": "cpu"}
    stack_file.write_text(yaml.safe_dump(doc))
    study = tmp_path / "t.yaml"
    write_study(
        tmp_path,
        suite=str(suite),
        repeats=1,
        arms=[{"name": "vm", "stack": "nova-pci", "exec_env": "native"}],
    )
    d = Driver(
        load_study(str(study)),
        tmp_path / "results",
        RunOptions(auto=auto, repo=proj),
        Console(file=io.StringIO()),
    )
    assert d.run().counts()["done"] == 1
    sets = {c[2]: c[3] for c in auto.calls if c[0] == "set_config"}
    assert "gpulab:suite" not in sets
    assert json.loads(sets["gpulab:workload_variables"]) == {
        "workload_run_expect_device": "cpu",
        "workload_run_suite": str(suite.resolve()),
    }
