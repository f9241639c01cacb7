"""docs/results-schema.json is the schema generated from workloads/records.py, and real
records validate against it (jsonschema, a real consumer of JSON Schema)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from report.record_schema import PUBLISHED, text
from tests.report import synth
from workloads.records import make_record


def test_published_schema_is_the_generated_one() -> None:
    assert PUBLISHED.read_text(encoding="utf-8") == text(), (
        "docs/results-schema.json is stale: run python -m report.record_schema"
    )


@pytest.mark.integration
def test_real_records_validate_and_bad_ones_do_not() -> None:
    schema = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    recs = synth.paper_like()
    for rec in recs:
        jsonschema.validate(json.loads(json.dumps(rec)), schema)
    rec = make_record(run_id="r", suite="s", experiment="e", model="m", images_per_sec=3.5)
    jsonschema.validate(rec, schema)
    for bad in ({**rec, "surprise": 1}, {**rec, "status": "done"}, {**rec, "batch_size": "8"},
                {k: v for k, v in rec.items() if k != "run_id"}):  # fmt: skip
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
