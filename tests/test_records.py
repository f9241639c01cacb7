"""Result record schema and the JSON Lines writer."""

from __future__ import annotations

import json

import pytest

from workloads.errors import InputError
from workloads.records import (
    SCHEMA_VERSION,
    RecordError,
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


def test_writer_appends_and_reader_tolerates_truncated_tail(tmp_path):
    out = tmp_path / "sub" / "r.jsonl"
    with RecordWriter(out) as w:
        w.write(make_record(**BASE, images_per_sec=1.0))
        w.write(make_record(**BASE, status="failed", error="oom"))
    with open(out, "a") as fh:
        fh.write('{"schema_version": 1, "run')  # a writer killed mid-line
    recs = list(iter_records(out))
    assert [r["status"] for r in recs] == ["ok", "failed"]
    with pytest.raises(RecordError, match="not a JSON record"):
        list(iter_records(out, strict=True))


def test_reader_rejects_bad_line_in_the_middle(tmp_path):
    out = tmp_path / "r.jsonl"
    good = json.dumps(make_record(**BASE))
    out.write_text(good + "\nnot json\n" + good + "\n")
    with pytest.raises(RecordError, match=r"r.jsonl:2"):
        list(iter_records(out))


def test_unwritable_output_is_an_input_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="cannot be written"):
        RecordWriter(blocker / "r.jsonl")
