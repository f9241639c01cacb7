"""The composite scenarios' timing fields and NVML windows, fast: real child processes behind
the real barrier, with a stand-in for the measuring process.

The stand-in (a plain Python child, no training: a model takes seconds to minutes per job)
speaks the measuring process's protocol and returns what ``single`` returns about timing:
the K it ran at (the job's ``sync_every`` when it is a number, else the K "auto" would pick:
``FAKE_AUTO_K``, or ``FAKE_AUTO_K_CONCURRENT`` behind the start barrier), its start-up,
warm-up, timed window and blocks, and an NVML window whose
``throttle_mask`` comes from ``FAKE_MASK`` (a throttled instance). Each result also echoes the
job's ``sync_every`` and options, so the tests see what each instance was asked to do.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workloads.scenarios import Job, jobs, shared, sharing
from workloads.scenarios.procs import ProcGroup

STAND_IN = r"""
import json, os, sys, time

job = json.loads(sys.stdin.read())
env = os.environ
behind = "GPULAB_BARRIER_FDS" in env  # a concurrent job (the barrier takes the variable)

def progress(phase, i, n):
    print("@gpulab progress " + json.dumps({"phase": phase, "step": i, "total": n}), flush=True)

start = time.time()
for i in range(1, job["warmup"] + 1):
    time.sleep(0.01)
    progress("warmup", i, job["warmup"])
warm = time.time() - start
if "GPULAB_BARRIER_FDS" in env:  # the real child's barrier, after its warm-up
    from workloads.scenarios.barrier import wait_in_child

    wait_in_child()
asked = job["sync_every"]
# auto behind the barrier (a shared GPU, slower steps) would pick another K
auto = env.get("FAKE_AUTO_K_CONCURRENT" if behind else "FAKE_AUTO_K", "9" if behind else "3")
k = asked if isinstance(asked, int) else int(auto)
t0 = time.time()
for i in range(1, job["steps"] + 1):
    time.sleep(0.01)
    progress("timed", i, job["steps"])
