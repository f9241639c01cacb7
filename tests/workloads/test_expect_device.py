"""Expected device (``GPULAB_EXPECT_DEVICE``): a host marked as a GPU host whose framework sees
no GPU fails with a record naming the host, instead of training on the CPU silently.

The runs are real TensorFlow on this machine's CPU (no GPU here, which is the case under test);
the one case with a visible GPU doubles the NVIDIA hardware (``visible_gpus`` patched) and says so
in its name."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parts import REPO
from workloads import expect_device
from workloads.errors import InputError
from workloads.records import iter_records

pytestmark = [pytest.mark.tf]

BENCH = [
    "-m",
    "workloads",
    "bench",
    "--model",
    "mnist_cnn",
    "--batch",
    "8",
    "--steps",
    "1",
    "--warmup",
    "0",
    "--repeats",
    "1",
]


def bench(tmp_path: Path, expect: str | None) -> tuple[subprocess.CompletedProcess, list[dict]]:
    out = tmp_path / "records.jsonl"
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    env.pop(expect_device.ENV, None)
    if expect is not None:
        env[expect_device.ENV] = expect
    proc = subprocess.run(
        [sys.executable, *BENCH, "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    records = list(iter_records(out, strict=True)) if out.exists() else []
    return proc, records


def test_gpu_expected_but_none_visible_fails_with_a_record_naming_the_host(tmp_path):
    proc, records = bench(tmp_path, "gpu")
    assert proc.returncode == 1, proc.stderr[-2000:]
    [rec] = records
    assert rec["status"] == "failed"
    host = socket.gethostname()
    assert rec["error"].startswith(f"host {host}: no GPU is visible to tensorflow "), rec["error"]
    assert "not falling back to the CPU" in rec["error"]
    assert rec["images_per_sec"] is None  # nothing was trained on the CPU
    assert rec["params"]["device"] == {
        "expected": "gpu",
        "used": "cpu",
        "gpus": [],
        "framework": rec["params"]["device"]["framework"],
    }
    assert rec["params"]["device"]["framework"].startswith("tensorflow 2.")
    # what the workload_run role shows in the play's failure (the end of stderr)
    assert f"host {host}: no GPU is visible to tensorflow" in proc.stderr


@pytest.mark.parametrize("expect", ["cpu", "auto", None])
def test_cpu_or_auto_runs_and_records_the_device_really_used(tmp_path, expect):
    proc, records = bench(tmp_path, expect)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [rec] = records
    assert rec["status"] == "ok" and rec["images_per_sec"] > 0
    assert rec["params"]["device"]["expected"] == (expect or "auto")
    assert rec["params"]["device"]["used"] == "cpu"


def test_bad_value_is_one_line_naming_the_variable_and_runs_nothing(tmp_path):
    proc, records = bench(tmp_path, "tpu")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "GPULAB_EXPECT_DEVICE='tpu' is not one of gpu, cpu, auto" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert records == []


def test_expected_device_values():
    assert expect_device.expected_device({}) == "auto"
    assert expect_device.expected_device({expect_device.ENV: ""}) == "auto"
    assert expect_device.expected_device({expect_device.ENV: " GPU "}) == "gpu"
    with pytest.raises(InputError, match="GPULAB_EXPECT_DEVICE='x'"):
        expect_device.expected_device({expect_device.ENV: "x"})


def test_gpu_expected_and_visible_with_mocked_nvidia_gpu(monkeypatch):
    """NVIDIA hardware doubled: the framework is made to report one GPU."""
    monkeypatch.setattr(expect_device, "visible_gpus", lambda backend: ["/physical_device:GPU:0"])
    device = expect_device.check("tensorflow", {expect_device.ENV: "gpu"}, host="h1")
    assert device["used"] == "gpu" and device["gpus"] == ["/physical_device:GPU:0"]


def test_gpu_expected_none_visible_names_the_given_host(monkeypatch):
    monkeypatch.setattr(expect_device, "visible_gpus", lambda backend: [])
    with pytest.raises(expect_device.DeviceMissing, match=r"^host gpu-7: no GPU is visible to "):
        expect_device.check("tensorflow", {expect_device.ENV: "gpu"}, host="gpu-7")
