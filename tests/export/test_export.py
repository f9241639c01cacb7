"""``gpulab export``: Parquet read back by DuckDB, OpenMetrics parsed by prometheus_client."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from infra.cli import main
from tests.report import synth


@pytest.fixture
def records(tmp_path: Path) -> Path:
    recs = synth.closer()[:40] + synth.bad_runs()
    return synth.write(tmp_path / "r.jsonl", recs)


def test_parquet_read_back_by_duckdb(records: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    assert main(["export", str(records), "--format", "parquet", "--out", str(out)]) == 0
    con = duckdb.connect()
    rows = con.execute(
        "SELECT count(*), count(DISTINCT record_id), sum((status = 'failed')::INT), "
        "any_value(fingerprint ->> '$.gpu.driver_version') FILTER (topology = 'ironic-bm'), "
        "max(images_per_sec) FROM read_parquet(?)",
        [str(out)],
    ).fetchone()
    assert rows is not None
    n, distinct, failed, driver, top = rows
    assert (n, distinct, failed) == (43, 43, 1)
    assert driver == "535.104.05" and top == pytest.approx(900.0 * 1.01 * 1.0, rel=0.2)


def test_openmetrics_parsed_by_prometheus_client(records: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.txt"
    assert main(["export", str(records), "--format", "openmetrics", "--out", str(out)]) == 0
    families = {f.name: f for f in text_string_to_metric_families(out.read_text())}
    assert set(families) == {"gpulab_images_per_second", "gpulab_elapsed_seconds", "gpulab_records"}
    ips = families["gpulab_images_per_second"]
    assert ips.type == "gauge"
    want = {"model": "inception_v3", "setting": "bm", "experiment": "single_synthetic"}
    s = next(s for s in ips.samples if want.items() <= s.labels.items())
    assert s.value == pytest.approx(100.0)
    # ok records: 40, plus the power-capped run (kept); the failed and throttled ones are not
    assert sum(s.value for s in families["gpulab_records"].samples) == 41


def test_bad_format_is_exit_2(records: Path, tmp_path: Path, capsys) -> None:
    assert main(["export", str(records), "--format", "csv", "--out", str(tmp_path / "x")]) == 2
    assert "--format 'csv' is not one of parquet, openmetrics" in capsys.readouterr().err
