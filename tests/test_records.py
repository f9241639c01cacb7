"""Result record schema and the JSON Lines writer."""

from __future__ import annotations

import json
import warnings

import pytest

from workloads.errors import InputError
from workloads.records import (
    SCHEMA_VERSION,
    RecordError,
    RecordWarning,
    RecordWriter,
    iter_records,
    make_record,
    validate_record,
)

BASE = dict(run_id="r1", suite="smoke", experiment="e", model="alexnet")


def test_make_record_fills_schema_version_and_defaults():
    rec = make_record(**BASE, images_per_sec=12.5)
    assert rec["schema_version"] == SCHEMA_VERSION
    assert rec["status"] == "ok" and rec["error"] is None
    assert len(rec["record_id"]) == 32


@pytest.mark.parametrize(
    "change, message",
    [
        ({"status": "done"}, "status"),
        ({"kind": "other"}, "kind"),
        ({"bogus": 1}, "unknown field 'bogus'"),
        ({"steps": "10"}, "'steps'"),
        ({"steps": True}, "'steps'"),
        ({"schema_version": 99}, "schema_version"),
        ({"status": "ok", "error": "boom"}, "error"),
        ({"claims": [{}]}, r"record field claims\[0\] has type dict, not a string"),
        ({"claims": ["a", 3]}, r"record field claims\[1\] has type int, not a string"),
        ({"setting_flags": [None]}, r"record field setting_flags\[0\] has type NoneType"),
    ],
)
def test_bad_records_are_rejected_with_the_field_named(change, message):
    with pytest.raises(RecordError, match=message):
        make_record(**{**BASE, **change})


def test_missing_required_field_is_named():
    rec = make_record(**BASE)
    del rec["model"]
    with pytest.raises(RecordError, match="'model'"):
        validate_record(rec)


def test_writer_appends_and_reader_reports_truncated_tail(tmp_path):
    out = tmp_path / "sub" / "r.jsonl"
    with RecordWriter(out) as w:
        w.write(make_record(**BASE, images_per_sec=1.0))
        w.write(make_record(**BASE, status="failed", error="oom"))
    with open(out, "a") as fh:
        fh.write('{"schema_version": 2, "run')  # a writer killed mid-line
    problems: list[str] = []
    recs = list(iter_records(out, problems=problems))
    assert [r["status"] for r in recs] == ["ok", "failed"]
    assert problems == [f"{out}:3: skipped (26 chars, last line, a writer killed mid-line)"]
    with pytest.warns(RecordWarning, match=r"r.jsonl:3: skipped"):
        assert len(list(iter_records(out))) == 2
    with pytest.raises(RecordError, match="not a JSON record"):
        list(iter_records(out, strict=True))


def test_reader_reports_bad_line_in_the_middle_and_keeps_the_rest(tmp_path):
    out = tmp_path / "r.jsonl"
    good = json.dumps(make_record(**BASE))
    out.write_text(good + "\nnot json\n" + good + "\n")
    problems: list[str] = []
    assert len(list(iter_records(out, problems=problems))) == 2
    assert problems == [f"{out}:2: skipped (8 chars, not JSON)"]
    with pytest.raises(RecordError, match=r"r.jsonl:2"):
        list(iter_records(out, strict=True))


def test_writer_moves_a_torn_line_aside_before_appending(tmp_path):
    """The bug of an unchecked append: the next record glued onto the torn line."""
    out = tmp_path / "r.jsonl"
    first = make_record(**BASE, images_per_sec=1.0)
    out.write_text(json.dumps(first) + "\n" + '{"schema_version": 2, "rec')
    problems: list[str] = []
    with RecordWriter(out, problems) as w:
        w.write(make_record(**BASE, images_per_sec=2.0))
    assert problems == [
        f"{out}: torn last line (26 bytes at byte {len(json.dumps(first)) + 1}, "
        f"a writer killed mid-line) moved to {out}.partial"
    ]
    assert (tmp_path / "r.jsonl.partial").read_text() == '{"schema_version": 2, "rec\n'
    got = list(iter_records(out, strict=True))
    assert [r["images_per_sec"] for r in got] == [1.0, 2.0]


def test_writer_completes_a_whole_record_missing_its_newline(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps(make_record(**BASE, images_per_sec=1.0)))  # killed before "\n"
    with RecordWriter(out) as w:
        w.write(make_record(**BASE, images_per_sec=2.0))
    assert [r["images_per_sec"] for r in iter_records(out, strict=True)] == [1.0, 2.0]
    assert not (tmp_path / "r.jsonl.partial").exists()


def test_reader_recovers_a_record_glued_to_a_torn_fragment(tmp_path):
    """Files written before the newline check: fragment + record on one line."""
    out = tmp_path / "r.jsonl"
    rec = make_record(**BASE, images_per_sec=3.0)
    out.write_text('{"schema_version": 1, "ru' + json.dumps(rec) + "\n")
    problems: list[str] = []
    assert list(iter_records(out, problems=problems)) == [rec]
    assert problems == [
        f"{out}:1: torn fragment of 25 chars before a record skipped; the record after it is kept"
    ]


