"""The JSON Schema of a result record, generated from the record tables of workloads.records.

``workloads/records.py`` holds the one list of fields (REQUIRED, OPTIONAL, the allowed
values); :func:`record_model` turns it into a pydantic model and :func:`json_schema` into the
JSON Schema published as ``docs/results-schema.json`` (``python -m report.record_schema``
rewrites it; tests/report/test_record_schema.py fails while the two differ).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

from workloads.paths import PACKAGES_DIR
from workloads.records import (
    KINDS,
    OPTIONAL,
    READABLE_VERSIONS,
    REQUIRED,
    SCHEMA_VERSION,
    STATUSES,
    VIRTUALIZATIONS,
)

NULLABLE_TIMING = ("startup_s", "first_step_s", "timed_s")
PUBLISHED = PACKAGES_DIR / "docs" / "results-schema.json"  # in a checkout
DESCRIPTIONS = {
    "schema_version": "record schema version (1: no setting fields; 2: with them)",
    "record_id": "unique id of this record",
    "run_id": "groups the records of one invocation; the report keys repetitions on it",
    "kind": "training (images/sec), kernel (DeepBench-style) or job (wall-clock)",
    "suite": "suite name (workloads/suites/<suite>.yaml)",
    "experiment": "suite entry id",
    "model": "model name (workloads.models)",
    "scenario": "how it was measured (single, distributed, shared, sharing, kernel ...)",
    "status": "ok, failed or interrupted",
    "data": "synthetic or real",
    "batch_size": "batch per device",
    "global_batch": "batch over all devices",
    "warmup": "untimed warm-up steps",
    "steps": "timed steps",
    "repeat": "0-based repetition index",
    "error": "first line(s) of the error of a failed run",
    "images_per_sec": "global batch x timed steps / wall-clock of the timed loop",
    "step_times_s": "seconds per timed step: each block's time / its steps (per step when "
    "sync_every is 1)",
    "elapsed_s": "job launch to finish, seconds (start-up, build, data, warm-up and timed steps)",
    "metrics": "extra measurements (tflops, gbps, time_per_call_s, <shape>.<metric> ...)",
    "params": "what ran beyond the fields above (image_size, kernel shape, nvml_samples ...)",
    "claims": "published claim ids this experiment tests",
    "topology": "the gpulab:topology of the lab (docs/topologies.md lists them)",
    "arm": "label of the comparison arm (native, docker ...)",
    "host": "host name",
    "started_at": "ISO-8601 UTC",
    "finished_at": "ISO-8601 UTC",
    "fingerprint": "environment: GPU, driver, CUDA, VM and container detection, software",
    "gpu_path": "schema 2: the host's GPU path as the lab states it",
    "exec_env": "schema 2: the execution environment (workloads.setting)",
    "virtualization": "schema 2: none, container, vm or container-in-vm (the report's setting)",
    "sharing": "schema 2: how the GPU is shared",
    "setting_flags": "schema 2: where the fingerprint disagrees with the stated setting",
    "sync_every": "timed steps per host synchronization (K); compared when pairing arms",
    "startup_s": "job launch to the first step's start, seconds (interpreter, imports, build)",
    "first_step_s": "the warm-up before the timed window, seconds (first, compiling, step "
    "included)",
    "timed_s": "the timed window, seconds: first reading after the warm-up sync to the sync "
    "after the last step",
    "block_times_s": "wall time of each block of sync_every timed steps, seconds",
}
_ANNOTATION: dict[Any, Any] = {
    int: int,
    str: str,
    dict: dict[str, Any],
    list: list[Any],
    (str, type(None)): str | None,
    (float, int, type(None)): float | None,
}


def _annotation(name: str, typ: Any) -> Any:
    if name == "schema_version":
        return Literal[READABLE_VERSIONS]
    if name == "status":
        return Literal[STATUSES]
    if name == "kind":
        return Literal[KINDS]
    if name == "virtualization":
        return Literal[VIRTUALIZATIONS]
    return _ANNOTATION[typ]


def record_model() -> Any:
    """A pydantic model of a record (extra fields forbidden, as validate_record does)."""
    from pydantic import ConfigDict, Field, create_model

    fields: dict[str, Any] = {}
    for name, typ in REQUIRED.items():
        fields[name] = (_annotation(name, typ), Field(description=DESCRIPTIONS.get(name)))
    for name, typ in OPTIONAL.items():
        fields[name] = (
            _annotation(name, typ),
            Field(default=None, description=DESCRIPTIONS.get(name)),
        )
    return create_model(
        "GpulabRecord", __config__=ConfigDict(extra="forbid", strict=True), **fields
    )


def json_schema() -> dict[str, Any]:
    schema: dict[str, Any] = record_model().model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://gpulab.invalid/results-schema.json"
    schema["description"] = (
        f"One gpulab result record (a line of a *.jsonl record file), schema version "
        f"{SCHEMA_VERSION}; generated from workloads/records.py by python -m report.record_schema"
    )
    for name in OPTIONAL:  # optional means absent; a present null only where the type says
        prop = schema["properties"][name]
        prop.pop("default", None)
        if name not in ("error", "images_per_sec", "elapsed_s", *NULLABLE_TIMING):
            options = prop.pop("anyOf", None)
            if options:
                prop.update(next(o for o in options if o.get("type") != "null"))
    return schema


def text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    PUBLISHED.write_text(text(), encoding="utf-8")
    print(f"wrote {PUBLISHED}", file=sys.stderr)
