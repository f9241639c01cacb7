"""``gpulab export --pushgateway URL`` against a real Prometheus Pushgateway (Debian's 1.5.1,
tests/parts/fixtures_pushgateway.py), as a user runs it: the CLI in a subprocess pushes, then the
gateway's own ``/metrics`` (what Prometheus scrapes) and ``/api/v1/metrics`` are read back and
parsed with prometheus_client's parser. Nothing is doubled."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_families
from prometheus_client.parser import text_string_to_metric_families

from tests.parts import REPO
from tests.parts.fixtures_pushgateway import PushgatewayPart
from tests.report import synth

GPULAB = REPO / ".venv" / "bin" / "gpulab"
Sample = tuple[str, tuple[tuple[str, str], ...], float]


def gpulab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(GPULAB), *args], capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "COLUMNS": "160"},
    )  # fmt: skip


def scraped(gw: PushgatewayPart, job: str) -> set[Sample]:
    """The gpulab_* samples of one job as Prometheus scrapes the gateway, without the grouping
    labels the gateway adds (job, instance)."""
    out: set[Sample] = set()
    for fam in text_string_to_metric_families(gw.get("/metrics")):
        if not fam.name.startswith("gpulab_"):
            continue
        for s in fam.samples:
            if s.labels.get("job") != job:
                continue
            labels = {k: v for k, v in s.labels.items() if k not in ("job", "instance")}
            out.add((s.name, tuple(sorted(labels.items())), s.value))
    return out


def exported(records: Path, tmp_path: Path) -> set[Sample]:
    out = tmp_path / "m.txt"
    r = gpulab("export", str(records), "--format", "openmetrics", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for f in om_families(out.read_text())  # type: ignore[no-untyped-call]
        for s in f.samples
    }


@pytest.mark.pushgateway
def test_push_is_scraped_from_the_gateway_as_exported(
    pushgateway: PushgatewayPart, tmp_path: Path
) -> None:
    records = synth.write(tmp_path / "r.jsonl", synth.closer()[:40] + synth.bad_runs())
    r = gpulab("export", str(records), "--pushgateway", pushgateway.url)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"pushed to {pushgateway.url}" in r.stderr

    got = scraped(pushgateway, "gpulab")
    assert got == exported(records, tmp_path)
    assert {name for name, _, _ in got} == {
        "gpulab_images_per_second", "gpulab_elapsed_seconds", "gpulab_records",
    }  # fmt: skip
    assert sum(v for name, _, v in got if name == "gpulab_records") == 41

    # The gateway's API: the group was pushed and nothing failed to parse.
    api: dict[str, Any] = json.loads(pushgateway.get("/api/v1/metrics"))
    (group,) = [g for g in api["data"] if g["labels"].get("job") == "gpulab"]
    assert float(group["push_time_seconds"]["metrics"][0]["value"]) > 0
    assert float(group["push_failure_time_seconds"]["metrics"][0]["value"]) == 0
    assert group["gpulab_records"]["type"] == "GAUGE"


@pytest.mark.pushgateway
def test_second_push_replaces_the_group(pushgateway: PushgatewayPart, tmp_path: Path) -> None:
    """A push is a PUT: the next export's samples replace the job's, none of the earlier ones
    stay behind (a metric dropped from a later export would otherwise linger in Prometheus)."""
    first = synth.write(tmp_path / "a.jsonl", synth.closer()[:40])
    second = synth.write(tmp_path / "b.jsonl", synth.closer()[:8])
    assert gpulab("export", str(first), "--pushgateway", pushgateway.url).returncode == 0
    r = gpulab("export", str(second), "--pushgateway", pushgateway.url + "/")
    assert r.returncode == 0, r.stderr
    got = scraped(pushgateway, "gpulab")
    assert got == exported(second, tmp_path)
    assert sum(v for name, _, v in got if name == "gpulab_records") == 8
