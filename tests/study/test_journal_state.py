"""The study's journal (infra/study/state.py) called directly (milliseconds a case): what a
new journal holds, what a resume under an edited study file keeps or refuses, the record
counts of unit files, moving a study aside, and the one line a bad journal file gives."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from infra.errors import UsageError
from infra.study.journal_check import JournalError
from infra.study.model import Study
from infra.study.plan import Unit, plan
from infra.study.state import (
    Journal,
    arm_info,
    find_journal,
    load_journal,
    move_aside,
    open_journal,
    record_count,
    suite_digest,
    unit_file_problem,
    unit_file_problems,
)
from tests.study.helpers import parsed_study
from workloads.suites import SUITES_DIR


def study(tmp_path: Path, digest: str = "d1", **change: Any) -> Study:
    return parsed_study(tmp_path, digest, **{"repeats": 2, **change})


def opened(tmp_path: Path, s: Study, seed: int | None = None) -> Journal:
    j, resumed = open_journal(tmp_path / "results", s, plan(s, seed), seed)
    assert not resumed
    return j


def finish(j: Journal, u: Unit, records: int = 1) -> None:
    f = j.records_file(u)
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(records)))
    j.set_unit(u, "done", records=records)


def test_a_new_journal_holds_the_plan_and_every_unit_pending(tmp_path: Path) -> None:
    s = study(tmp_path)
    j = opened(tmp_path, s)
    assert j.path == tmp_path / "results" / "study-t" / "study.json"
    assert j.units_dir == j.path.parent / "units"
    on_disk = json.loads(j.path.read_text())
    assert on_disk == j.data
    assert on_disk["order"] == [["a", 1], ["b", 1], ["b", 2], ["a", 2]]
    assert on_disk["units"]["b#2"] == {"arm": "b", "repeat": 2, "status": "pending"}
    assert on_disk["arms"]["b"] == {
        "stack": "local",
        "topology": "local",
        "exec_env": "docker",
        "label": "b",
        "suite": "smoke",
        "sharing": None,
        "config": {},
    }
    assert (on_disk["digest"], on_disk["seed"], on_disk["order_kind"]) == (
        "d1",
        None,
        "interleaved",
    )
    assert on_disk["suite_digests"] == {"smoke": suite_digest("smoke")}
    assert j.counts() == {"pending": 4, "running": 0, "done": 0, "failed": 0, "skipped": 0}
    assert j.built() == {}
    del j.data["stacks"]  # a journal from before the stacks were kept
    j.built()["lab"] = {"last": ["a", 1]}
    assert j.data["stacks"] == {"lab": {"last": ["a", 1]}}
    assert j.order() == plan(s)


def test_the_same_study_file_resumes_the_journal_as_it_is(tmp_path: Path) -> None:
    s = study(tmp_path)
    j = opened(tmp_path, s)
    finish(j, Unit("a", 1), 2)
    again, resumed = open_journal(tmp_path / "results", s, plan(s), None)
    assert resumed and again.edited == []
    assert again.unit(Unit("a", 1)) == {"arm": "a", "repeat": 1, "status": "done", "records": 2}
    assert again.record_files() == [j.records_file(Unit("a", 1))]
    assert again.counts()["done"] == 1


def test_fresh_moves_the_old_study_aside_and_starts_over(tmp_path: Path) -> None:
    s = study(tmp_path)
    j = opened(tmp_path, s)
    finish(j, Unit("a", 1))
    new, resumed = open_journal(tmp_path / "results", s, plan(s), None, fresh=True)
    assert not resumed
    assert new.counts()["done"] == 0
    (aside,) = [p for p in (tmp_path / "results").iterdir() if p.name != "study-t"]
    assert aside.name.startswith("study-t.")
    assert (aside / "units" / "a.r1.jsonl").is_file()


def test_moving_aside_twice_in_one_second_keeps_both(tmp_path: Path) -> None:
    first = tmp_path / "study-x"
    first.mkdir()
    one = move_aside(first)
    first.mkdir()
    two = move_aside(first)
    first.mkdir()
    three = move_aside(first)
    assert one != two != three and one.is_dir() and two.is_dir() and three.is_dir()
    if one.name.split(".")[1] == two.name.split(".")[1].split("-")[0]:
        assert two.name == f"{one.name}-2"
        if three.name.startswith(one.name):
            assert three.name == f"{one.name}-3"


def test_an_edit_that_keeps_finished_units_is_continued_and_names_what_changed(
    tmp_path: Path,
) -> None:
    j = opened(tmp_path, study(tmp_path))
    finish(j, Unit("a", 1))
    edited = study(
        tmp_path,
        "d2",
        repeats=3,
        baseline="b",
        claims=["closer2018/single_synthetic"],
        arms=[
            {"name": "a", "stack": "local", "exec_env": "native"},
            {"name": "b", "stack": "local", "exec_env": "docker"},
            {"name": "c", "stack": "local", "exec_env": "native"},
        ],
    )
    j2, resumed = open_journal(tmp_path / "results", edited, plan(edited), None)
    assert resumed
    assert j2.edited == ["repeats", "baseline", "claims", "arms[2]: c added"]
    assert j2.unit(Unit("a", 1))["status"] == "done"
    assert j2.unit(Unit("c", 3)) == {"arm": "c", "repeat": 3, "status": "pending"}
    assert len(j2.order()) == 9
    assert j2.data["digest"] == "d2" and j2.data["baseline"] == "b"
    assert j2.data["claims"] == ["closer2018/single_synthetic"]
    (edit,) = j2.data["edits"]
    assert (edit["from"], edit["to"], edit["changed"]) == ("d1", "d2", j2.edited)
    assert sorted(edit) == ["at", "changed", "from", "to"] and edit["at"].endswith("+00:00")
    assert json.loads(j2.path.read_text())["digest"] == "d2"


def test_an_arm_without_finished_units_may_change_or_go(tmp_path: Path) -> None:
    j = opened(tmp_path, study(tmp_path))
    finish(j, Unit("a", 1))
    edited = study(
        tmp_path,
        "d2",
        arms=[
            {"name": "a", "stack": "local", "exec_env": "native"},
            {"name": "c", "stack": "local", "exec_env": "docker", "label": "cc"},
        ],
    )
    j2, _ = open_journal(tmp_path / "results", edited, plan(edited), None)
    assert j2.edited == ["arms: b removed", "arms[1]: c added"]
    assert set(j2.data["arms"]) == {"a", "c"}
    j3 = opened(tmp_path / "2", study(tmp_path))
    finish(j3, Unit("a", 1))
    relabel = study(
        tmp_path,
        "d3",
        arms=[
            {"name": "a", "stack": "local", "exec_env": "native"},
            {"name": "b", "stack": "local", "exec_env": "native", "label": "bb"},
        ],
    )
    j4, _ = open_journal(tmp_path / "2" / "results", relabel, plan(relabel), None)
    assert j4.edited == ["arms[1].exec_env", "arms[1].label"]
    assert j4.data["arms"]["b"]["label"] == "bb"


@pytest.mark.parametrize(
    ("change", "line"),
    [
        ({"suite": "closer2018"}, "suite changed ('smoke' -> 'closer2018')"),
        ({"order": "randomized", "seed": 5}, "order changed ('interleaved' -> 'randomized')"),
        ({"rebuild": "every-unit"}, "rebuild changed ('never' -> 'every-unit')"),
        ({"repeats": 1}, "repeats is 1, fewer than the 2 with finished units"),
        (
            {"arms": [{"name": "b", "stack": "local", "exec_env": "docker"}]},
            "arms no longer list arm 'a'",
        ),
        (
            {
                "arms": [
                    {"name": "b", "stack": "local", "exec_env": "docker"},
                    {"name": "a", "stack": "local", "exec_env": "docker"},
                ]
            },
            "arms[1].exec_env of arm a changed ('native' -> 'docker')",
        ),
    ],
    ids=["suite", "order", "rebuild", "repeats", "arm-removed", "arm-changed"],
)
def test_an_edit_of_what_finished_units_ran_with_is_refused_naming_the_key(
    tmp_path: Path, change: dict[str, Any], line: str
) -> None:
    j = opened(tmp_path, study(tmp_path))
    finish(j, Unit("a", 2))
    j.set_unit(Unit("b", 1), "failed", reason="x")
    before = j.path.read_text()
    with pytest.raises(UsageError) as exc:
        open_journal(tmp_path / "results", (s := study(tmp_path, "d2", **change)), plan(s), 9)
    text = str(exc.value)
    assert text.startswith(f"study t: {line}, but finished units in {j.path} ran with the old")
    assert text.endswith("or pass --fresh to start over (finished records are moved aside)")
    assert j.path.read_text() == before  # the journal is left as it was


def test_the_same_edits_before_any_unit_finished_are_continued(tmp_path: Path) -> None:
    j = opened(tmp_path, study(tmp_path))
    j.set_unit(Unit("a", 1), "running")
    j.set_unit(Unit("b", 1), "skipped", reason="x")
    edited = study(
        tmp_path, "d2", suite="closer2018", order="randomized", rebuild="every-unit", repeats=1
    )
    j2, _ = open_journal(tmp_path / "results", edited, plan(edited, 4), 4)
    assert j2.edited == [
        "suite",
        "order",
        "rebuild",
        "repeats",
        "arms[0].suite",
        "arms[1].suite",
    ]
    assert j2.data["seed"] == 4 and j2.data["order_kind"] == "randomized"
    assert j2.data["rebuild"] == "every-unit" and j2.data["suite"] == "closer2018"
    assert j2.order() == plan(edited, 4)


def test_a_seed_once_recorded_is_kept_and_another_one_refused(tmp_path: Path) -> None:
    s = study(tmp_path, order="randomized")
    j = opened(tmp_path, s, seed=11)
    finish(j, j.order()[0])
    same_seed = study(tmp_path, "d2", order="randomized", description="x")
    j2, _ = open_journal(tmp_path / "results", same_seed, plan(same_seed, 99), 99)
    assert j2.data["seed"] == 11 and j2.order() == plan(s, 11)
    with pytest.raises(UsageError, match=r"seed changed \(11 -> 12\)"):
        other = study(tmp_path, "d3", order="randomized", seed=12)
        open_journal(tmp_path / "results", other, plan(other, 12), 12)


def test_a_changed_suite_file_is_refused_only_where_finished_units_ran_it(tmp_path: Path) -> None:
    suite = tmp_path / "mine.yaml"
    suite.write_text((SUITES_DIR / "smoke.yaml").read_text())
    s = study(
        tmp_path,
        arms=[
            {"name": "a", "stack": "local", "exec_env": "native", "suite": "mine.yaml"},
            {"name": "b", "stack": "local", "exec_env": "docker"},
        ],
    )
    j = opened(tmp_path, s)
    ref = str(suite.resolve())
    assert j.data["suite_digests"][ref] == suite_digest(ref)
    finish(j, Unit("b", 1))  # not the arm that runs mine.yaml
    suite.write_text(suite.read_text() + "\n# changed\n")
    j2, _ = open_journal(tmp_path / "results", s, plan(s), None)
    assert j2.data["suite_digests"][ref] != suite_digest(ref)  # the first digest is kept
    finish(j2, Unit("a", 1))
    with pytest.raises(UsageError) as exc:
        open_journal(tmp_path / "results", s, plan(s), None)
    assert str(exc.value).startswith(
        f"study t: suite file {ref} changed since, but finished units in {j.path} ran with"
    )


def test_a_suite_digest_is_of_the_named_file_or_none(tmp_path: Path) -> None:
    smoke = SUITES_DIR / "smoke.yaml"
    assert suite_digest("smoke") == suite_digest(str(smoke))
    assert suite_digest("smoke") is not None and len(suite_digest("smoke") or "") == 16
    other = tmp_path / "s.yml"
    other.write_text("x")
    assert suite_digest(str(other)) == "2d711642b726b044"  # sha256("x")[:16]
    assert suite_digest(str(tmp_path / "none.yaml")) is None
    assert suite_digest("no-such-suite") is None


def test_arm_info_is_what_a_unit_is_measured_with(tmp_path: Path) -> None:
    a = dataclasses.replace(study(tmp_path).arms[0], sharing="mps", config=(("k", 1),))
    assert arm_info(a) == {
        "stack": "local",
        "topology": "local",
        "exec_env": "native",
        "label": "a",
        "suite": "smoke",
        "sharing": "mps",
        "config": {"k": 1},
    }


def test_record_count_counts_whole_objects_only(tmp_path: Path) -> None:
    f = tmp_path / "u.jsonl"
    assert record_count(f) == 0
    f.write_text('{"a": 1}\n[1]\n\nnot json\n{"b": 2}\n{"torn": ')
    assert record_count(f) == 2
    f.write_bytes(b'{"a": "\xff"}\n' + b"[" * 100000 + b"\n")
    assert record_count(f) == 1


def test_a_done_unit_whose_file_does_not_hold_its_records_is_named(tmp_path: Path) -> None:
    j = opened(tmp_path, study(tmp_path))
    finish(j, Unit("a", 1), 2)
    finish(j, Unit("b", 1), 1)
    j.set_unit(Unit("b", 2), "failed", records=3)
    j.set_unit(Unit("a", 2), "done")  # no count: nothing to compare
    assert unit_file_problems(j) == []
    j.records_file(Unit("a", 1)).write_text('{"a": 1}\n')
    j.records_file(Unit("b", 1)).unlink()
    assert unit_file_problem(j, Unit("a", 1)) == (
        "arm a, repeat 1 is done with 2 record(s) but a.r1.jsonl holds 1"
    )
    assert unit_file_problems(j) == [
        "arm a, repeat 1 is done with 2 record(s) but a.r1.jsonl holds 1",
        "arm b, repeat 1 is done with 1 record(s) but b.r1.jsonl is missing",
    ]
    assert j.record_files() == [j.records_file(Unit("a", 1))]


@pytest.mark.parametrize(
    ("raw", "line"),
    [
        (b"\xff\xfe", "is not UTF-8 JSON"),
        (b'{"a": 1,\n', "is not valid JSON at line 2"),
        (b"[" * 100000, "nests too deep to be a study journal"),
    ],
    ids=["not-utf8", "not-json", "deep"],
)
def test_a_journal_that_is_not_json_is_one_line(tmp_path: Path, raw: bytes, line: str) -> None:
    path = tmp_path / "study.json"
    path.write_bytes(raw)
    with pytest.raises(JournalError) as exc:
        load_journal(path)
    assert line in str(exc.value) and "\n" not in str(exc.value)


def test_a_journal_too_large_or_not_a_file_is_one_line(tmp_path: Path) -> None:
    from infra.study.journal_check import MAX_JOURNAL_BYTES

    path = tmp_path / "study.json"
    path.write_bytes(b" " * MAX_JOURNAL_BYTES)  # at the limit: read, and not JSON
    with pytest.raises(JournalError, match="is not valid JSON"):
        load_journal(path)
    path.write_bytes(b" " * (MAX_JOURNAL_BYTES + 1))
    with pytest.raises(JournalError) as exc:
        load_journal(path)
    assert str(exc.value).startswith(
        f"study journal {path}: is larger than {MAX_JOURNAL_BYTES} bytes; restore it"
    )
    path.unlink()
    path.mkdir()
    with pytest.raises(JournalError, match="is a directory, not a study journal"):
        load_journal(path)
    with pytest.raises(UsageError, match=r"study journal .* does not read: No such file"):
        load_journal(tmp_path / "none" / "study.json")


def test_a_study_not_run_yet_says_how_to_run_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as exc:
        find_journal(tmp_path, "t")
    assert str(exc.value) == (
        f"study t: not run yet (no {tmp_path}/study-t/study.json); `gpulab study run t`"
    )
    j = opened(tmp_path, study(tmp_path))
    assert find_journal(tmp_path / "results", "t").data == j.data


def test_a_new_seed_is_drawn_from_the_whole_32_bit_range(monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from infra.study.plan import new_seed

    asked: list[tuple[int, int]] = []

    def randrange(self: random.SystemRandom, lo: int, hi: int) -> int:
        asked.append((lo, hi))
        return 7

    monkeypatch.setattr(random.SystemRandom, "randrange", randrange)
    assert new_seed() == 7
    assert asked == [(0, 2**32)]


def test_a_failed_unit_is_finished_too_and_keeps_what_it_ran_with(tmp_path: Path) -> None:
    j = opened(tmp_path, study(tmp_path))
    j.set_unit(Unit("b", 1), "failed", reason="runner exited 1", records=0)
    with pytest.raises(UsageError, match=r"study t: suite changed \('smoke' -> 'closer2018'\)"):
        edited = study(tmp_path, "d2", suite="closer2018")
        open_journal(tmp_path / "results", edited, plan(edited), None)


def test_a_journal_whose_order_was_emptied_by_hand_is_planned_again(tmp_path: Path) -> None:
    j = opened(tmp_path, study(tmp_path))
    j.data["order"], j.data["units"] = [], {}
    j.save()
    edited = study(tmp_path, "d2", repeats=1)
    j2, resumed = open_journal(tmp_path / "results", edited, plan(edited), None)
    assert resumed
    assert j2.edited == ["repeats"]  # from none planned to 1
    assert j2.order() == [Unit("a", 1), Unit("b", 1)]


def test_an_edit_that_leaves_the_claims_alone_does_not_name_them(tmp_path: Path) -> None:
    claims = ["closer2018/single_synthetic"]
    j = opened(tmp_path, study(tmp_path, claims=claims))
    finish(j, Unit("a", 1))
    edited = study(tmp_path, "d2", claims=claims, description="only the text changed")
    j2, _ = open_journal(tmp_path / "results", edited, plan(edited), None)
    assert j2.edited == []
    assert j2.data["edits"][-1]["changed"] == []


def test_every_arm_after_a_removed_one_is_still_compared(tmp_path: Path) -> None:
    opened(tmp_path, study(tmp_path))
    edited = study(tmp_path, "d2", arms=[{"name": "b", "stack": "local", "exec_env": "native"}])
    j2, _ = open_journal(tmp_path / "results", edited, plan(edited), None)
    assert j2.edited == ["baseline", "arms: a removed", "arms[0].exec_env"]


def test_a_suite_an_edit_adds_gets_its_digest_kept(tmp_path: Path) -> None:
    j = opened(tmp_path, study(tmp_path))
    del j.data["suite_digests"]  # a journal written before suite digests were kept
    j.save()
    suite = tmp_path / "mine.yaml"
    suite.write_text((SUITES_DIR / "smoke.yaml").read_text())
    edited = study(
        tmp_path,
        "d2",
        arms=[
            {"name": "a", "stack": "local", "exec_env": "native"},
            {"name": "b", "stack": "local", "exec_env": "docker", "suite": "mine.yaml"},
        ],
    )
    j2, _ = open_journal(tmp_path / "results", edited, plan(edited), None)
    ref = str(suite.resolve())
    assert j2.data["suite_digests"] == {"smoke": suite_digest("smoke"), ref: suite_digest(ref)}
    assert json.loads(j2.path.read_text())["suite_digests"] == j2.data["suite_digests"]


def test_a_study_moved_aside_is_stamped_in_utc_whatever_the_local_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time
    from datetime import UTC, datetime

    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30, no daylight saving
    time.tzset()
    try:
        folder = tmp_path / "study-x"
        folder.mkdir()
        stamp = move_aside(folder).name.removeprefix("study-x.")
    finally:
        monkeypatch.undo()
        time.tzset()
    moved = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - moved).total_seconds()) < 120


def test_a_study_file_moved_elsewhere_is_recorded_where_it_is_now(tmp_path: Path) -> None:
    opened(tmp_path, study(tmp_path))
    moved = dataclasses.replace(study(tmp_path, "d2"), path=tmp_path / "moved" / "t.yaml")
    j2, _ = open_journal(tmp_path / "results", moved, plan(moved), None)
    assert j2.data["file"] == str(tmp_path / "moved" / "t.yaml")


def test_a_study_that_cannot_be_moved_aside_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from workloads.files import OutputError

    def rename(self: Path, target: Path) -> Path:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    folder = tmp_path / "study-x"
    folder.mkdir()
    monkeypatch.setattr(Path, "rename", rename)
    with pytest.raises(OutputError) as exc:
        move_aside(folder)
    assert str(exc.value) == f"cannot move {str(folder)!r} aside: Invalid cross-device link"
