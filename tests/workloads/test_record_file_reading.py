"""Record files through workloads.records' own API: schema 3's fingerprint written once per
file and put back on read, the note for a fingerprint no input carries (to the problems
list, naming the file), and files with no lines or a bad last line. Real files in tmp_path.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from workloads.fingerprints import ref_of
from workloads.records import (
    RecordWarning,
    RecordWriter,
    iter_records,
    make_record,
    read_records,
)

FP: dict[str, Any] = {"host": "h1", "gpu": {"count": 2, "driver_version": "535.104.05"}}


def _rec(**extra: Any) -> dict[str, Any]:
    fields: dict[str, Any] = dict(run_id="r1", suite="s", experiment="e", model="m")
    return make_record(**{**fields, **extra})


def _write(path: Path, *recs: dict[str, Any]) -> None:
    with RecordWriter(path) as w:
        for r in recs:
            w.write(r)


def _on_disk(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def _split_file(tmp_path: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    """A file of three schema-3 records with one fingerprint, and a copy of it without its
    first line (the only one that holds the fingerprint in full)."""
    whole, part = tmp_path / "whole.jsonl", tmp_path / "part.jsonl"
    recs = [_rec(fingerprint=FP, repeat=i) for i in range(3)]
    _write(whole, *recs)
    lines = whole.read_text(encoding="utf-8").split("\n")
    part.write_text("\n".join(lines[1:]), encoding="utf-8")
    return whole, part, recs


def test_schema_3_writer_keeps_the_fingerprint_in_the_first_record_only(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    recs = [_rec(fingerprint=FP, repeat=i) for i in range(3)]
    _write(path, *recs)
    lines = _on_disk(path)
    assert [r["fingerprint_ref"] for r in lines] == [ref_of(FP)] * 3
    assert lines[0]["fingerprint"] == FP
    assert ["fingerprint" in r for r in lines[1:]] == [False, False]
    back = read_records(path)
    assert [r["fingerprint"] for r in back] == [FP] * 3
    assert [r["repeat"] for r in back] == [0, 1, 2]


def test_schema_2_records_keep_their_fingerprint_in_every_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _write(path, *(_rec(schema_version=2, fingerprint=FP, repeat=i) for i in range(2)))
    lines = _on_disk(path)
    assert [r["fingerprint"] for r in lines] == [FP, FP]
    assert ["fingerprint_ref" in r for r in lines] == [False, False]


def test_an_empty_file_reads_as_no_records(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert list(iter_records(path, strict=True)) == []
    assert read_records(path) == []


def test_a_single_record_without_a_newline_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    rec = _rec()
    path.write_text(json.dumps(rec), encoding="utf-8")
    assert list(iter_records(path, strict=True)) == [rec]


def test_a_bad_last_line_ending_in_a_newline_is_named_the_last_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    rec, torn = _rec(), '{"schema_version": 3, "rec'
    path.write_text(json.dumps(rec) + "\n" + torn + "\n", encoding="utf-8")
    problems: list[str] = []
    assert read_records(path, problems) == [rec]
    assert problems == [
        f"{path}:2: skipped ({len(torn)} chars, last line, a writer killed mid-line)"
    ]


def test_iter_records_notes_a_missing_fingerprint_in_problems_naming_the_file(
    tmp_path: Path,
) -> None:
    _, part, _ = _split_file(tmp_path)
    problems: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a note given a problems list is not also a warning
        got = list(iter_records(part, problems=problems))
    assert [r["repeat"] for r in got] == [1, 2]
    assert ["fingerprint" in r for r in got] == [False, False]
    assert [r["fingerprint_ref"] for r in got] == [ref_of(FP)] * 2
    assert len(problems) == 1
    assert problems[0].startswith(f"{part}: 2 record(s) name a fingerprint (fingerprint_ref)")


def test_iter_records_without_a_problems_list_warns_of_a_missing_fingerprint(
    tmp_path: Path,
) -> None:
    _, part, _ = _split_file(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = list(iter_records(part))
    assert len(got) == 2
    assert [(w.category, str(w.message).split(":")[0]) for w in caught] == [
        (RecordWarning, str(part))
    ]


def test_read_records_notes_a_missing_fingerprint_in_problems_naming_the_file(
    tmp_path: Path,
) -> None:
    _, part, _ = _split_file(tmp_path)
    problems: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = read_records([part], problems)
    assert ["fingerprint" in r for r in got] == [False, False]
    assert len(problems) == 1
    assert problems[0].startswith(f"{part}: 2 record(s) name a fingerprint")


def test_read_records_puts_back_a_fingerprint_carried_by_another_file(tmp_path: Path) -> None:
    whole, part, recs = _split_file(tmp_path)
    problems: list[str] = []
    got = read_records([part, whole], problems)
    assert problems == []
    assert [r["fingerprint"] for r in got] == [FP] * 5
    assert [r["record_id"] for r in got] == [r["record_id"] for r in recs[1:] + recs]
