"""workloads.records pinned where mutation testing found it loose: run ids and timestamps, the
reader over several files, glued and torn lines, and where warnings point."""

from __future__ import annotations

import json
import re
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest

from workloads.records import (
    RecordWarning,
    RecordWriter,
    make_record,
    new_run_id,
    parse_lines,
    read_records,
    utc_now,
)

BASE = dict(run_id="r1", suite="smoke", experiment="e", model="alexnet")


def test_run_id_is_the_utc_second_and_a_random_suffix() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    rid = new_run_id()
    after = datetime.now(UTC)
    m = re.fullmatch(r"(\d{8}T\d{6}Z)-([0-9a-f]{6})", rid)
    assert m, rid
    stamp = datetime.strptime(m[1], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert before <= stamp <= after
    assert len({new_run_id() for _ in range(20)}) == 20


def test_utc_now_is_iso_with_milliseconds_and_offset() -> None:
    s = utc_now()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", s), s
    assert abs((datetime.fromisoformat(s) - datetime.now(UTC)).total_seconds()) < 5


def _write(path: Path, *recs: dict) -> None:
    with RecordWriter(path) as w:
        for r in recs:
            w.write(r)


def test_read_records_takes_one_path_or_many_in_order(tmp_path: Path) -> None:
    a, b = make_record(**{**BASE, "model": "a"}), make_record(**{**BASE, "model": "b"})
    _write(tmp_path / "1.jsonl", a)
    _write(tmp_path / "2.jsonl", b)
    assert read_records(tmp_path / "1.jsonl") == [a]
    assert read_records(str(tmp_path / "2.jsonl")) == [b]
    assert read_records([tmp_path / "2.jsonl", str(tmp_path / "1.jsonl")]) == [b, a]
    assert read_records([]) == []


def test_a_fragment_holding_braces_before_a_glued_record(tmp_path: Path) -> None:
    """The glued record is found after a fragment that has its own '{' and after a JSON object
    that is not a record."""
    rec = make_record(**BASE)
    line = '{"schema_version": 2, "params": {"x": 1}, "rec' + '{"a": {"b": 2}}' + json.dumps(rec)
    problems: list[str] = []
    got = list(parse_lines("f.jsonl", line + "\n", problems))
    assert got == [(1, rec)]
    frag = len(line) - len(json.dumps(rec))
    assert problems == [
        f"f.jsonl:1: torn fragment of {frag} chars before a record skipped; "
        "the record after it is kept"
    ]


def test_a_line_with_no_record_inside_is_skipped_and_named(tmp_path: Path) -> None:
    problems: list[str] = []
    torn, no_record = '{"a": 1, "b', '{"schema_version": 2}{"x": 1'
    got = list(parse_lines("g.jsonl", f"{torn}\n{no_record}\n[1, 2]\n", problems))
    assert got == [(3, [1, 2])]
    assert problems == [
        f"g.jsonl:1: skipped ({len(torn)} chars, not JSON)",
        f"g.jsonl:2: skipped ({len(no_record)} chars, not JSON)",
    ]


@pytest.mark.parametrize(
    "tail",
    [
        b"[1, 2, 3]",  # JSON, not an object
        b'{"schema_version": 2}',  # an object, not a valid record
        b'{"a": "\xff\xfe"}',  # not UTF-8
    ],
)
def test_a_last_line_that_is_not_a_whole_record_is_moved_aside(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "r.jsonl"
    first = make_record(**BASE)
    _write(path, first)
    with open(path, "ab") as fh:
        fh.write(tail)
    second = make_record(**{**BASE, "model": "b"})
    problems: list[str] = []
    with RecordWriter(path, problems) as w:
        w.write(second)
    assert (tmp_path / "r.jsonl.partial").read_bytes() == tail + b"\n"
    assert read_records(path) == [first, second]
    assert len(problems) == 1 and "torn last line" in problems[0]


def test_the_writers_warning_points_at_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text('{"torn')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with RecordWriter(path) as w:
            w.write(make_record(**BASE))
    (warning,) = [c for c in caught if issubclass(c.category, RecordWarning)]
    # the caller's frame, not the writer's own (a mutation run's trampoline may stand
    # between the two, so only the writer's module is ruled out)
    assert not warning.filename.endswith("workloads/records.py"), warning.filename
    assert "torn last line" in str(warning.message)
