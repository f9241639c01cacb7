"""Scenarios ``sharing`` and ``shared`` end to end, fast: real child processes, a stand-in job.

What is replaced, and why: the measuring process (``python -m workloads _measure``, the
``single`` scenario) trains a model for seconds to minutes. Here every job is ``fake_job.py``, a
plain Python child that speaks the same protocol on stdout (``@gpulab progress`` lines, the
real start barrier after its warm-up, one ``@gpulab result`` line with ``timed_window_unix``)
and sleeps instead of training. ``sharing`` gets it through its own ``wrapper`` and
``baseline_wrapper`` options (the way Bitfusion's ``run ... --`` sits in front of a job);
``shared`` has no wrapper option, so its ``jobs.start_job`` is given the same wrapper. The
process group, deadlines, barrier pipes, protocol parsing and the scenario's arithmetic are the
real ones. The stand-in is no friendlier than a real job: it can crash, fail, leave out its
window or stop early, or leave fields out of its result, each set by an environment variable
of the job.

Each test runs in its own tmp_path and starts at most four short children.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from workloads.errors import InputError
from workloads.scenarios import Job, jobs, shared, sharing
from workloads.scenarios.procs import ProcGroup
from workloads.timing import sync_mode_of

FAKE_JOB = r"""
import json, os, sys, time

job = json.loads(sys.stdin.read())
env = os.environ
step_s = float(env.get("FAKE_STEP_S", "0.01"))
mode = env.get("FAKE_MODE", "")
behind_barrier = "GPULAB_BARRIER_FDS" in env
steps = int(env.get("FAKE_STEPS", job["steps"]))

def out(kind, value):
    sys.stdout.write("@gpulab " + kind + " " + json.dumps(value) + "\n")
    sys.stdout.flush()

if mode == "crash" or (mode == "crash-concurrent" and behind_barrier):
    print("fake job: crashed on purpose", flush=True)
    sys.exit(3)
for i in range(1, job["warmup"] + 1):
    time.sleep(step_s)
    out("progress", {"phase": "warmup", "step": i, "total": job["warmup"]})
barrier_wait = None
if behind_barrier:  # the real child's barrier (Job.on_step after the last warm-up step)
    from workloads.scenarios.barrier import wait_in_child

    w0 = time.monotonic()
    wait_in_child()
    barrier_wait = time.monotonic() - w0
t0 = time.time()
times = []
for i in range(1, steps + 1):
    s = time.perf_counter()
    time.sleep(step_s)
    times.append(time.perf_counter() - s)
    out("progress", {"phase": "timed", "step": i, "total": steps})
    if mode == "stall":  # alive, but no further step
        time.sleep(60)
t1 = time.time()
wall = t1 - t0
params = {
    "model": job["model"],
    "batch": job["batch"],
    "warmup": job["warmup"],
    "partition": env.get("GPULAB_PARTITION"),
    "cuda": env.get("CUDA_VISIBLE_DEVICES"),
    "barrier_timeout": env.get("GPULAB_BARRIER_TIMEOUT_S"),
}
if barrier_wait is not None and not env.get("FAKE_NO_WAIT_PARAM"):
    params["barrier_wait_s"] = barrier_wait
if env.get("FAKE_INSTANCE"):  # what a real job records of itself, and its timing
    params["pid"] = os.getpid()
    params["given_input"] = job.get("options", {}).get("input")
    params["timing"] = {"fake": "kept"}
if mode != "no-window-any" and (mode != "no-window" or not behind_barrier):
    params["timed_window_unix"] = [t0, t1]
if mode == "fail" or (mode == "fail-concurrent" and behind_barrier):
    out("result", {"status": "failed", "error": "fake job: failed on purpose"})
    sys.exit(0)
result = {
    "status": "ok",
    "images_per_sec": 0.0 if mode == "zero-rate" else job["batch"] * steps / wall,
    "step_times_s": times,
    "metrics": {"timed_wall_s": wall},
    "params": params,
    "elapsed_s": time.time() - job["launched_at"],
}
if env.get("FAKE_INSTANCE"):
    result["sync_every"] = 3
if mode == "no-params":  # an ok result that leaves out its params (so its window too)
    del result["params"]
if mode == "no-step-times":
    del result["step_times_s"]
