"""The shared and sharing scenarios' own process: no framework import, the jobs' device.

``python -m workloads _measure`` of a scenario that measures only in child jobs
(``MEASURED_IN_CHILDREN``) skips the expected-device check (it imports the framework: 3.4 s of
TensorFlow on a 2-core CPU, for a process that trains nothing); the record's ``params.device``
and its fingerprint's ``software.backend`` are those of the first job that reported them, and
each job checks the expected device itself. When no job got that far, the check runs here.

Run as a user's runner runs it: a real ``_measure`` process, its job on stdin, its result on
the protocol line; the jobs are a stand-in (a plain Python child speaking the protocol, with
the device and backend a real one reports) put in front by a driver that also replaces the
device check with one that counts its calls, and says whether TensorFlow was imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.parts import REPO
from workloads.bench import PREFIX
from workloads.scenarios import MEASURED_IN_CHILDREN, jobs

JOB_DEVICE = {"expected": "auto", "used": "cpu", "gpus": [], "framework": "tensorflow 2.99"}
JOB_BACKEND = {
    "keras_backend": "tensorflow",
    "tensorflow_build": {"cuda_version": "12.9", "is_cuda_build": "True"},
}
CHECK_DEVICE = {"expected": "auto", "used": "cpu", "gpus": [], "framework": "from the check"}

STAND_IN = r"""
import json, os, sys, time
job = json.loads(sys.stdin.read())
def out(kind, value):
    sys.stdout.write("@gpulab " + kind + " " + json.dumps(value) + "\n")
    sys.stdout.flush()
for i in range(1, job["warmup"] + 1):
    out("progress", {"phase": "warmup", "step": i, "total": job["warmup"]})
if "GPULAB_BARRIER_FDS" in os.environ:
    from workloads.scenarios.barrier import wait_in_child
    wait_in_child()
t0 = time.time()
for i in range(1, job["steps"] + 1):
    time.sleep(0.02)
    out("progress", {"phase": "timed", "step": i, "total": job["steps"]})
t1 = time.time()
device = json.loads(os.environ["STAND_IN_DEVICE"])
fingerprint = {"software": {"backend": json.loads(os.environ["STAND_IN_BACKEND"])}}
params = {"device": device, "timed_window_unix": [t0, t1]}
if os.environ.get("STAND_IN_NO_GPU"):
    out("result", {"status": "failed", "params": params, "fingerprint": fingerprint,
                   "error": "host h: no GPU is visible to tensorflow 2.99 (Keras backend "
                            "tensorflow) but the host is a GPU host"})
    sys.exit(0)
out("result", {"status": "ok", "images_per_sec": job["batch"] * job["steps"] / (t1 - t0),
               "step_times_s": [0.02] * job["steps"], "metrics": {"timed_wall_s": t1 - t0},
               "params": params, "fingerprint": fingerprint,
               "elapsed_s": time.time() - job["launched_at"]})
"""

# The runner's own `_measure`, with the jobs' command replaced by the stand-in and the device
# check replaced by one that counts its calls (and raises DeviceMissing on request).
DRIVER = r"""
import json, os, sys
from workloads import expect_device
from workloads.scenarios import jobs

calls = []
def check(backend, environ=None, host=None):
    calls.append(backend)
    if os.environ.get("CHECK_NO_GPU"):
        raise expect_device.DeviceMissing("host h: no GPU is visible (check)",
                                          {"expected": "gpu", "used": "cpu", "gpus": []})
    return json.loads(os.environ["CHECK_DEVICE"])
expect_device.check = check

real_start = jobs.start_job
def start(group, name, job, wrapper=None, env=None, pass_fds=()):
    return real_start(group, name, job, [sys.executable, os.environ["STAND_IN"]], env, pass_fds)
jobs.start_job = start

from workloads.__main__ import main
rc = main(["_measure"])
sys.stderr.write("\nDRIVER " + json.dumps(
    {"rc": rc, "checks": calls, "tensorflow": "tensorflow" in sys.modules}) + "\n")
