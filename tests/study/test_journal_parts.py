"""The study journal's parts (infra/study/state.py) that the journal and CLI cases pass over,
called directly (milliseconds a case): every key a new journal holds, the file ``save``
writes, a resume under an unchanged study file (no edit recorded; a failed unit's suite file
still checked), a study folder without a journal, an arm without a config, and a journal whose
JSON Python refuses for another reason than its syntax."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from infra.errors import UsageError
from infra.study.model import Study, parse_study
from infra.study.plan import Unit, plan
from infra.study.state import Journal, arm_info, load_journal, open_journal
from workloads.suites import SUITES_DIR


def study(tmp_path: Path, digest: str = "d1", **change: Any) -> Study:
    d: dict[str, Any] = {
        "name": "t",
        "suite": "smoke",
        "repeats": 1,
        "arms": [
            {"name": "a", "stack": "local", "exec_env": "native"},
            {"name": "b", "stack": "local", "exec_env": "docker"},
        ],
    }
    d.update(change)
    return parse_study(d, tmp_path / "t.yaml", digest)


def opened(tmp_path: Path, s: Study) -> tuple[Journal, bool]:
    return open_journal(tmp_path / "results", s, plan(s), None)


def test_a_new_journal_holds_every_key_with_its_first_value(tmp_path: Path) -> None:
    s = study(tmp_path)
    before = datetime.now().astimezone()
    j, resumed = opened(tmp_path, s)
    assert not resumed
    on_disk = json.loads(j.path.read_text(encoding="utf-8"))
    assert on_disk == j.data
    assert sorted(on_disk) == sorted(
        [
            "schema", "study", "file", "digest", "suite", "suite_digests", "order_kind",
            "seed", "rebuild", "baseline", "claims", "arms", "order", "units", "stacks",
            "teardown", "started", "runs", "updated",
        ]
    )  # fmt: skip
    assert on_disk["schema"] == 1
    assert on_disk["file"] == str(tmp_path / "t.yaml")
    assert (on_disk["stacks"], on_disk["teardown"], on_disk["runs"]) == ({}, None, [])
    for key in ("started", "updated"):
        at = datetime.fromisoformat(on_disk[key])
        assert at.utcoffset() is not None and abs((at - before).total_seconds()) < 60, key


def test_save_writes_the_data_indented_with_sorted_keys_and_stamps_it(tmp_path: Path) -> None:
    j = Journal(tmp_path / "study.json", {"zeta": [1, {"b": 2, "a": 1}], "alpha": None})
    j.save()
    text = j.path.read_text(encoding="utf-8")
    assert text == json.dumps(j.data, indent=2, sort_keys=True) + "\n"
    assert text.startswith('{\n  "alpha": null,\n  "updated": "')
    assert isinstance(j.data["updated"], str)
    assert datetime.fromisoformat(j.data["updated"]).utcoffset() is not None


def test_a_resume_under_the_same_study_file_records_no_edit(tmp_path: Path) -> None:
    s = study(tmp_path)
    opened(tmp_path, s)
    j, resumed = opened(tmp_path, s)
    assert resumed and j.edited == []
    assert "edits" not in j.data
    assert "edits" not in json.loads(j.path.read_text())


def test_a_failed_units_suite_file_edited_since_is_refused_under_the_same_study_file(
    tmp_path: Path,
) -> None:
    """A failed unit's records are reported too: its suite file may not change under it,
    whether or not the study file changed."""
    suite = tmp_path / "mine.yaml"
    shutil.copy(SUITES_DIR / "smoke.yaml", suite)
    s = study(tmp_path, suite=str(suite))
    j, _ = opened(tmp_path, s)
    j.set_unit(Unit("a", 1), "failed", reason="runner exited 1")
    suite.write_text(suite.read_text() + "\n# edited\n")
    with pytest.raises(
        UsageError, match=f"^study t: suite file {suite} changed since, but finished units"
    ):
        opened(tmp_path, s)


def test_a_study_folder_without_a_journal_is_used_as_it_is(tmp_path: Path) -> None:
    """Not ``--fresh``: a folder left without its journal is not moved aside."""
    folder = tmp_path / "results" / "study-t"
    (folder / "units").mkdir(parents=True)
    (folder / "units" / "a.r1.jsonl").write_text("{}\n")
    j, resumed = opened(tmp_path, study(tmp_path))
    assert not resumed and j.dir == folder
    assert (folder / "units" / "a.r1.jsonl").read_text() == "{}\n"
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["study-t"]


def test_arm_info_of_an_arm_without_a_config_has_an_empty_one() -> None:
    arm = SimpleNamespace(
        stack="local", topology="local", exec_env="native", label="a", suite="smoke", sharing=None
    )
    assert arm_info(arm)["config"] == {}


def test_a_journal_whose_json_python_refuses_for_its_size_of_number_is_one_line(
    tmp_path: Path,
) -> None:
    """An integer of 5000 digits is valid JSON that Python's parser refuses (a ValueError that
    is no JSONDecodeError: it has no line to name)."""
    path = tmp_path / "study-t" / "study.json"
    path.parent.mkdir()
    path.write_text('{"schema": ' + "9" * 5000 + "}\n")
    with pytest.raises(UsageError) as exc:
        load_journal(path)
    assert str(exc.value).startswith(f"study journal {path}: is not valid JSON; restore it")