t1 = time.time()
blocks = [(t1 - t0) / 2, (t1 - t0) / 2]
print("@gpulab result " + json.dumps({
    "status": "ok",
    "images_per_sec": job["batch"] * job["steps"] / (t1 - t0),
    "step_times_s": [b / k for b in blocks],
    "metrics": {"timed_wall_s": t1 - t0},
    "elapsed_s": time.time() - job["launched_at"],
    "sync_every": k,
    "startup_s": float(env.get("FAKE_STARTUP_S", "0.5")),
    "first_step_s": warm,
    "timed_s": t1 - t0,
    "block_times_s": blocks,
    "params": {
        "timed_window_unix": [t0, t1],
        "asked_sync_every": asked,
        "options": job["options"],
        "pid": os.getpid(),
        "nvml_window": {"present": True, "throttle_mask": int(env.get("FAKE_MASK", "0"))},
        "timing": {"sync_every": k, "sync_mode": "auto" if asked == "auto" else "fixed"},
    },
}), flush=True)
"""


@pytest.fixture
def stand_in(tmp_path: Path) -> list[str]:
    path = tmp_path / "stand_in.py"
    path.write_text(STAND_IN)
    return [sys.executable, str(path)]


@pytest.fixture
def shared_stand_in(stand_in: list[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real = jobs.start_job

    def start(group: ProcGroup, name: str, job: Any, wrapper: Any = None, env: Any = None,
              pass_fds: tuple[int, ...] = ()) -> Any:  # fmt: skip
        return real(group, name, job, stand_in, env, pass_fds)

    monkeypatch.setattr(jobs, "start_job", start)
    yield


def _job(scenario: str, sync_every: int | str = "auto", **options: Any) -> Job:
    return Job(
        suite="t",
        experiment=scenario,
        model="mnist_cnn",
        scenario=scenario,
        batch=8,
        steps=6,
        warmup=1,
        options=dict(options),
        timeout_s=120,
        sync_every=sync_every,
    )


def test_sharing_jobs_run_at_the_baselines_k_and_the_record_says_so(
    stand_in: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_AUTO_K", "5")
    out = sharing.run(
        _job("sharing", jobs=2, wrapper=stand_in, baseline_wrapper=stand_in, min_overlap=0.0)
    )
    assert "status" not in out, out.get("error")
    p = out["params"]
    assert p["single_params"]["asked_sync_every"] == "auto"  # the baseline chose (K = 5)
    assert [t["sync_every"] for t in p["job_timings"]] == [5, 5]
    assert out["sync_every"] == 5 and p["timing"] == {"sync_every": 5, "sync_mode": "auto"}
    assert out["timed_s"] == out["metrics"]["window_union_s"]
    assert out["first_step_s"] == max(t["first_step_s"] for t in p["job_timings"])
    assert out["startup_s"] == 0.5 and len(out["block_times_s"]) == 2
    assert out["block_times_s"] == p["job_timings"][0]["block_times_s"]
    assert p["single_timing"]["sync_every"] == 5
    window = p["nvml_window"]
    assert set(window["parts"]) == {"single", "job0", "job1"} and window["throttle_mask"] == 0


def test_sharing_is_throttled_when_one_job_is(
    stand_in: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MASK", "64")
    out = sharing.run(
        _job("sharing", 7, jobs=2, wrapper=stand_in, baseline_wrapper=stand_in, min_overlap=0.0)
    )
    assert out["params"]["nvml_window"]["throttle_mask"] == 64
    assert out["params"]["nvml_window"]["reasons"] == ["hw_thermal_slowdown"]
    assert out["sync_every"] == 7 and out["params"]["timing"]["sync_mode"] == "fixed"


@pytest.mark.parametrize(("order", "first"), [("alone-first", "alone"), ("alternate", "shared")])
def test_shared_foreground_runs_twice_at_one_k_with_host_input(
    shared_stand_in: None, monkeypatch: pytest.MonkeyPatch, order: str, first: str
) -> None:
    monkeypatch.setenv("FAKE_AUTO_K", "4")
    job = _job("shared", background_model="mnist_cnn", background_batch=16, order=order)
    job.repeat = 1  # alternate: shared first on odd repeats
    out = shared.run(job)
    assert out.get("status", "ok") == "ok", out.get("error")
    p = out["params"]
    alone, shared_run = p["alone_params"], p
    assert p["run_order"] == f"{first}-first"
    # the first foreground run chose K ("auto"); the second was given it
    asked = {"alone": alone["asked_sync_every"], "shared": shared_run["asked_sync_every"]}
    second = "shared" if first == "alone" else "alone"
    assert asked == {first: "auto", second: 4}
    assert out["sync_every"] == p["alone_timing"]["sync_every"] == 4
    assert p["timing"]["sync_mode"] == "auto"
    # every instance feeds from host memory, each its own process
    assert alone["options"]["input"] == shared_run["options"]["input"] == "host"
    inst = p["instances"]
    assert inst["foreground"]["input"] == inst["background"]["input"] == "host"
    assert len({*inst["foreground"]["pids"], inst["background"]["pid"]}) == 3
    assert out["timed_s"] == out["metrics"]["timed_wall_shared_s"]
    assert p["alone_timing"]["timed_s"] == out["metrics"]["timed_wall_alone_s"]
    assert set(p["nvml_window"]["parts"]) == {"alone", "shared"}


def test_shared_input_device_keeps_tf_cnns_batch_on_the_device(shared_stand_in: None) -> None:
    out = shared.run(_job("shared", background_model="mnist_cnn", input="device"))
    assert out.get("status", "ok") == "ok", out.get("error")
    assert out["params"]["alone_params"]["options"]["input"] == "device"
    assert out["params"]["instances"]["background"]["input"] == "device"
    with pytest.raises(Exception, match="option 'input' must be one of host, device"):
        shared.check_options({"input": "disk"})
    json.dumps(out)  # a record's fields: JSON all the way down