"""


def measure(tmp_path: Path, job: dict[str, Any], **env: str) -> tuple[dict, dict]:
    """(the result line's fields, what the driver saw) of one ``_measure`` process."""
    stand_in = tmp_path / "stand_in.py"
    stand_in.write_text(STAND_IN)
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GPULAB_")},
        "PYTHONPATH": str(REPO),
        "STAND_IN": str(stand_in),
        "STAND_IN_DEVICE": json.dumps(JOB_DEVICE),
        "STAND_IN_BACKEND": json.dumps(JOB_BACKEND),
        "CHECK_DEVICE": json.dumps(CHECK_DEVICE),
        **env,
    }
    r = subprocess.run(
        [sys.executable, "-c", DRIVER],
        input=json.dumps(job),
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    driver = json.loads(r.stderr.rpartition("\nDRIVER ")[2])
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith(PREFIX + "result ")]
    return json.loads(line[len(PREFIX + "result ") :]), driver


def job(scenario: str, **options: Any) -> dict[str, Any]:
    if scenario == "shared":
        options = {"background_model": "mnist_cnn", "background_batch": 8, **options}
    return {
        "suite": "t",
        "experiment": scenario,
        "model": "mnist_cnn",
        "scenario": scenario,
        "batch": 8,
        "steps": 4,
        "warmup": 1,
        "options": {"min_overlap": 0, **options},
        "timeout_s": 120,
    }


def test_the_scenarios_that_measure_only_in_children_are_shared_and_sharing() -> None:
    assert sorted(MEASURED_IN_CHILDREN) == ["shared", "sharing"]


@pytest.mark.parametrize(
    "scenario, options", [("sharing", {"jobs": 2}), ("shared", {})], ids=["sharing", "shared"]
)
def test_the_record_carries_the_jobs_device_and_backend_and_the_framework_is_not_imported(
    tmp_path: Path, scenario: str, options: dict[str, Any]
) -> None:
    fields, driver = measure(tmp_path, job(scenario, **options))
    assert fields["status"] == "ok", fields.get("error")
    assert driver == {"rc": 0, "checks": [], "tensorflow": False}
    assert fields["params"]["device"] == JOB_DEVICE
    software = fields["fingerprint"]["software"]
    assert software["backend"] == JOB_BACKEND
    # the rest of the fingerprint is this process's own
    assert "packages" in software and "gpu" in fields["fingerprint"]


def test_jobs_without_the_expected_gpu_fail_the_record_with_their_device(tmp_path: Path) -> None:
    fields, driver = measure(tmp_path, job("sharing", jobs=2), STAND_IN_NO_GPU="1")
    assert driver["checks"] == [] and driver["tensorflow"] is False
    assert fields["status"] == "failed"
    assert "no GPU is visible to tensorflow 2.99" in fields["error"]
    assert fields["params"]["device"] == JOB_DEVICE


def test_with_no_job_started_the_device_is_checked_here(tmp_path: Path) -> None:
    """A partition that cannot be had skips the unit before any job starts: the device comes
    from this process's own check, as for every other scenario."""
    fields, driver = measure(tmp_path, job("sharing", jobs=2, partition="wrapper"))
    assert driver["checks"] == ["tensorflow"]
    assert fields["status"] == "skipped"
    assert fields["params"]["device"] == CHECK_DEVICE
    assert fields["fingerprint"]["software"]["backend"] != JOB_BACKEND


def test_with_no_job_started_a_missing_gpu_fails_the_record(tmp_path: Path) -> None:
    fields, driver = measure(
        tmp_path, job("sharing", jobs=2, partition="wrapper"), CHECK_NO_GPU="1"
    )
    assert driver["checks"] == ["tensorflow"]
    assert fields["status"] == "failed"
    assert fields["error"] == "host h: no GPU is visible (check)"
    assert fields["params"]["device"]["expected"] == "gpu"


def test_children_device_is_the_first_job_that_reported_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jobs, "REPORTED", [])
    assert jobs.children_device() == (None, None)
    jobs.REPORTED.extend(
        [
            {"status": "failed", "error": "exited 1"},
            {"params": {"device": "not a mapping"}},
            {"params": {"device": {"used": "gpu"}}, "fingerprint": {"error": "x"}},
            {"params": {"device": {"used": "cpu"}}, "fingerprint": {"software": {"backend": {}}}},
        ]
    )
    assert jobs.children_device() == ({"used": "gpu"}, None)
    jobs.REPORTED[2]["fingerprint"] = {"software": {"backend": {"keras_backend": "jax"}}}
    assert jobs.children_device() == ({"used": "gpu"}, {"keras_backend": "jax"})
    jobs.REPORTED[2]["fingerprint"] = {"software": {"backend": "text"}}
    assert jobs.children_device() == ({"used": "gpu"}, None)
