"""Schema 3 (workloads.fingerprints): the writer keeps each fingerprint once per file, the
readers of workloads.records put it back, a file stays whole on its own. Real files only."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from workloads.fingerprints import REF, Inliner, ref_of, resolve
from workloads.records import (
    RecordWarning,
    RecordWriter,
    iter_records,
    make_record,
    read_records,
)

FP = {"host": "h1", "gpu": {"count": 2, "driver_version": "535.104.05"}, "cpu": {"model": "x"}}
OTHER = {"host": "h2", "gpu": {"count": 1}}


def _rec(fp: dict[str, Any] | None = FP, **extra: Any) -> dict[str, Any]:
    fields: dict[str, Any] = dict(run_id="r1", suite="s", experiment="e", model="m", **extra)
    if fp is not None:
        fields["fingerprint"] = fp
    return make_record(**fields)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_reference_is_the_sha256_of_the_canonical_json() -> None:
    text = json.dumps(FP, sort_keys=True, separators=(",", ":"))
    assert ref_of(FP) == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    shuffled = {"cpu": {"model": "x"}, "gpu": {"driver_version": "535.104.05", "count": 2},
                "host": "h1"}  # fmt: skip
    assert ref_of(shuffled) == ref_of(FP) != ref_of(OTHER)
    assert ref_of({"name": "é"}) == ref_of(json.loads(json.dumps({"name": "é"})))


def test_the_writer_writes_each_fingerprint_in_full_once(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    recs = [_rec(), _rec(), _rec(OTHER), _rec(), _rec(None), _rec(OTHER)]
    with RecordWriter(out) as w:
        for r in recs:
            w.write(r)
    lines = _lines(out)
    assert [("fingerprint" in r, r.get(REF)) for r in lines] == [
        (True, ref_of(FP)), (False, ref_of(FP)), (True, ref_of(OTHER)), (False, ref_of(FP)),
        (False, None), (False, ref_of(OTHER)),
    ]  # fmt: skip
    assert lines[0]["fingerprint"] == FP and lines[2]["fingerprint"] == OTHER
    assert all("fingerprint" in r for r in recs[:4])  # the caller's records are not changed
    got = list(iter_records(out, strict=True))
    assert [r.get("fingerprint") for r in got] == [FP, FP, OTHER, FP, None, OTHER]
    assert [r["record_id"] for r in got] == [r["record_id"] for r in recs]


def test_a_file_copied_alone_or_appended_to_by_a_new_writer_reads_whole(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    with RecordWriter(a) as w:
        w.write(_rec())
        w.write(_rec())
    with RecordWriter(a) as w:  # a second run appending: its first record carries it again
        w.write(_rec())
    assert ["fingerprint" in r for r in _lines(a)] == [True, False, True]
    copy = tmp_path / "elsewhere" / "a.jsonl"
    copy.parent.mkdir()
    shutil.copy(a, copy)
    problems: list[str] = []
    assert [r["fingerprint"] for r in iter_records(copy, problems=problems)] == [FP] * 3
    assert problems == []


def test_after_a_torn_tail_is_moved_aside_the_fingerprint_is_written_again(
    tmp_path: Path,
) -> None:
    """The writer cannot know what the cut line held: the next record carries it in full."""
    out = tmp_path / "r.jsonl"
    problems: list[str] = []
    with RecordWriter(out, problems) as w:
        w.write(_rec())
        with open(out, "a", encoding="utf-8") as fh:
            fh.write('{"schema_version": 3, "record_id": "torn')  # another writer, killed
        w.write(_rec())
        w.write(_rec())
    assert len(problems) == 1 and "torn last line" in problems[0]
    assert ["fingerprint" in r for r in _lines(out)] == [True, True, False]


def test_a_fingerprint_that_is_not_json_is_refused_as_the_record_was(tmp_path: Path) -> None:
    """A NaN inside the fingerprint: the record is written as failed, naming the field, the
    value as null, and its reference is that of what was written."""
    out = tmp_path / "r.jsonl"
    with RecordWriter(out) as w:
        w.write(_rec({"host": "h", "temp_c": float("nan")}, images_per_sec=1.0))
    (line,) = _lines(out)
    assert line["status"] == "failed" and "fingerprint.temp_c" in line["error"]
    assert line["fingerprint"] == {"host": "h", "temp_c": None}
    assert line[REF] == ref_of({"host": "h", "temp_c": None})


def test_schema_2_records_keep_their_fingerprint_in_every_record(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    with RecordWriter(out) as w:
        for _ in range(2):
            w.write({**_rec(), "schema_version": 2})
    assert [("fingerprint" in r, REF in r) for r in _lines(out)] == [(True, False)] * 2


def test_records_of_several_files_take_a_fingerprint_from_another(tmp_path: Path) -> None:
    """A file split after its first record: read alone, the second part's records are read
    without a fingerprint and one note names the file; read with the first part, they get it."""
    whole = tmp_path / "whole.jsonl"
    with RecordWriter(whole) as w:
        for _ in range(4):
            w.write(_rec())
    text = whole.read_text(encoding="utf-8").splitlines(keepends=True)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(text[0], encoding="utf-8")
    b.write_text("".join(text[1:]), encoding="utf-8")
    problems: list[str] = []
    assert [r.get("fingerprint") for r in iter_records(b, problems=problems)] == [None] * 3
    assert problems == [
        f"{b}: 3 record(s) name a fingerprint (fingerprint_ref) that no record of the inputs "
        "carries; read without it (the file that holds it in full is not among the inputs: "
        "read the whole results directory)"
    ]
    with pytest.warns(RecordWarning, match="name a fingerprint"):
        list(iter_records(b))
    problems.clear()
    assert [r["fingerprint"] for r in read_records([b, a], problems)] == [FP] * 4
    assert problems == []


def test_resolve_takes_the_first_carrier_and_shares_it() -> None:
    ref = ref_of(FP)
    first, second = dict(FP), {**FP, "host": "edited"}
    recs: list[dict[str, Any]] = [
        {REF: ref}, {REF: ref, "fingerprint": first}, {REF: ref, "fingerprint": second},
        {REF: ref}, {REF: "sha256:" + "0" * 64}, {"fingerprint": OTHER},
    ]  # fmt: skip
    resolve(recs)
    assert recs[0]["fingerprint"] is first and recs[3]["fingerprint"] is first
    assert recs[2]["fingerprint"] is second  # a record's own is never replaced
    assert "fingerprint" not in recs[4] and recs[5] == {"fingerprint": OTHER}


def test_the_inliner_holds_a_reference_only_once_it_is_written() -> None:
    """A write that failed (a full disk) leaves the reference unheld: the next record
    carries the fingerprint again."""
    inl = Inliner()
    rec = _rec()
    out, ref = inl.stored(rec)
    assert "fingerprint" in out and ref == ref_of(FP)
    assert "fingerprint" in inl.stored(rec)[0]  # not held yet
    inl.held(ref)
    out2, ref2 = inl.stored(rec)
    assert "fingerprint" not in out2 and out2[REF] == ref and ref2 is None
    inl.forget()
    assert "fingerprint" in inl.stored(rec)[0]
