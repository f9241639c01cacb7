"""A hand-edited (or truncated, or foreign) `study.json`: every study command says which key of
which file is wrong in one line, exit 2, without a traceback, and `run --fresh` is the way out
(the old directory is moved aside, whole)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from infra.cli import main
from tests.study.helpers import skipped_study

Edit = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> dict[str, Any]:
        *parents, last = path.split("/")
        node: Any = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if value is DELETE:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
        return doc

    return edit


DELETE = object()
EDITS: list[tuple[str, Edit | bytes, str]] = [
    ("empty file", b"", "is not valid JSON at line 1"),
    ("cut in half", b'{"study": "t", "order": [["a", 1', "is not valid JSON at line 1"),
    ("a list", b"[]", "is a JSON list, not a study journal (an object)"),
    ("not UTF-8", b'{"study": "\xff"}', "is not UTF-8 JSON"),
    ("nested deep", b"[" * 100_000 + b"]" * 100_000, "nests too deep"),
    ("no units", _set("units", DELETE), "units: missing"),
    ("units a list", _set("units", []), "units: not a mapping of units"),
    ("unit a string", _set("units/a#1", "done"), "units.a#1: not a mapping"),
    ("status unknown", _set("units/a#1/status", "walking"), "units.a#1.status: 'walking' is not"),
    ("records text", _set("units/a#1/records", "3"), "units.a#1.records: '3' is not a count"),
    ("repeat text", _set("units/a#1/repeat", "1"), "units.a#1: arm/repeat 'a'/'1' is not a#1"),
    ("unit missing", _set("units/a#1", DELETE), "units: no entry for unit a#1 of the order"),
    ("unit extra", _set("units/z#1", {"arm": "z", "repeat": 1, "status": "done"}),
     "units.z#1: is not in the order"),
    ("order text", _set("order", "a,b"), "order: not a list of [arm, repeat] pairs"),
    ("order pair short", _set("order/0", ["a"]), "order[0]: ['a'] is not an [arm, repeat] pair"),
    ("order repeat 0", _set("order/0", ["a", 0]), "order[0]: ['a', 0] is not an [arm, repeat]"),
    ("order twice", _set("order/1", ["a", 1]), "order: lists a unit twice"),
    ("arms a list", _set("arms", []), "arms: not a mapping of arm names"),
    ("arm stack null", _set("arms/a/stack", None), "arms.a.stack: None is not text"),
    ("arm removed", _set("arms/b", DELETE), "units.b#1: arm 'b' is not in arms"),
    ("baseline list", _set("baseline", ["a"]), "baseline: ['a'] is not one of the arms"),
    ("seed text", _set("seed", "7"), "seed: '7' is not an integer"),
    ("claims text", _set("claims", "x"), "claims: not a list of claim ids"),
    ("stacks list", _set("stacks", []), "stacks: not a mapping of stacks"),
    ("runs mapping", _set("runs", {}), "runs: not a list of mappings"),
    ("teardown text", _set("teardown", "done"), "teardown: not a teardown"),
    ("suite digests", _set("suite_digests", {"smoke": 3}), "suite_digests: not a mapping"),
]  # fmt: skip


def run(tmp_path: Path, *args: str) -> int:
    return main(["study", args[0], str(tmp_path / "t.yaml"), *args[1:],
                 "--results-dir", str(tmp_path / "results"), *(["--no-report"] if args[0] == "run"
                                                              else [])])  # fmt: skip


@pytest.mark.parametrize(("edit", "line"), [e[1:] for e in EDITS], ids=[e[0] for e in EDITS])
def test_a_hand_edited_journal_is_one_line_naming_the_key_and_fresh_starts_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Edit | bytes, line: str
) -> None:
    skipped_study(tmp_path)
    assert run(tmp_path, "run") == 0
    path = tmp_path / "results" / "study-t" / "study.json"
    if isinstance(edit, bytes):
        path.write_bytes(edit)
    else:
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    edited = path.read_bytes()
    capsys.readouterr()
    for command in ("run", "status", "report"):
        assert run(tmp_path, command) == 2, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert err.startswith(f"gpulab: error: study journal {path}: {line}"), err
        assert err.endswith(
            "; restore it, or `gpulab study run t --fresh` starts the study over (the old "
            "directory is moved aside)\n"
        )
    assert path.read_bytes() == edited  # nothing was written over it
    assert run(tmp_path, "run", "--fresh") == 0
    (aside,) = (tmp_path / "results").glob("study-t.*Z")
    assert (aside / "study.json").read_bytes() == edited  # kept, whole
    assert json.loads(path.read_text())["units"]["a#1"]["status"] == "skipped"


def test_a_journal_that_is_a_directory_is_one_line_and_fresh_moves_it_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skipped_study(tmp_path)
    path = tmp_path / "results" / "study-t" / "study.json"
    path.mkdir(parents=True)
    assert run(tmp_path, "run") == 2
    assert capsys.readouterr().err.startswith(
        f"gpulab: error: study journal {path}: is a directory, not a study journal; "
    )
    assert run(tmp_path, "run", "--fresh") == 0
    assert path.is_file()


def test_an_interrupted_fresh_leaves_the_old_study_whole_and_the_next_run_starts_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM just after `--fresh` moved the old directory aside, before the new journal:
    exit 143, the old study whole under its new name, and `run` then starts a new one."""
    import signal

    from infra.signals import Stopped
    from infra.study import state

    skipped_study(tmp_path)
    assert run(tmp_path, "run") == 0
    old = (tmp_path / "results" / "study-t" / "study.json").read_bytes()
    real_save = state.Journal.save

    def stopped(self: state.Journal) -> None:
        raise Stopped(signal.SIGTERM)

    monkeypatch.setattr(state.Journal, "save", stopped)
    capsys.readouterr()
    assert run(tmp_path, "run", "--fresh") == 143
    assert capsys.readouterr().err == "gpulab: error: interrupted (SIGTERM)\n"
    (aside,) = (tmp_path / "results").glob("study-t.*Z")
    assert (aside / "study.json").read_bytes() == old
    assert not (tmp_path / "results" / "study-t").exists()
    monkeypatch.setattr(state.Journal, "save", real_save)
    assert run(tmp_path, "run") == 0
    assert (tmp_path / "results" / "study-t" / "study.json").is_file()
