"""`gpulab report` writes under the results root ($GPULAB_RESULTS, else ./results), as every
other command does (it wrote ./results/report whatever $GPULAB_RESULTS said); the tables split
a run's time into start-up, warm-up and timed (one "elapsed s" hid a 20 s start-up beside a
5-step rate)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from infra.cli.bench import print_table
from infra.summary import summarize, summary_table
from tests.report import synth


def _records(root: Path) -> Path:
    return synth.write(root / "local" / "r.jsonl", synth.reps(
        "local", "native", experiment="e", model="resnet50", ips=100.0, repeats=3))  # fmt: skip


@pytest.mark.integration
def test_report_goes_under_the_results_root(gpulab, tmp_path: Path) -> None:
    results, here = tmp_path / "elsewhere", tmp_path / "cwd"
    here.mkdir()
    _records(results)
    r = gpulab("report", cwd=here, env={"GPULAB_RESULTS": str(results)})
    assert r.returncode == 0, r.stderr
    assert (results / "report" / "report.html").is_file()
    assert not (here / "results").exists()
    _records(here / "results")
    r = gpulab("report", cwd=here, env={"GPULAB_RESULTS": ""})
    assert r.returncode == 0, r.stderr
    assert (here / "results" / "report" / "report.html").is_file()


RECORD = {"experiment": "resnet50-single", "model": "resnet50", "repeat": 0, "global_batch": 8,
          "params": {"image_size": 64}, "status": "ok", "images_per_sec": 41.5,
          "elapsed_s": 25.9, "startup_s": 21.04, "first_step_s": 3.5, "timed_s": 1.2}  # fmt: skip


def test_the_bench_table_splits_the_time(capsys) -> None:
    failed = {**RECORD, "status": "failed", "images_per_sec": None, "startup_s": None,
              "first_step_s": None, "timed_s": None}  # fmt: skip
    print_table([RECORD, failed], "t")
    out = capsys.readouterr().out
    assert "start-up s" in out and "warm-up s" in out and "timed s" in out
    assert "elapsed" not in out
    row = next(line for line in out.splitlines() if "41.5" in line)
    assert "21.04" in row and "3.50" in row and "1.20" in row


def test_the_run_summary_table_splits_the_time() -> None:
    summary = summarize([{**RECORD, "arm": "native", "scenario": "single", "batch_size": 8}],
                        ["r.jsonl"])  # fmt: skip
    row = summary["rows"][0]
    assert row["startup_s_median"] == 21.04 and row["timed_s_median"] == 1.2
    buf = io.StringIO()
    Console(file=buf, width=200).print(summary_table(summary))
    text = buf.getvalue()
    assert "start-up s (median)" in text and "timed s (median)" in text
    assert "elapsed" not in text and "21.04" in text and "1.20" in text
