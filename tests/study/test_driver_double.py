"""The study driver with a DOUBLE of the local unit runner (no framework): the journal, the
failed-arm path, --fail-fast, an injected interrupt mid-unit and the resume, counted in
records: nothing finished is lost or written twice."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

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
    assert set(before) <= set(after) and len(after) == len(set(after)) == 12
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
    units = UnitsDouble(per_unit=3, script={3: "interrupt"})
    with pytest.raises(StudyInterrupted, match="interrupted in arm b, repeat 2"):
        driver(tmp_path, units).run()
    j = find_journal(tmp_path / "results", "t")
    assert [j.unit(u)["status"] for u in j.order()] == ["done", "done", "pending", "pending"]
    done_before = ids(j.record_files())
    assert len(done_before) == 6  # 2 finished units x 3 records
    assert len(ids([j.units_dir / "b.r2.stopped-1.jsonl"])) == 1  # the partial unit, aside
    units2 = UnitsDouble(per_unit=3)
    j2 = driver(tmp_path, units2).run()
    assert units2.calls == ["b", "a"]  # the stopped unit again, then the rest
    after = ids(j2.record_files())
    assert len(after) == 12 and len(set(after)) == 12
    assert after[:6] == done_before  # the finished units' records, unchanged and in order
    assert [r["resumed"] for r in j2.data["runs"]] == [False, True]
    assert j2.data["runs"][0]["interrupted"] is True


def test_other_study_file_version_is_refused_unless_fresh(tmp_path: Path) -> None:
    from infra.errors import UsageError

    write_study(tmp_path)
    driver(tmp_path, UnitsDouble()).run()
    write_study(tmp_path, repeats=3)
    with pytest.raises(UsageError, match="different version of the study file; pass --fresh"):
        driver(tmp_path, UnitsDouble())
    j = driver(tmp_path, UnitsDouble(), fresh=True).run()
    assert j.counts()["done"] == 6
    assert len(list((tmp_path / "results").glob("study-t.*"))) == 1  # the old run, moved aside