out("result", result)
"""


@pytest.fixture
def fake(tmp_path: Path) -> list[str]:
    path = tmp_path / "fake_job.py"
    path.write_text(FAKE_JOB)
    return [sys.executable, str(path)]


def _job(scenario: str, steps: int = 4, warmup: int = 1, **options: Any) -> Job:
    return Job(
        suite="t",
        experiment=scenario,
        model="mnist_cnn",
        scenario=scenario,
        batch=8,
        steps=steps,
        warmup=warmup,
        options=dict(options),
        timeout_s=300,
    )


# --- sharing ---------------------------------------------------------------------------------


def test_sharing_runs_the_single_job_then_n_behind_the_barrier(fake: list[str]) -> None:
    """Two stand-in jobs behind the real barrier: the record is the aggregate over the union of
    their timed windows; the baseline runs without the partition, the jobs with it."""
    job = _job(
        "sharing",
        warmup=0,
        jobs=2,
        wrapper=fake,
        baseline_wrapper=fake,
        partition="memory",
        env={"CUDA_VISIBLE_DEVICES": "7"},
        min_overlap=0.0,
    )
    steps: list[tuple[str, int, int]] = []
    job.progress = lambda phase, step, total: steps.append((phase, step, total))
    out = sharing.run(job)
    assert "status" not in out, out.get("error")  # ok: the measuring process sets "ok"
    assert steps == [("single", 0, 3), ("concurrent", 1, 3)]
    m, p = out["metrics"], out["params"]
    assert p["jobs"] == 2 and p["wrapper"] == fake
    assert p["partition"] == {"asked": "memory", "mechanism": "memory", "share": 0.5}
    assert p["job_partitions"] == ["memory", "memory"]  # each job's GPULAB_PARTITION
    assert p["single_params"]["partition"] is None  # the baseline: no partition env
    assert p["single_params"]["cuda"] == "7" and p["single_params"]["warmup"] == 0
    assert p["concurrent_warmup"] == 1  # at least one warm-up step before the barrier
    assert p["min_overlap"] == 0.0
    windows = p["timed_windows_unix"]
    assert len(windows) == 2 and all(len(w) == 2 and w[0] < w[1] for w in windows)
    (s0, e0), (s1, e1) = windows
    union = max(e0, e1) - min(s0, s1)
    assert m["window_union_s"] == pytest.approx(union)
    assert m["window_together_s"] == pytest.approx(min(e0, e1) - max(s0, s1))
    assert m["window_start_spread_s"] == pytest.approx(abs(s0 - s1))
    assert m["window_overlap"] == pytest.approx(m["window_together_s"] / union)
    assert m["aggregate_images_per_sec"] == pytest.approx(2 * 8 * 4 / union)
    assert out["images_per_sec"] == m["aggregate_images_per_sec"]
    assert out["batch_size"] == 8 and out["global_batch"] == 16
    assert len(out["step_times_s"]) == 4 and len(p["step_times_s_job0"]) == 4
    assert m["sum_of_job_rates"] == pytest.approx(
        m["job0_images_per_sec"] + m["job1_images_per_sec"]
    )
    assert m["aggregate_throughput_ratio"] == pytest.approx(
        m["aggregate_images_per_sec"] / m["single_images_per_sec"]
    )
    assert m["completion_time_ratio"] == pytest.approx(
        max(m["job0_timed_wall_s"], m["job1_timed_wall_s"]) / m["single_timed_wall_s"]
    )
    assert m["elapsed_ratio"] == pytest.approx(
        max(m["job0_elapsed_s"], m["job1_elapsed_s"]) / m["single_elapsed_s"]
    )
    assert m["single_elapsed_s"] > m["single_timed_wall_s"] > 0


def test_sharing_jobs_get_the_partition_env_and_the_barrier(
    fake: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The concurrent jobs see the partition's variables and the entry's env; a job's own
    partition params are recorded per job."""
    reporter = tmp_path / "reporter.py"
    reporter.write_text(
        FAKE_JOB.replace(
            '"partition": env.get("GPULAB_PARTITION")',
            '"partition": {"share": env.get("GPULAB_GPU_SHARE"), "extra": env.get("EXTRA"), '
            '"timeout": env.get("GPULAB_BARRIER_TIMEOUT_S")}',
        )
    )
    wrapper = [sys.executable, str(reporter)]
    out = sharing.run(
        _job(
            "sharing",
            jobs=3,
            wrapper=wrapper,
            baseline_wrapper=wrapper,
            partition="memory",
            share=0.25,
            env={"EXTRA": "x"},
            min_overlap=0.0,  # 40 ms windows: how much they overlap is up to the CPU
        )
    )
    assert "status" not in out, out.get("error")
    p = out["params"]
    # the barrier's timeout is what is left of the deadline (job timeout 300 s - 15 s)
    assert [j.pop("timeout") for j in p["job_partitions"]] in (["285"] * 3, ["284"] * 3)
    assert p["job_partitions"] == [{"share": "0.25", "extra": "x"}] * 3
    assert p["single_params"]["partition"].pop("timeout") is None
    assert p["partition"] == {"asked": "memory", "mechanism": "memory", "share": 0.25}
    assert p["single_params"]["partition"] == {"share": None, "extra": "x"}
    assert sorted(k for k in out["metrics"] if k.startswith("job")) == sorted(
        f"job{i}_{what}"
        for i in range(3)
        for what in ("images_per_sec", "timed_wall_s", "elapsed_s")
    )
    assert out["global_batch"] == 24


