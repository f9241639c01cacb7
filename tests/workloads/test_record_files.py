"""workloads.records pinned where mutation testing found it loose: run ids and timestamps (UTC
on a host in another time zone), GPULAB_RUN_ID, the schema's messages, the writer's torn-tail
repair (tails of each shape, a record missing its newline, an empty file), the reader over
several files, blank, glued and torn lines, raw UTF-8, and where warnings point. Nothing is
mocked: real files under tmp_path; the time zone and C locale are the process's own, set and
restored."""

from __future__ import annotations

import json
import locale
import re
import time
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from workloads.errors import InputError
from workloads.records import (
    RecordError,
    RecordWarning,
    RecordWriter,
    iter_records,
    make_record,
    new_run_id,
    parse_lines,
    read_records,
    repair_tail,
    run_id_from_env,
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


def _write(path: Path, *recs: dict[str, Any]) -> None:
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


# --- run ids and timestamps are UTC whatever the host's time zone ----------------------------


@pytest.fixture
def host_in_india(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local time zone set to UTC+05:30 (TZ, time.tzset), restored afterwards."""
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    try:
        yield
    finally:
        monkeypatch.undo()
        time.tzset()


def test_run_id_stamp_is_utc_on_a_host_in_another_time_zone(host_in_india: None) -> None:
    assert datetime.now().hour != datetime.now(UTC).hour or datetime.now().minute != (
        datetime.now(UTC).minute
    )  # the zone took effect: local time is 5 h 30 min off UTC
    before = datetime.now(UTC).replace(microsecond=0)
    rid = new_run_id()
    after = datetime.now(UTC)
    stamp = datetime.strptime(rid[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert before <= stamp <= after, (rid, before, after)
    s = utc_now()
    assert s.endswith("+00:00")
    assert abs((datetime.fromisoformat(s) - datetime.now(UTC)).total_seconds()) < 5


# --- GPULAB_RUN_ID: the run id a lab hands its hosts ------------------------------------------


def test_the_lab_run_id_is_taken_from_the_mapping_given() -> None:
    assert run_id_from_env({"GPULAB_RUN_ID": "lab-7.a_b:c"}) == "lab-7.a_b:c"
    assert run_id_from_env({"GPULAB_RUN_ID": "a" * 64}) == "a" * 64
    # only that variable counts, spelled as it is
    for env in ({}, {"GPULAB_RUN_ID": ""}, {"gpulab_run_id": "x1"}, {"": "x2"}):
        assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", run_id_from_env(env)), env


def test_the_process_environment_is_read_when_no_mapping_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GPULAB_RUN_ID", "from-os-environ")
    assert run_id_from_env() == "from-os-environ"
    # a mapping given wins over the process environment
    assert run_id_from_env({"GPULAB_RUN_ID": "from-mapping"}) == "from-mapping"
    assert run_id_from_env({}) != "from-os-environ"
    monkeypatch.delenv("GPULAB_RUN_ID")
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", run_id_from_env())


def test_a_bad_lab_run_id_is_one_line_quoting_at_most_70_chars() -> None:
    bad = "x;" * 50
    with pytest.raises(InputError) as err:
        run_id_from_env({"GPULAB_RUN_ID": bad})
    assert str(err.value) == (
        f"GPULAB_RUN_ID {bad[:70]!r} is not a run id (up to 64 letters, digits, "
        "'.', '_', ':' or '-')"
    )
    for bad in ("a" * 65, "-lead", ".lead", "a b", "a/b"):
        with pytest.raises(InputError, match="is not a run id"):
            run_id_from_env({"GPULAB_RUN_ID": bad})


# --- the schema's defaults and messages --------------------------------------------------------


def test_defaults_and_int_fields() -> None:
    rec = make_record(**BASE, batch_size=32, global_batch=256, warmup=2, steps=10, repeat=0)
    assert rec["scenario"] == "single" and rec["kind"] == "training"
    assert (rec["batch_size"], rec["steps"], rec["repeat"]) == (32, 10, 0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model": 3}, "record field 'model' has type int"),
        ({"steps": "10"}, "record field 'steps' has type str"),
        ({"steps": True}, "record field 'steps' has type bool"),
        ({"status": "ok", "error": "boom"}, "a record with status 'ok' carries an error"),
        (
            {"gpu_path": "vgpu", "virtualization": "vm"},
            "record carries part of the setting: exec_env, sharing missing",
        ),
    ],
)
def test_schema_messages_name_field_and_type(change: dict[str, Any], message: str) -> None:
    with pytest.raises(RecordError) as err:
        make_record(**{**BASE, **change})
    assert str(err.value) == message


def test_reader_messages_name_file_line_and_cause(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    good = json.dumps(make_record(**BASE))
    path.write_text(good + "\n[1, 2]\n")
    with pytest.raises(RecordError) as err:
        list(iter_records(path))
    assert str(err.value) == f"{path}:2: not a JSON object"
    path.write_text(good + "\n" + json.dumps({**make_record(**BASE), "status": "done"}) + "\n")
    with pytest.raises(RecordError) as err:
        list(iter_records(path))
    assert str(err.value) == (
        f"{path}:2: record status 'done' is not one of ('ok', 'failed', 'interrupted', 'skipped')"
    )


# --- the writer: torn tails of each shape, newline-less records, counting, closing -------------


def _writer_into(path: Path, *recs: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    with RecordWriter(path, problems) as w:
        for r in recs:
            w.write(r)
    return problems


def test_appending_to_a_file_that_ends_in_a_newline_moves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    a, b, c = (make_record(**{**BASE, "repeat": i}) for i in range(3))
    assert _writer_into(path, a, b) == []
    assert _writer_into(path, c) == []
    assert not (tmp_path / "r.jsonl.partial").exists()
    assert read_records(path) == [a, b, c]


def test_empty_file_and_missing_file_take_the_first_record_as_is(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    rec = make_record(**BASE)
    assert repair_tail(tmp_path / "empty.jsonl") is None
    assert repair_tail(tmp_path / "missing.jsonl") is None
    assert not (tmp_path / "missing.jsonl").exists()
    assert _writer_into(tmp_path / "empty.jsonl", rec) == []
    assert (tmp_path / "empty.jsonl").read_text() == json.dumps(rec, sort_keys=True) + "\n"
    assert list(tmp_path.glob("*.partial")) == []


def test_a_torn_tail_after_several_records_moves_only_the_tail(tmp_path: Path) -> None:
    """The last newline of the file is found, not the first one of the last block."""
    path = tmp_path / "r.jsonl"
    a, b, c = (make_record(**{**BASE, "repeat": i}) for i in range(3))
    _write(path, a, b)
    head = path.read_bytes()
    torn = b'{"schema_version": 2, "record_id": "ab'
    with open(path, "ab") as fh:
        fh.write(torn)
    assert repair_tail(path) == (
        f"{path}: torn last line ({len(torn)} bytes at byte {len(head)}, a writer killed mid-line) "
        f"moved to {path}.partial"
    )
    assert path.read_bytes() == head
    assert (
        tmp_path / "r.jsonl.partial"
    ).read_bytes() == b'{"schema_version": 2, "record_id": "ab\n'
    assert _writer_into(path, c) == []
    assert read_records(path) == [a, b, c]


def test_a_torn_tail_after_a_blank_first_line(tmp_path: Path) -> None:
    """The file's only newline is its first byte: the tail starts at byte 1."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'\n{"torn')
    assert repair_tail(path) == (
        f"{path}: torn last line (6 bytes at byte 1, a writer killed mid-line) "
        f"moved to {path}.partial"
    )
    assert path.read_bytes() == b"\n"
    assert (tmp_path / "r.jsonl.partial").read_bytes() == b'{"torn\n'


@pytest.mark.parametrize("length", [65535, 65536, 65537])
def test_a_torn_tail_about_one_read_block_long(tmp_path: Path, length: int) -> None:
    """A torn line of about 64 KiB (a big fingerprint) after a newline at byte 0: the file is
    read backwards in 64 KiB blocks, so with a 65536-byte line the newline is alone in the
    second block (one byte at the file's start)."""
    path = tmp_path / "r.jsonl"
    tail = b'{"params": "' + b"x" * (length - 12)
    path.write_bytes(b"\n" + tail)
    assert repair_tail(path) == (
        f"{path}: torn last line ({length} bytes at byte 1, a writer killed mid-line) "
        f"moved to {path}.partial"
    )
    assert path.read_bytes() == b"\n"
    assert (tmp_path / "r.jsonl.partial").read_bytes() == tail + b"\n"
    # no newline at all: the torn line starts at byte 0 and the whole file moves
    path.write_bytes(tail)
    assert f"({length} bytes at byte 0," in (repair_tail(path) or "")
    assert path.read_bytes() == b""


def test_a_whole_record_without_its_newline_gets_one_and_nothing_moves(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    a, b = make_record(**BASE), make_record(**{**BASE, "repeat": 1})
    path.write_text(json.dumps(a) + "\n" + json.dumps(b))
    assert repair_tail(path) is None
    assert path.read_text() == json.dumps(a) + "\n" + json.dumps(b) + "\n"
    assert not (tmp_path / "r.jsonl.partial").exists()


def test_writer_makes_nested_directories_and_names_an_unwritable_path(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "c" / "r.jsonl"
    rec = make_record(**BASE)
    assert _writer_into(path, rec) == []
    assert read_records(path) == [rec]
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError) as err:
        RecordWriter(blocker / "r.jsonl")
    assert (
        str(err.value) == f"output path {str(blocker / 'r.jsonl')!r} cannot be written: File exists"
    )


def test_writer_counts_sorts_keys_stringifies_and_closes(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    rec = make_record(**BASE, params={"zeta": 1, "data_dir": Path("/data/imagenet")})
    w = RecordWriter(path)
    assert w.count == 0
    for _ in range(3):
        w.write(rec)
    assert w.count == 3
    w.close()
    w.close()  # twice is fine
    with pytest.raises(ValueError, match="closed file"):
        w.write(rec)
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    stored = {**rec, "params": {"zeta": 1, "data_dir": "/data/imagenet"}}
    assert lines[0] == json.dumps(stored, sort_keys=True)
    assert list(json.loads(lines[0])) == sorted(stored)


def test_writer_names_the_file_whose_last_line_it_cannot_check(tmp_path: Path) -> None:
    """The record file replaced by a directory under an open writer: one line, no traceback."""
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as w:
        path.unlink()
        path.mkdir()
        with pytest.raises(InputError) as err:
            w.write(make_record(**BASE))
    assert str(err.value) == f"{path}: cannot check its last line: Is a directory"


# --- the reader: blank lines, glued records, raw UTF-8, problems passed through ----------------


def test_a_blank_line_in_the_middle_is_passed_over(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    a, b = make_record(**BASE), make_record(**{**BASE, "repeat": 1})
    path.write_text(json.dumps(a) + "\n\n   \n" + json.dumps(b) + "\n")
    problems: list[str] = []
    assert read_records(path, problems) == [a, b]
    assert problems == []


def test_records_after_a_glued_line_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    a, b, c = (make_record(**{**BASE, "repeat": i}) for i in range(3))
    path.write_text(
        json.dumps(a) + "\n" + '{"schema_version": 2, "ru' + json.dumps(b) + "\n" + json.dumps(c)
    )
    problems: list[str] = []
    assert read_records(path, problems) == [a, b, c]
    assert problems == [
        f"{path}:2: torn fragment of 25 chars before a record skipped; the record after it is kept"
    ]


@pytest.mark.parametrize(
    "fragment",
    [
        "{",  # one byte written before the kill
        '{"params": {',  # cut right after a nested object's brace
        '{"a": {{',  # two braces in a row before the record
    ],
)
def test_a_glued_record_after_a_fragment_ending_in_a_brace(fragment: str) -> None:
    rec = make_record(**BASE)
    problems: list[str] = []
    got = list(parse_lines("f.jsonl", fragment + json.dumps(rec) + "\n", problems))
    assert got == [(1, rec)]
    assert problems == [
        f"f.jsonl:1: torn fragment of {len(fragment)} chars before a record skipped; "
        "the record after it is kept"
    ]


def test_raw_utf8_records_read_the_same_under_an_ascii_locale(tmp_path: Path) -> None:
    """A record file holding raw UTF-8 (another tool's ensure_ascii=False) read while the C
    library's locale is "C" (ASCII codeset), as on a minimal host image: the reader decodes
    UTF-8 itself, not the locale's encoding."""
    path = tmp_path / "r.jsonl"
    rec = make_record(**{**BASE, "model": "résnet-ü"})
    path.write_bytes(json.dumps(rec, ensure_ascii=False).encode("utf-8") + b"\n")
    old = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        assert read_records(path) == [rec]
    finally:
        locale.setlocale(locale.LC_CTYPE, old)


def test_read_records_reports_into_the_problems_list_it_is_given(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    rec = make_record(**BASE)
    _write(a, rec)
    with open(a, "a") as fh:
        fh.write('{"torn')
    b.write_text("not json\n" + json.dumps(rec) + "\n")
    problems: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordWarning)  # nothing may go to warnings instead
        assert read_records([a, b], problems) == [rec, rec]
    assert problems == [
        f"{a}:2: skipped (6 chars, last line, a writer killed mid-line)",
        f"{b}:1: skipped (8 chars, not JSON)",
    ]
