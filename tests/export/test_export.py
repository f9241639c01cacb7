"""``gpulab export``: Parquet read back by DuckDB, OpenMetrics parsed by prometheus_client."""

from __future__ import annotations

import json
import math
import re
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


# The OpenMetrics ABNF (https://prometheus.io/docs/specs/om/open_metrics_spec/): a sample's
# value is a realnumber or NaN/+Inf/-Inf spelled so, a label value escapes backslash, quote
# and newline. prometheus_client's parser is kinder (it takes "nan", "inf", raw NULs), so
# the text is held to the grammar as well.
VALUE = r"(NaN|[+-]Inf|[+-]?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?)"
LABEL_VALUE = r'"([^"\\\n\x00-\x08\x0b-\x1f\x7f]|\\\\|\\"|\\n)*"'
SAMPLE = re.compile(
    rf"^[a-zA-Z_:][a-zA-Z0-9_:]*\{{[a-z_]+={LABEL_VALUE}(,[a-z_]+={LABEL_VALUE})*\}} {VALUE}$"
)


def test_openmetrics_of_hostile_records_keeps_to_the_format(tmp_path: Path) -> None:
    """Label values with NUL, quote, backslash, newline and a lone surrogate; medians that
    overflow to infinity (two records of 1e308); NaN values (left out, noted)."""
    odd = 'a\x00b"c\\d\ne\udcff\x1bf'
    recs = synth.reps("local", "native", experiment="e", model=odd, ips=1e308, repeats=2)
    recs += synth.reps("local", "docker", experiment="e", model="m", ips=float("nan"), repeats=2)
    src = tmp_path / "r.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))  # NaN as Python writes it
    out = tmp_path / "m.prom"
    assert main(["export", str(src), "--format", "openmetrics", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[-1] == "# EOF" and text.endswith("# EOF\n")
    samples = [ln for ln in lines if not ln.startswith("#")]
    assert samples and all(SAMPLE.match(ln) for ln in samples), samples
    families = {f.name: f for f in text_string_to_metric_families(text)}
    ips = {s.labels["model"]: s.value for s in families["gpulab_images_per_second"].samples}
    assert ips == {'a\ufffdb"c\\d\ne\ufffd\ufffdf': math.inf}  # NaN values left out
    assert "} +Inf" in text


def test_parquet_of_values_that_are_not_numbers_holds_nulls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = synth.reps("local", "native", experiment="e", model="m", ips=float("nan"), repeats=2)
    recs[1]["metrics"] = {"tflops": float("inf")}
    src = tmp_path / "r.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "r.parquet"
    assert main(["export", str(src), "--format", "parquet", "--out", str(out)]) == 0
    rows = (
        duckdb.connect()
        .execute(
            "SELECT images_per_sec, metrics::VARCHAR FROM read_parquet(?) ORDER BY repeat",
            [str(out)],
        )
        .fetchall()
    )
    assert rows == [(None, "{}"), (None, '{"tflops":null}')]
    err = capsys.readouterr().err
    assert "3 value(s) that are not finite numbers" in err and "(line 1, 2)" in err
