"""The catalogue through the runner's own command line: a suite of catalogue entries (one
process each, as a lab runs them) writes one valid record per entry. (Fathom, shared, sharing
and distributed are exercised in their own tests.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workloads.data import mnist
from workloads.data.imagenet_writer import write_imagenet_like
from workloads.records import read_records

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.tf
@pytest.mark.slow
def test_catalogue_entries_run_through_python_m_workloads_bench(tmp_path: Path) -> None:
    shards = tmp_path / "imagenet"
    write_imagenet_like(shards, images=16, shards=2, image_size=80, classes=10)
    idx = tmp_path / "mnist"
    mnist.write_mnist_like(idx, train=256, test=64, gz=False)
    suite = {
        "name": "catalogue-e2e",
        "defaults": {"warmup": 1, "steps": 2, "repeats": 1, "timeout_s": 240},
        "experiments": [
            {
                "experiment": "single_real",
                "model": "alexnet",
                "data": "real",
                "batch": 4,
                "image_size": 67,
                "claims": ["closer2018/single_real"],
            },
            {"experiment": "deepbench_gemm", "model": "gemm", "scenario": "kernel"},
            {
                "experiment": "mnist_epochs",
                "model": "mnist_cnn",
                "scenario": "mnist_epochs",
                "data": "real",
                "batch": 64,
                "options": {"epochs": 1, "data_dir": str(idx)},
            },
        ],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    out = tmp_path / "records.jsonl"
    env = dict(
        os.environ, GPULAB_DATA_DIR=str(shards), TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "workloads", "bench", "--suite", str(path), "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    recs = read_records(out)
    assert proc.returncode == 0, (proc.stderr[-2000:], [r.get("error") for r in recs])
    by_exp = {r["experiment"]: r for r in recs}
    assert set(by_exp) == {"single_real", "deepbench_gemm", "mnist_epochs"}
    assert all(r["status"] == "ok" for r in recs)
    real = by_exp["single_real"]
    assert real["data"] == "real" and real["images_per_sec"] > 0
    # read from the disk: the page cache was dropped first (root here), or the record says why
    assert real["params"]["page_cache_dropped"] is (os.geteuid() == 0)
    assert real["params"]["page_cache_reason"]
    assert by_exp["mnist_epochs"]["params"]["page_cache_dropped"] is (os.geteuid() == 0)
    # every kind carries its timing parts and its NVML window
    for rec in recs:
        assert rec["startup_s"] > 0 and rec["timed_s"] > 0, rec["experiment"]
        assert len(rec["block_times_s"]) >= 1 and "nvml_window" in rec["params"]
    assert by_exp["mnist_epochs"]["sync_every"] == 4  # 256 images / batch 64: once per epoch
    assert "sync_every" not in by_exp["deepbench_gemm"]
    assert real["claims"] == ["closer2018/single_real"]
    assert by_exp["deepbench_gemm"]["kind"] == "kernel"
    assert any(k.endswith(".tflops") for k in by_exp["deepbench_gemm"]["metrics"])
    assert by_exp["mnist_epochs"]["kind"] == "job"
    assert by_exp["mnist_epochs"]["metrics"]["train_wall_s"] > 0