def test_sharing_wrapper_comes_from_the_environment_only_without_the_option(
    fake: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_SHARING_WRAPPER", shlex.join(fake))
    out = sharing.run(_job("sharing", jobs=1, baseline_wrapper=fake))
    assert "status" not in out, out.get("error")
    assert out["params"]["wrapper"] == fake


def test_sharing_wrapper_option_wins_over_the_environment(
    fake: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_SHARING_WRAPPER", "/bin/false")
    out = sharing.run(_job("sharing", jobs=1, wrapper=fake, baseline_wrapper=fake))
    assert "status" not in out, out.get("error")
    assert out["params"]["wrapper"] == fake


def test_sharing_empty_wrapper_variable_is_no_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_SHARING_WRAPPER", "")
    fields = sharing.run(_job("sharing", jobs=1, baseline_wrapper=["/bin/false"]))
    assert fields["params"]["wrapper"] == []


def test_sharing_baseline_failure_is_a_failed_record(fake: list[str]) -> None:
    out = sharing.run(
        _job("sharing", jobs=2, wrapper=fake, baseline_wrapper=fake, env={"FAKE_MODE": "fail"})
    )
    assert out["status"] == "failed" and out["metrics"] == {}
    assert out["error"] == "single (baseline) job: fake job: failed on purpose"
    assert out["params"]["jobs"] == 2


def test_sharing_job_dying_before_the_barrier_is_named(fake: list[str]) -> None:
    out = sharing.run(
        _job(
            "sharing",
            jobs=2,
            wrapper=fake,
            baseline_wrapper=fake,
            env={"FAKE_MODE": "crash-concurrent"},
        )
    )
    assert out["status"] == "failed" and out["metrics"] == {}
    assert out["error"].startswith("concurrent jobs: job")
    assert "exited 3 before the start barrier" in out["error"]
    assert "crashed on purpose" in out["error"]
    assert out["params"]["jobs"] == 2 and out["params"]["wrapper"] == fake


def test_sharing_failed_concurrent_jobs_are_each_named(fake: list[str]) -> None:
    out = sharing.run(
        _job(
            "sharing",
            jobs=2,
            wrapper=fake,
            baseline_wrapper=fake,
            env={"FAKE_MODE": "fail-concurrent"},
        )
    )
    assert out["status"] == "failed" and out["metrics"] == {}
    assert out["error"] == "job0: fake job: failed on purpose; job1: fake job: failed on purpose"
    assert out["params"]["job_partitions"] == [None, None]


def test_sharing_job_without_a_timed_window_is_refused(fake: list[str]) -> None:
    out = sharing.run(
        _job("sharing", jobs=2, wrapper=fake, baseline_wrapper=fake, env={"FAKE_MODE": "no-window"})
    )
    assert out["status"] == "failed" and out["metrics"] == {}
    assert out["error"] == ("a concurrent job recorded no timed window (params.timed_window_unix)")
    assert out["params"]["jobs"] == 2 and out["params"]["single_params"]["batch"] == 8


def test_sharing_partition_wrapper_is_the_jobs_wrapper(fake: list[str]) -> None:
    out = sharing.run(
        _job(
            "sharing",
            jobs=2,
            wrapper=fake,
            baseline_wrapper=fake,
            partition="wrapper",
            min_overlap=0.0,  # 50 ms windows: how much they overlap is up to the CPU
        )
    )
    assert "status" not in out, out.get("error")
    assert out["params"]["partition"]["mechanism"] == "wrapper"


def test_sharing_bare_results_give_empty_fields_not_nulls(fake: list[str]) -> None:
    """A baseline result without params and jobs' results without step times (the stand-in
    leaves them out) still give a record whose fields have their types."""
    bare = sharing.run(
        _job(
            "sharing",
            jobs=2,
            wrapper=fake,
            baseline_wrapper=["env", "FAKE_MODE=no-params", *fake],
            min_overlap=0.0,  # 50 ms windows: how much they overlap is up to the CPU
        )
    )
    assert "status" not in bare, bare.get("error")
    assert bare["params"]["single_params"] == {}
    no_steps = sharing.run(
        _job(
            "sharing",
            jobs=2,
            wrapper=fake,
            baseline_wrapper=fake,
            env={"FAKE_MODE": "no-step-times"},
            min_overlap=0.0,
        )
    )
    assert "status" not in no_steps, no_steps.get("error")
    assert no_steps["params"]["step_times_s_job0"] == []


def test_sharing_jobs_are_killed_at_the_deadline(fake: list[str]) -> None:
    """deadline_s 1: a baseline that would take 20 s is killed after about 1 s."""
    t0 = time.monotonic()
    out = sharing.run(
        _job(
            "sharing",
            jobs=1,
            wrapper=fake,
            baseline_wrapper=fake,
            deadline_s=1,
            env={"FAKE_STEP_S": "5"},
        )
    )
    took = time.monotonic() - t0
    assert out["status"] == "failed"
    assert out["error"] == "single (baseline) job: single killed at the deadline"
    assert 0.9 < took < 8


@pytest.mark.parametrize(("timeout_s", "low", "high"), [(16.5, 1.45, 2.4), (10, 0.95, 1.9)])
def test_sharing_deadline_is_cut_to_the_jobs_timeout(
    fake: list[str], timeout_s: float, low: float, high: float
) -> None:
    """The scenario keeps 15 s of the job's timeout for itself, and runs at least 1 s: a
    timeout of 16.5 s leaves 1.5 s, one of 10 s leaves 1 s, whatever deadline_s says."""
    job = _job("sharing", jobs=1, wrapper=fake, baseline_wrapper=fake, env={"FAKE_STEP_S": "5"})
    job.timeout_s = timeout_s
    t0 = time.monotonic()
    out = sharing.run(job)
    assert out["error"] == "single (baseline) job: single killed at the deadline"
    assert low <= time.monotonic() - t0 < high


def test_sharing_partition_that_cannot_be_had_is_skipped() -> None:
    out = sharing.run(_job("sharing", jobs=2, partition="wrapper"))
    assert out == {
        "status": "skipped",
        "error": (
            "partition 'wrapper' needs a wrapper (option wrapper or $GPULAB_SHARING_WRAPPER)"
        ),
        "params": {"jobs": 2, "wrapper": []},
        "metrics": {},
    }


def test_sharing_overlap_at_the_minimum_passes_and_below_is_refused() -> None:
    """Known windows (no processes): overlap exactly min_overlap is accepted, below it is not;
    the refusal keeps the metrics and says both numbers."""
    base = {"images_per_sec": 100.0, "elapsed_s": 10.0, "metrics": {"timed_wall_s": 2.0}}

    def res(s: float, e: float, ips: float) -> dict[str, Any]:
        return {
            "images_per_sec": ips,
            "elapsed_s": 12.0,
            "metrics": {"timed_wall_s": e - s},
            "params": {"timed_window_unix": [s, e]},
            "step_times_s": [0.5],
        }

    results = [res(0.0, 4.0, 10.0), res(1.0, 5.0, 30.0)]  # together 3 of union 5: 0.6
    job = _job("sharing", jobs=2)
    opts = sharing.check_options({"jobs": 2, "min_overlap": 0.6})
    out = sharing._measured(job, job, opts, {}, base, results)
    assert "status" not in out and out["metrics"]["window_overlap"] == pytest.approx(0.6)
    assert out["metrics"]["sum_of_job_rates"] == 40.0
    assert out["metrics"]["completion_time_ratio"] == 2.0
    assert out["metrics"]["elapsed_ratio"] == pytest.approx(1.2)
    assert out["metrics"]["window_start_spread_s"] == 1.0
    assert out["params"]["timed_windows_unix"] == [(0.0, 4.0), (1.0, 5.0)]
    assert out["params"]["step_times_s_job0"] == [0.5]
    assert out["step_times_s"] == []
    opts["min_overlap"] = 0.61
    out = sharing._measured(job, job, opts, {}, base, results)
    assert out["status"] == "failed"
    assert out["error"] == (
        "sharing: the 2 jobs' timed windows all overlap for 3.00 s of 5.00 s "
        "(overlap 0.60 < min_overlap 0.61): not a concurrent measurement"
    )
    assert out["metrics"]["aggregate_images_per_sec"] == pytest.approx(2 * 8 * 4 / 5.0)


@pytest.mark.parametrize(
    "window", [None, "x", [1.0], [1.0, 2.0, 3.0], [1.0, "2"], (1.0, 2.0), {"a": 1}]
)
def test_sharing_a_malformed_timed_window_is_no_window(window: Any) -> None:
    base = {"images_per_sec": 1.0, "elapsed_s": 1.0, "metrics": {"timed_wall_s": 1.0}}
    good = {
        "images_per_sec": 1.0,
        "elapsed_s": 1.0,
        "metrics": {"timed_wall_s": 1.0},
        "params": {"timed_window_unix": [0, 1]},
    }
    bad = {**good, "params": {"timed_window_unix": window}}
    job = _job("sharing", jobs=2)
    opts = sharing.check_options({"jobs": 2})
    out = sharing._measured(job, job, opts, {}, base, [good, bad])
    assert out["status"] == "failed" and "no timed window" in out["error"]
    nothing = {**good, "params": None}
    assert sharing._measured(job, job, opts, {}, base, [good, nothing])["status"] == "failed"
    ints = sharing._measured(job, job, opts, {}, base, [good, good])
    assert "status" not in ints and ints["params"]["timed_windows_unix"] == [(0.0, 1.0)] * 2


def test_sharing_options_defaults_and_share() -> None:
    opts = sharing.check_options({})
    assert opts["jobs"] == 4 and opts["share"] == 0.25
    assert opts["wrapper"] == [] and opts["baseline_wrapper"] == []
    assert opts["deadline_s"] == 900.0 and opts["min_overlap"] == 0.8
    assert opts["partition"] == "none" and opts["env"] == {}
    assert sharing.check_options({"jobs": 1})["share"] == 1.0
    assert sharing.check_options({"jobs": 3, "share": 1})["share"] == 1
    assert sharing.check_options({"share": 0.5, "seed": 3})["seed"] == 3
    assert sharing.check_options({"min_overlap": 0})["min_overlap"] == 0
    assert sharing.check_options({"min_overlap": 1})["min_overlap"] == 1


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"jobs": True}, r"option 'jobs' must be an integer >= 1, got True"),
        ({"jobs": 2.0}, r"'jobs' must be an integer >= 1, got 2.0"),
        ({"jobs": -1}, r"'jobs'"),
        ({"baseline_wrapper": "x"}, r"'wrapper' must be a list of strings"),
        ({"env": {"A": 1}}, r"option 'env' must map variable names to strings, got \{'A': 1\}"),
        ({"env": {1: "a"}}, r"option 'env'"),
        ({"env": ["A"]}, r"option 'env'"),
        ({"partition": "mig"}, r"option 'partition' must be one of auto, none, .*, got 'mig'"),
        ({"share": 0}, r"option 'share' must be a number > 0 and <= 1, got 0"),
        ({"share": 1.01}, r"'share'"),
        ({"share": True}, r"'share'"),
        ({"share": "0.5"}, r"'share'"),
        ({"deadline_s": -1}, r"'deadline_s'"),
        ({"bogus": 1}, r"option 'bogus' is unknown for scenario 'sharing'"),
    ],
)
def test_sharing_option_errors(options: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        sharing.check_options(options)


# --- shared ----------------------------------------------------------------------------------


@pytest.fixture
def shared_fake(fake: list[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """``shared`` starts its jobs through jobs.start_job: the stand-in goes in front, as a
    wrapper would (the job's JSON on stdin, its env and the process group are the real ones)."""
    real = jobs.start_job

    def start(group: ProcGroup, name: str, job: Any, wrapper: Any = None, env: Any = None,
              pass_fds: tuple[int, ...] = ()) -> Any:  # fmt: skip
        return real(group, name, job, fake, env, pass_fds)

    monkeypatch.setattr(jobs, "start_job", start)
    yield fake


def _shared(**options: Any) -> Job:
    base: dict[str, Any] = {"background_model": "mnist_cnn", "background_batch": 16}
    return _job("shared", **{**base, **options})


def test_shared_alone_first_then_beside_the_background(shared_fake: list[str]) -> None:
    out = shared.run(
        _shared(
            foreground_env={"CUDA_VISIBLE_DEVICES": "0"},
            background_env={"CUDA_VISIBLE_DEVICES": "1"},
        )
    )
    assert "status" not in out, out.get("error")
    m, p = out["metrics"], out["params"]
    assert p["run_order"] == "alone-first" and p["order"] == "alone-first"
    assert p["order_seed"] == 0
    assert p["background_model"] == "mnist_cnn" and p["background_batch"] == 16
    assert p["background_image_size"] is None
    assert p["background_ran_throughout"] is True
    assert p["foreground_cuda_visible_devices"] == "0"
    assert p["background_cuda_visible_devices"] == "1"
    assert p["alone_params"]["cuda"] == "0" and p["alone_params"]["batch"] == 8
    assert len(p["alone_step_times_s"]) == 4
    assert p["model"] == "mnist_cnn" and p["batch"] == 8  # the shared run's own params
    assert p["min_overlap"] == 0.8
    assert m["window_overlap"] == 1.0
    assert m["background_steps_during"] >= 1
    assert out["images_per_sec"] == m["images_per_sec_shared"]
    assert m["images_per_sec_degradation"] == pytest.approx(
        1 - m["images_per_sec_shared"] / m["images_per_sec_alone"]
    )
    assert m["elapsed_degradation"] == pytest.approx(
        m["timed_wall_shared_s"] / m["timed_wall_alone_s"] - 1
    )
    assert m["elapsed_alone_s"] > m["timed_wall_alone_s"] > 0
    assert m["elapsed_shared_s"] > m["timed_wall_shared_s"] > 0
    assert out["batch_size"] == 8 and out["global_batch"] == 8
    assert len(out["step_times_s"]) == 4


def test_shared_background_job_is_the_background_options(
    shared_fake: list[str], tmp_path: Path
) -> None:
    """The background runs the background model and batch, with at least one and at most 10
    warm-up steps, and runs on (100 000 steps) until the foreground is done."""
    seen = tmp_path / "seen.txt"
    reporter = tmp_path / "fake_job.py"
    reporter.write_text(
        FAKE_JOB.replace(
            "t0 = time.time()\n",
            "t0 = time.time()\n"
            "if 'SEEN' in env: open(env['SEEN'], 'a').write(json.dumps([job['model'], job['batch'],"
            " job['warmup'], job['steps'], job['image_size'], job['scenario']]) + '\\n')\n",
        )
    )
    out = shared.run(
        _shared(
            warmup=30,
            background_model="alexnet",
            background_batch=4,
            background_image_size=64,
            foreground_env={"SEEN": str(seen), "FAKE_STEP_S": "0.001"},
            background_env={"SEEN": str(seen), "FAKE_STEP_S": "0.001"},
        )
    )
    assert "status" not in out, out.get("error")
    lines = seen.read_text().splitlines()
    assert sorted(lines) == sorted(
        [
            '["mnist_cnn", 8, 30, 4, null, "single"]',
            '["alexnet", 4, 10, 100000, 64, "single"]',
            '["mnist_cnn", 8, 30, 4, null, "single"]',
        ]
    )
    assert out["params"]["background_image_size"] == 64


def test_shared_background_warms_up_at_least_one_step(
    shared_fake: list[str], tmp_path: Path
) -> None:
    seen = tmp_path / "seen.txt"
    (tmp_path / "fake_job.py").write_text(
        FAKE_JOB.replace(
            "t0 = time.time()\n",
            "t0 = time.time()\n"
            "if 'SEEN' in env: open(env['SEEN'], 'a').write(json.dumps([job['model'], "
            "job['batch'], job['warmup'], job['steps']]) + '\\n')\n",
        )
    )
    zero = shared.run(_shared(warmup=0, background_env={"SEEN": str(seen)}))
    assert "status" not in zero, zero.get("error")
    assert seen.read_text().splitlines() == ['["mnist_cnn", 16, 1, 100000]']


def test_shared_alternate_order_runs_the_shared_measurement_first(shared_fake: list[str]) -> None:
    job = _shared(order="alternate")
    job.repeat = 1
    out = shared.run(job)
    assert "status" not in out, out.get("error")
    assert out["params"]["run_order"] == "shared-first"
    assert out["params"]["order"] == "alternate"
    assert out["params"]["background_ran_throughout"] is True
    assert out["metrics"]["images_per_sec_alone"] > 0
    assert len(out["params"]["alone_step_times_s"]) == 4


def test_shared_background_that_never_warms_up_is_a_failed_record(shared_fake: list[str]) -> None:
    out = shared.run(_shared(background_env={"FAKE_MODE": "crash"}))
    assert out["status"] == "failed" and out["metrics"] == {}
    assert out["error"].startswith("background job never reached its timed steps: ")
    assert "crashed on purpose" in out["error"]
    assert out["params"]["alone"]["status"] == "ok"


def test_shared_failed_foreground_names_both_runs(shared_fake: list[str]) -> None:
    out = shared.run(_shared(foreground_env={"FAKE_MODE": "fail"}))
    assert out["status"] == "failed" and out["metrics"] == {}
    assert out["error"] == (
        "alone: fake job: failed on purpose; shared: fake job: failed on purpose"
    )
    assert out["params"]["run_order"] == "alone-first"


def test_shared_background_that_stops_early_is_refused(shared_fake: list[str]) -> None:
    """A background that ends after 3 timed steps, while the foreground runs 20: the overlap
    comes from its log's last write and is below min_overlap; the metrics are kept."""
    out = shared.run(
        _shared(
            steps=20,
            foreground_env={"FAKE_STEP_S": "0.01"},
            background_env={"FAKE_STEPS": "3", "FAKE_STEP_S": "0.001"},
        )
    )
    assert out["status"] == "failed"
    assert out["params"]["background_ran_throughout"] is False
    overlap = out["metrics"]["window_overlap"]
    assert 0.0 <= overlap < 0.5
    assert out["error"] == (
        f"shared: the background ran for {overlap:.2f} of the foreground's timed window "
        "(< min_overlap 0.8): not a shared measurement"
    )
    assert out["metrics"]["images_per_sec_alone"] > 0
    assert out["params"]["min_overlap"] == 0.8


def test_shared_overlap_at_the_minimum_passes(shared_fake: list[str]) -> None:
    """The same early stop with min_overlap 0: an overlap of 0 is not below it."""
    ok = shared.run(
        _shared(
            steps=20,
            min_overlap=0.0,
            foreground_env={"FAKE_STEP_S": "0.01"},
            background_env={"FAKE_STEPS": "3", "FAKE_STEP_S": "0.001"},
        )
    )
    assert "status" not in ok, ok.get("error")


def test_shared_reports_its_steps(shared_fake: list[str]) -> None:
    job = _shared()
    steps: list[tuple[str, int, int]] = []
    job.progress = lambda phase, step, total: steps.append((phase, step, total))
    assert "status" not in shared.run(job)
    assert steps == [("alone", 0, 2), ("background", 1, 2)]


def test_shared_foreground_starts_beside_the_background_when_asked(
    shared_fake: list[str],
) -> None:
    """foreground_start with-background: the shared run's foreground is launched with the
    background and begins its timed steps only after the background's 1 s warm-up (it waited
    about that second at the barrier); its elapsed time leaves the wait out."""
    out = shared.run(
        _shared(foreground_start="with-background", background_env={"FAKE_STEP_S": "1.0"})
    )
    assert "status" not in out, out.get("error")
    m, p = out["metrics"], out["params"]
    assert 0.9 <= p["barrier_wait_s"] < 5.0, p
    assert m["elapsed_shared_s"] < 0.9 <= m["elapsed_shared_s"] + p["barrier_wait_s"]
    assert m["window_overlap"] == 1.0


def test_shared_foreground_starts_after_the_background_warm_up_by_default(
    shared_fake: list[str],
) -> None:
    """The paper's way, the default: the foreground is launched only once the background is in
    its timed steps, with no barrier (it never waits)."""
    out = shared.run(_shared(background_env={"FAKE_STEP_S": "1.0"}))
    assert "status" not in out, out.get("error")
    assert "barrier_wait_s" not in out["params"]
    assert out["metrics"]["window_overlap"] == 1.0


def test_shared_beside_foreground_without_a_recorded_wait_keeps_its_elapsed_time(
    shared_fake: list[str],
) -> None:
    """A foreground result that records no ``barrier_wait_s`` keeps its elapsed time as it is
    (nothing to subtract), rather than failing the record."""
    out = shared.run(
        _shared(
            foreground_start="with-background",
            foreground_env={"FAKE_NO_WAIT_PARAM": "1"},
            background_env={"FAKE_STEP_S": "1.0"},
        )
    )
    assert "status" not in out, out.get("error")
    assert "barrier_wait_s" not in out["params"]
    assert out["metrics"]["elapsed_shared_s"] >= 0.9  # the wait at the barrier still in it


@pytest.mark.parametrize(
    ("data", "asked", "given", "recorded"),
    [
        ("synthetic", {}, "host", "host"),  # the scenario's default: each its own host copy
        ("synthetic", {"input": "device"}, "device", "device"),
        ("real", {}, None, "device"),  # a real data set: the jobs' own pipelines, not asked
    ],
)
def test_shared_records_each_instance_its_input_pids_and_timing(
    shared_fake: list[str], data: str, asked: dict[str, Any], given: str | None, recorded: str
) -> None:
    """``params.instances``: the foreground's input and the pids of its two runs (alone,
    shared), the background's input and pid; the jobs are given the input option only on
    synthetic data; ``params.timing`` keeps the shared run's own and adds its K and the sync
    mode asked for."""
    env = {"FAKE_INSTANCE": "1"}
    job = replace(_shared(foreground_env=env, background_env=env, **asked), data=data)
    out = shared.run(job)
    assert "status" not in out, out.get("error")
    p = out["params"]
    fg, bg = p["instances"]["foreground"], p["instances"]["background"]
    assert fg["pids"] == [p["alone_params"]["pid"], p["pid"]]  # p: the shared run's params
    pids = [*fg["pids"], bg["pid"]]
    assert all(isinstance(x, int) for x in pids) and len(set(pids)) == 3, pids
    assert fg["input"] == bg["input"] == recorded
    assert p["alone_params"]["given_input"] == p["given_input"] == given
    assert out["sync_every"] == 3
    assert p["timing"] == {
        "fake": "kept",
        "sync_every": 3,
        "sync_mode": sync_mode_of(job.sync_every),
    }


@pytest.mark.parametrize("mode", ["crash", "stall-warm"])
def test_shared_beside_foreground_that_never_gets_warm_is_a_failed_record(
    shared_fake: list[str], mode: str
) -> None:
    """A foreground launched beside the background that dies (or is still warming at the
    deadline) before the barrier fails the record naming the shared run."""
    # alternate order, an odd repeat: the shared run first
    options: dict[str, Any] = {"foreground_start": "with-background", "order": "alternate"}
    if mode == "crash":
        job = _shared(**options, foreground_env={"FAKE_MODE": "crash"})
        want = "shared: shared exited 3: "
    else:
        job = _shared(**options, deadline_s=3.0, foreground_env={"FAKE_STEP_S": "10"})
        want = "shared: shared killed at the deadline"
    out = shared.run(replace(job, repeat=1))
    assert out["status"] == "failed"
    assert want in out["error"]
    assert out["params"]["run_order"] == "shared-first"


def test_shared_counts_only_the_background_steps_during_the_foreground(
    shared_fake: list[str],
) -> None:
    """A background that stalls (alive, no further step) after its first timed step made no
    step during the shared run, and was there for all of it."""
    out = shared.run(_shared(background_env={"FAKE_MODE": "stall"}))
    assert "status" not in out, out.get("error")
    assert out["metrics"]["background_steps_during"] == 0.0
    assert out["metrics"]["window_overlap"] == 1.0


def test_shared_foreground_without_a_window_has_no_overlap(shared_fake: list[str]) -> None:
    out = shared.run(_shared(foreground_env={"FAKE_MODE": "no-window-any"}))
    assert out["status"] == "failed" and out["metrics"]["window_overlap"] == 0.0
    assert "the background ran for 0.00 of the foreground's timed window" in out["error"]


def test_shared_zero_rate_gives_no_degradation_ratio(shared_fake: list[str]) -> None:
    out = shared.run(_shared(foreground_env={"FAKE_MODE": "zero-rate"}))
    assert "status" not in out, out.get("error")
    m = out["metrics"]
    assert m["images_per_sec_alone"] == m["images_per_sec_shared"] == 0.0
    assert "images_per_sec_degradation" not in m
    assert m["elapsed_degradation"] == pytest.approx(
        m["timed_wall_shared_s"] / m["timed_wall_alone_s"] - 1
    )


@pytest.mark.parametrize(("timeout_s", "low", "high"), [(16, 0.95, 1.9), (16.5, 1.45, 2.4)])
def test_shared_deadline_is_cut_to_the_jobs_timeout(
    shared_fake: list[str], timeout_s: float, low: float, high: float
) -> None:
    """The scenario keeps 15 s of the job's timeout for itself: a timeout of 16 s leaves 1 s
    (the floor), 16.5 s leaves 1.5 s. The alone run is killed at it, and the background then
    has no time left to warm up."""
    job = _shared(foreground_env={"FAKE_STEP_S": "5"})
    job.timeout_s = timeout_s
    t0 = time.monotonic()
    out = shared.run(job)
    assert low <= time.monotonic() - t0 < high
    assert out["status"] == "failed"
    assert out["error"].startswith("background job never reached its timed steps")
    assert out["params"]["alone"] == {
        "status": "failed",
        "error": "alone killed at the deadline",
    }


def test_shared_deadline_option_stops_the_jobs(shared_fake: list[str]) -> None:
    job = _shared(deadline_s=1, foreground_env={"FAKE_STEP_S": "5"})
    t0 = time.monotonic()
    assert shared.run(job)["params"]["alone"]["error"] == "alone killed at the deadline"
    assert time.monotonic() - t0 < 1.9


def test_shared_shared_first_runs_alone_once_after_the_background(
    shared_fake: list[str],
) -> None:
    """Shared first: the background, then the foreground beside it, then the alone run, once."""
    job = _shared(order="alternate")
    job.repeat = 1
    steps: list[tuple[str, int, int]] = []
    job.progress = lambda phase, step, total: steps.append((phase, step, total))
    assert "status" not in shared.run(job)
    assert steps == [("background", 1, 2), ("alone", 0, 2)]


def test_shared_random_order_follows_the_order_seed(shared_fake: list[str]) -> None:
    """order random: the draw is seeded by order_seed and the repeat (seed 11, repeat 6 draws
    shared first, where another seed's draw would not)."""
    assert shared.alone_first("random", 6, 11) is False
    assert shared.alone_first("random", 6, 0) is True
    job = _shared(order="random", order_seed=11)
    job.repeat = 6
    out = shared.run(job)
    assert "status" not in out, out.get("error")
    assert out["params"]["run_order"] == "shared-first"
    assert out["params"]["order_seed"] == 11


def test_shared_crashed_foreground_keeps_empty_alone_fields(shared_fake: list[str]) -> None:
    """A foreground that crashes has no result: the failed record still carries the alone
    run's params and step times as empty values of their types, not nulls."""
    out = shared.run(_shared(foreground_env={"FAKE_MODE": "crash"}))
    assert out["status"] == "failed"
    assert out["error"].startswith("alone: alone exited 3: ")
    assert "; shared: shared exited 3: " in out["error"]
    assert out["params"]["alone_params"] == {}
    assert out["params"]["alone_step_times_s"] == []


def test_shared_result_without_step_times_gives_empty_lists(shared_fake: list[str]) -> None:
    out = shared.run(_shared(foreground_env={"FAKE_MODE": "no-step-times"}))
    assert "status" not in out, out.get("error")
    assert out["step_times_s"] == []
    assert out["params"]["alone_step_times_s"] == []


def test_shared_result_without_params_is_refused_not_a_crash(shared_fake: list[str]) -> None:
    """An ok foreground result that leaves out its params has no timed window: the record is
    refused as not shared (overlap 0), with the metrics kept."""
    out = shared.run(_shared(foreground_env={"FAKE_MODE": "no-params"}))
    assert out["status"] == "failed"
    assert "the background ran for 0.00 of the foreground's timed window" in out["error"]
    assert out["metrics"]["window_overlap"] == 0.0
    assert out["params"]["alone_params"] == {}
    assert "model" not in out["params"]


def test_shared_ratio_and_overlap_edges() -> None:
    """A zero rate or wall time on either side gives no ratio (never 0 or a division by 0), and
    an empty or reversed timed window no overlap."""
    assert shared._ratio(0.0, 2.0) is None
    assert shared._ratio(2.0, 0.0) is None
    assert shared._ratio(None, 2.0) is None
    assert shared._ratio(3.0, 2.0) == 1.5
    for window in ([5.0, 5.0], [6.0, 5.0]):
        assert shared._overlap({"params": {"timed_window_unix": window}}, 10.0) == 0.0
    assert shared._overlap({"params": {"timed_window_unix": [5.0, 7.0]}}, 6.0) == 0.5


def test_shared_order_draws() -> None:
    assert shared.alone_first("alternate", 0, 0) is True
    assert shared.alone_first("alternate", 3, 0) is False
    assert [shared.alone_first("alternate", r, 0) for r in (2, 4, 5)] == [True, True, False]
    assert shared.alone_first("anything-else", 1, 0) is True
    draws = [shared.alone_first("random", r, 11) for r in range(64)]
    assert draws != [shared.alone_first("random", r, 12) for r in range(64)]  # the seed counts
    import random

    assert draws == [random.Random(f"11:{r}").random() < 0.5 for r in range(64)]


def test_shared_options_defaults() -> None:
    opts = shared.check_options({})
    assert opts["background_model"] == "alexnet" and opts["background_batch"] == 512
    assert opts["background_image_size"] is None and opts["order"] == "alone-first"
    assert opts["deadline_s"] == 600.0 and opts["min_overlap"] == 0.8
    assert opts["order_seed"] == 0
    assert shared.check_options({"background_image_size": 32, "order": "random"})["order"] == (
        "random"
    )
    assert shared.check_options({"order_seed": -3})["order_seed"] == -3
    ones = shared.check_options({"background_batch": 1, "background_image_size": 1})
    assert (ones["background_batch"], ones["background_image_size"]) == (1, 1)


def test_shared_unknown_background_model_lists_the_models() -> None:
    from workloads.models import MODELS

    with pytest.raises(InputError) as err:
        shared.check_options({"background_model": "bert"})
    assert str(err.value) == (
        f"option 'background_model' 'bert' is not one of {', '.join(sorted(MODELS))}"
    )


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"background_model": "bert"}, r"option 'background_model' 'bert' is not one of .*alexnet"),
        ({"background_batch": None}, r"'background_batch' must be an integer >= 1, got None"),
        ({"background_batch": True}, r"'background_batch'"),
        ({"background_batch": 2.0}, r"'background_batch'"),
        ({"background_image_size": 0}, r"option 'background_image_size' must be an integer"),
        ({"background_image_size": False}, r"'background_image_size'"),
        ({"foreground_env": {"A": 1}}, r"option 'foreground_env' must map variable names"),
        ({"foreground_env": "A=1"}, r"'foreground_env'"),
        ({"background_env": {2: "b"}}, r"'background_env'"),
        ({"deadline_s": 0}, r"'deadline_s'"),
        ({"min_overlap": 2}, r"'min_overlap'"),
        ({"order": "x"}, r"option 'order' must be one of alone-first, alternate, random, got 'x'"),
        ({"order_seed": True}, r"option 'order_seed' must be an integer, got True"),
        (
            {"foreground_start": "early"},
            r"option 'foreground_start' must be one of after-warm-up, with-background, "
            r"got 'early'",
        ),
        ({"order_seed": 1.5}, r"'order_seed'"),
        ({"bogus": 1}, r"^option 'bogus' is unknown for scenario 'shared' \(known: .*order_seed"),
    ],
)  # fmt: skip
def test_shared_option_errors(options: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        shared.check_options(options)
