"""Real tiny TensorFlow runs of every model through the runner (``gpulab bench``), one process
per repetition, and the record schema of those runs; a failed measurement is a record."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.parts import REPO
from workloads.bench import run_job
from workloads.records import REQUIRED, SCHEMA_VERSION, iter_records
from workloads.scenarios import Job
from workloads.suites import load_suite

pytestmark = [pytest.mark.tf, pytest.mark.slow]

STEPS, WARMUP = 2, 1


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, list[dict]]:
    out = tmp_path_factory.mktemp("smoke") / "records.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "infra.cli",
            "bench",
            "--suite",
            "smoke",
            "--steps",
            str(STEPS),
            "--warmup",
            str(WARMUP),
            "--out",
            str(out),
            "--topology",
            "local",
            "--arm",
            "test",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc, list(iter_records(out, strict=True))


def test_every_model_ran_ok_in_its_own_process(smoke_run):
    proc, records = smoke_run
    smoke = load_suite("smoke")
    assert [r["model"] for r in records] == [e.model for e in smoke.entries]
    assert {r["model"] for r in records} == {"alexnet", "inception_v3", "resnet50", "mnist_cnn"}
    for rec, entry in zip(records, smoke.entries, strict=True):
        assert rec["status"] == "ok" and rec["error"] is None, rec["error"]
        assert rec["params"]["image_size"] == (entry.image_size or 28)
        assert rec["batch_size"] == rec["global_batch"] == entry.batch
        assert rec["params"]["backend"] == "tensorflow"
        assert rec["params"]["param_count"] > 0
    pids = {r["params"]["pid"] for r in records}
    assert len(pids) == len(records) and os.getpid() not in pids
    for model in ("alexnet", "inception_v3", "resnet50", "mnist_cnn"):
        assert model in proc.stdout  # the results table


def test_record_schema_and_tf_cnn_arithmetic(smoke_run):
    _, records = smoke_run
    assert len({r["run_id"] for r in records}) == 1
    assert len({r["record_id"] for r in records}) == len(records)
    for rec in records:
        assert rec["schema_version"] == SCHEMA_VERSION
        assert all(k in rec for k in REQUIRED)
        assert (rec["suite"], rec["scenario"], rec["data"], rec["kind"]) == (
            "smoke",
            "single",
            "synthetic",
            "training",
        )
        assert (rec["steps"], rec["warmup"], rec["repeat"]) == (STEPS, WARMUP, 0)
        assert (rec["topology"], rec["arm"]) == ("local", "test")
        fp = rec["fingerprint"]
        wall = rec["metrics"]["timed_wall_s"]
        assert len(rec["step_times_s"]) == STEPS
        assert sum(rec["step_times_s"]) == pytest.approx(wall, rel=1e-6)
        assert rec["images_per_sec"] == pytest.approx(rec["global_batch"] * STEPS / wall)
        assert len(rec["params"]["warmup_times_s"]) == WARMUP
        # tf_cnn's L2 weight decay on its models; the Keras MNIST example has none
        assert rec["params"]["weight_decay"] == (0.0 if rec["model"] == "mnist_cnn" else 4e-5)
        assert rec["params"]["variable_placement"]["variables"] == "device"
        # elapsed runs from launch (imports, build, data, warm-up) to finish; start-up,
        # warm-up and the timed window are its parts, in order
        assert rec["elapsed_s"] > wall + sum(rec["params"]["warmup_times_s"])
        assert rec["timed_s"] == wall and rec["first_step_s"] == pytest.approx(
            sum(rec["params"]["warmup_times_s"])
        )
        assert 0 < rec["startup_s"] < rec["elapsed_s"] - rec["first_step_s"] - rec["timed_s"]
        # one warm-up step: nothing for auto to go by, so a sync per step
        assert rec["sync_every"] == 1 and rec["params"]["timing"]["sync_mode"] == "auto"
        assert rec["block_times_s"] == rec["step_times_s"]
        assert rec["params"]["losses"]["fetched"] == STEPS
        assert rec["params"]["nvml_window"]["present"] is (fp["gpu"]["present"] is True)
        assert rec["started_at"] < rec["finished_at"]
        assert fp["host"] == rec["host"] and fp["kernel"] and fp["cpu"]["logical_cpus"]
        assert fp["software"]["backend"]["keras_backend"] == "tensorflow"
        if not Path("/proc/driver/nvidia").exists():
            assert fp["gpu"]["present"] is False


def test_sync_every_blocks_and_per_block_step_times(tmp_path):
    """``--sync-every 3`` over 7 steps: blocks of 3, 3 and 1 steps, one sync each; the
    per-step times are each block's time over its steps; ``tf_cnn`` syncs every step."""
    out = tmp_path / "r.jsonl"
    for k in ("3", "tf_cnn"):
        proc = subprocess.run(
            [sys.executable, "-m", "workloads", "bench", "--model", "mnist_cnn", "--batch", "8",
             "--steps", "7", "--warmup", "2", "--repeats", "1", "--sync-every", k,
             "--out", str(out)],
            cwd=REPO, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
    blocked, per_step = iter_records(out, strict=True)
    assert blocked["sync_every"] == 3 and blocked["params"]["timing"]["block_steps"] == [3, 3, 1]
    assert blocked["params"]["timing"]["sync_mode"] == "fixed"
    assert blocked["step_times_s"] == pytest.approx(
        [b / n for b, n in zip(blocked["block_times_s"], [3, 3, 1], strict=True)]
    )
    assert sum(blocked["block_times_s"]) == pytest.approx(blocked["timed_s"], rel=1e-6)
    assert blocked["images_per_sec"] == pytest.approx(8 * 7 / blocked["timed_s"])
    assert per_step["sync_every"] == 1 and len(per_step["block_times_s"]) == 7
    assert per_step["params"]["timing"]["sync_mode"] == "tf_cnn"
    # the window is short on a CPU: flagged in the record, which is kept
    assert blocked["status"] == "ok" and blocked["params"]["timing"]["short_window"] in (
        True,
        False,
    )
    assert blocked["params"]["timing"]["short_window"] is (blocked["timed_s"] < 1.0)


def test_timeout_is_a_failed_record_and_exit_1(tmp_path):
    suite = tmp_path / "slow.yaml"
    suite.write_text(
        yaml.safe_dump(
            {
                "experiments": [
                    {
                        "experiment": "too-slow",
                        "model": "resnet50",
                        "image_size": 32,
                        "batch": 2,
                        "steps": 1000,
                        "warmup": 1,
                        "repeats": 1,
                        "timeout_s": 2,
                    },
                ]
            }
        )
    )
    out = tmp_path / "r.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "workloads", "bench", "--suite", str(suite), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    (rec,) = iter_records(out, strict=True)
    assert rec["status"] == "failed" and "timed out after 2 s" in rec["error"]
    assert rec["images_per_sec"] is None and rec["elapsed_s"] >= 2


def test_exception_in_the_measurement_process_is_reported():
    job = Job(
        suite="t",
        experiment="broken",
        model="no-such-model",
        batch=2,
        steps=1,
        warmup=0,
        timeout_s=120,
    )
    fields = run_job(job)
    assert fields["status"] == "failed"
    assert "InputError: unknown model 'no-such-model'" in fields["error"]
    assert fields["elapsed_s"] > 0 and "fingerprint" in fields
