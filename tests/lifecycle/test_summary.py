"""The results summary shape (stack output ``results`` and ``gpulab run local``'s summary)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.summary import arm_ratios, run_status, summarize, summarize_files, summary_table
from workloads.records import RecordWriter, make_record


def rec(
    arm: str,
    model: str,
    ips: float | None,
    elapsed: float | None,
    status: str = "ok",
    batch: int = 8,
    scenario: str = "single",
    **kw,
):
    return make_record(
        run_id=f"run-{arm}",
        suite="smoke",
        experiment=f"smoke-{model}",
        model=model,
        scenario=scenario,
        status=status,
        batch_size=batch,
        arm=arm,
        host=f"h-{arm}",
        images_per_sec=ips,
        elapsed_s=elapsed,
        error=None if status == "ok" else "boom",
        **kw,
    )


def test_medians_per_arm_model_scenario_and_ratios() -> None:
    records = [
        rec("native", "alexnet", 10.0, 5.0),
        rec("native", "alexnet", 30.0, 7.0),
        rec("native", "alexnet", 20.0, 6.0),
        rec("docker", "alexnet", 18.0, 8.0),
        rec("docker", "alexnet", None, None, status="failed"),
        rec("native", "mnist_cnn", 100.0, 3.0, batch=128),
    ]
    s = summarize(records, ["results/local/x.jsonl"])
    assert s["status"] == "partial"
    assert s["counts"] == {"records": 6, "ok": 5, "failed": 1, "interrupted": 0}
    assert s["records"] == ["results/local/x.jsonl"]
    assert s["arms"] == ["native", "docker"]
    rows = {(r["arm"], r["model"]): r for r in s["rows"]}
    assert rows[("native", "alexnet")]["images_per_sec_median"] == 20.0
    assert rows[("native", "alexnet")]["elapsed_s_median"] == 6.0
    assert rows[("native", "alexnet")]["n"] == 3
    docker = rows[("docker", "alexnet")]
    assert (docker["n"], docker["ok"], docker["failed"]) == (2, 1, 1)
    assert docker["images_per_sec_median"] == 18.0  # the failed record does not count
    assert docker["errors"] == ["boom"]
    assert s["ratios"] == [
        {
            "arm": "docker",
            "model": "alexnet",
            "scenario": "single",
            "batch_size": 8,
            "base": "native",
            "ratio": 0.9,
        }
    ]
    assert arm_ratios(s, base="docker")[0]["ratio"] == pytest.approx(20 / 18, rel=1e-3)


@pytest.mark.parametrize(
    ("counts", "status"),
    [
        ({"records": 0, "ok": 0}, "empty"),
        ({"records": 2, "ok": 2}, "ok"),
        ({"records": 2, "ok": 0}, "failed"),
        ({"records": 2, "ok": 1}, "partial"),
    ],
)
def test_run_status(counts: dict, status: str) -> None:
    assert run_status(counts) == status


def test_summarize_files_reads_jsonl_and_tolerates_missing(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as w:
        w.write(rec("native", "resnet50", 4.0, 9.0, batch=4))
        w.write(rec("native", "resnet50", 6.0, 11.0, batch=4))
    s = summarize_files([path, tmp_path / "missing.jsonl"], suite="smoke")
    assert s["suite"] == "smoke"
    assert s["status"] == "ok"
    (row,) = s["rows"]
    assert row["images_per_sec_median"] == 5.0 and row["elapsed_s_median"] == 10.0
    assert s["ratios"] == []
    assert summarize_files([tmp_path / "none.jsonl"])["status"] == "empty"


def test_summary_is_plain_json_and_renders(tmp_path: Path) -> None:
    import json

    from rich.console import Console

    s = summarize([rec("native", "alexnet", 12.5, 3.0)])
    assert json.loads(json.dumps(s)) == s  # a stack output must be plain data
    console = Console(record=True, width=120)
    console.print(summary_table(s))
    text = console.export_text()
    assert "alexnet" in text and "12.50" in text


def test_merge_summaries_of_two_execution_environments() -> None:
    from infra.summary import merge_summaries

    native = summarize([rec("native", "alexnet", 20.0, 5.0)], ["results/lab/a/h.jsonl"])
    docker = summarize(
        [rec("docker", "alexnet", 15.0, 6.0, status="ok")], ["results/lab/b/h.jsonl"]
    )
    m = merge_summaries([native, None, docker])
    assert m["arms"] == ["native", "docker"]
    assert m["counts"]["records"] == 2 and m["status"] == "ok"
    assert m["records"] == ["results/lab/a/h.jsonl", "results/lab/b/h.jsonl"]
    assert m["ratios"][0]["ratio"] == 0.75
    assert merge_summaries([None])["status"] == "empty"