def test_unwritable_output_is_an_input_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="cannot be written"):
        RecordWriter(blocker / "r.jsonl")


# --- the setting a record carries (schema 2) -------------------------------------------------

SETTING = dict(
    gpu_path="pci-passthrough",
    exec_env="native",
    virtualization="vm",
    sharing="exclusive",
    setting_flags=[],
)


def test_schema_1_and_2_records_stay_readable(tmp_path):
    old = {**make_record(**BASE), "schema_version": 1}
    validate_record(old)
    two = {**make_record(**BASE, **SETTING), "schema_version": 2, "fingerprint": {"host": "h"}}
    new = make_record(**BASE, **SETTING)
    assert new["schema_version"] == 3
    out = tmp_path / "r.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in (old, two, new)))
    assert [r["schema_version"] for r in iter_records(out, strict=True)] == [1, 2, 3]
    assert list(iter_records(out))[1]["fingerprint"] == {"host": "h"}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"virtualization": "paravirt"}, "virtualization 'paravirt'"),
        ({"exec_env": None}, "'exec_env'"),
    ],
)
def test_bad_setting_fields_are_named(change, message):
    with pytest.raises(RecordError, match=message):
        make_record(**BASE, **{**SETTING, **change})


def test_part_of_a_setting_is_refused():
    part = {k: v for k, v in SETTING.items() if k != "sharing"}
    with pytest.raises(RecordError, match="part of the setting: sharing missing"):
        make_record(**BASE, **part)


def _strict_json(line: str) -> object:
    """json.loads that refuses NaN and Infinity (not JSON: other readers fail on them)."""

    def refuse(word: str) -> object:
        raise ValueError(f"{word} is not JSON")

    return json.loads(line, parse_constant=refuse)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"images_per_sec": float("nan")}, "images_per_sec"),
        ({"elapsed_s": 1e308 * 10}, "elapsed_s"),  # a float that overflowed
        ({"step_times_s": [0.1, float("inf"), 0.1]}, "step_times_s[1]"),
        ({"metrics": {"tflops": float("-inf")}}, "metrics.tflops"),
    ],
)
def test_writer_turns_a_value_that_is_not_a_number_into_a_failed_record(tmp_path, fields, named):
    """Not written as NaN (invalid JSON), not dropped: a failed record naming the field."""
    out = tmp_path / "r.jsonl"
    with RecordWriter(out) as w:
        w.write(make_record(**BASE, **{"images_per_sec": 5.0, **fields}))
    line = out.read_text().splitlines()[0]
    rec = _strict_json(line)
    assert isinstance(rec, dict)
    assert rec["status"] == "failed"
    assert rec["error"] == (
        f"not a finite number (NaN or infinity) in {named}; the value(s) are written as null"
    )
    validate_record(rec)
    assert list(iter_records(out)) == [rec]


def test_writer_keeps_a_failed_status_and_extends_its_error(tmp_path):
    out = tmp_path / "r.jsonl"
    with RecordWriter(out) as w:
        w.write(make_record(**BASE, status="interrupted", error="SIGINT", elapsed_s=float("nan")))
    rec = _strict_json(out.read_text())
    assert isinstance(rec, dict)
    assert rec["status"] == "interrupted" and rec["elapsed_s"] is None
    assert rec["error"].startswith("SIGINT; not a finite number (NaN or infinity) in elapsed_s")


def test_lines_end_at_newline_only(tmp_path):
    """U+2028, U+2029, U+0085 and a form feed are line ends to str.splitlines, not to JSON
    Lines: a record whose string holds one is one record."""
    out = tmp_path / "r.jsonl"
    recs = [make_record(**BASE, host=f"a{sep}b") for sep in ("\u2028", "\u2029", "\x85", "\x0c")]
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordWarning)  # nothing skipped
        assert list(iter_records(out)) == recs


def test_a_line_nested_too_deep_is_refused_naming_file_and_line(tmp_path):
    out = tmp_path / "r.jsonl"
    ok = json.dumps(make_record(**BASE))
    out.write_text(ok + "\n" + ok[:-1] + ', "params": {"x": ' + "[" * 5000 + "]" * 5000 + "}}\n")
    with pytest.raises(RecordError, match=f"^{out}:2: JSON nested deeper than 64 levels$"):
        list(iter_records(out))


def test_a_number_too_long_for_python_is_refused_naming_file_and_line(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps(make_record(**BASE))[:-1] + ', "repeat": ' + "7" * 5000 + "}\n")
    with pytest.raises(RecordError, match=f"^{out}:1: holds a number too long to read$"):
        list(iter_records(out))
