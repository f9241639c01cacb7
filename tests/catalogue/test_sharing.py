"""Scenarios shared and sharing on the CPU: real training jobs in child processes.

The window statistics and the start barrier are also tested on their own (plain processes,
known windows), so the refusal rules do not depend on how busy the CPU is.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pytest

from workloads.errors import InputError
from workloads.records import make_record
from workloads.scenarios import Job, shared, sharing
from workloads.scenarios.barrier import Barrier, window_stats
from workloads.scenarios.procs import ProcGroup


def _job(scenario: str, **options: object) -> Job:
    return Job(
        suite="t",
        experiment=scenario,
        model="mnist_cnn",
        scenario=scenario,
        batch=32,
        steps=8,
        warmup=1,
        # raw-pixel synthetic images (mean 127): at the default rate a few steps of SGD diverge now
        # and then (a NaN loss fails the record); the rate does not change what is timed
        options={"learning_rate": 1e-4, **options},
        timeout_s=300,
    )


def _record(fields: dict, scenario: str) -> dict:
    return make_record(
        run_id="r", suite="t", experiment=scenario, model="mnist_cnn", scenario=scenario, **fields
    )


@pytest.mark.tf
@pytest.mark.slow
def test_shared_foreground_alone_then_beside_a_background_job() -> None:
    """Order alternated: repeat 1 runs the shared measurement first, then the alone one
    (after the background is stopped); each instance's CUDA_VISIBLE_DEVICES recorded. The
    foreground starts with the background and waits at the barrier until it is warm (the real
    child keeps the wait, which the elapsed time leaves out)."""
    job = _job(
        "shared",
        background_model="mnist_cnn",
        background_batch=64,
        order="alternate",
        foreground_start="with-background",
        foreground_env={"CUDA_VISIBLE_DEVICES": ""},
        background_env={"CUDA_VISIBLE_DEVICES": ""},
    )
    job.repeat = 1
    rec = _record(shared.run(job), "shared")
    assert rec["status"] == "ok", rec.get("error")
    assert rec["params"]["run_order"] == "shared-first" and rec["params"]["order"] == "alternate"
    assert rec["params"]["background_cuda_visible_devices"] == ""
    m = rec["metrics"]
    assert m["images_per_sec_alone"] > 0 and m["images_per_sec_shared"] > 0
    assert rec["images_per_sec"] == m["images_per_sec_shared"]
    assert m["images_per_sec_degradation"] == pytest.approx(
        1 - m["images_per_sec_shared"] / m["images_per_sec_alone"]
    )
    # degradation over the timed windows; the processes' elapsed_s kept apart
    assert m["elapsed_degradation"] == pytest.approx(
        m["timed_wall_shared_s"] / m["timed_wall_alone_s"] - 1
    )
    assert m["elapsed_shared_s"] > m["timed_wall_shared_s"]
    assert 0.0 <= rec["params"]["barrier_wait_s"] < m["elapsed_shared_s"]
    assert m["window_overlap"] == 1.0
    # the background was running (and stepping) for the whole foreground run
    assert rec["params"]["background_ran_throughout"] is True
    assert m["background_steps_during"] >= 1
    assert rec["params"]["background_model"] == "mnist_cnn"
    assert len(rec["step_times_s"]) == 8
    # separate instances, each with its own input pipeline from host memory
    inst = rec["params"]["instances"]
    assert inst["foreground"]["input"] == inst["background"]["input"] == "host"
    assert len(set(inst["foreground"]["pids"]) | {inst["background"]["pid"]}) == 3
    assert "host memory" in rec["params"]["input_overlap"]
    assert "host memory" in rec["params"]["alone_params"]["input_overlap"]
    # both foreground runs at one K (the first run's); the record's timing is the shared run's
    assert rec["params"]["alone_timing"]["sync_every"] == rec["sync_every"]
    assert rec["timed_s"] == m["timed_wall_shared_s"]
    assert rec["params"]["alone_timing"]["timed_s"] == m["timed_wall_alone_s"]
    assert set(rec["params"]["nvml_window"]["parts"]) == {"alone", "shared"}


@pytest.mark.tf
@pytest.mark.slow
def test_sharing_jobs_start_together_and_the_aggregate_is_over_the_union() -> None:
    rec = _record(sharing.run(_job("sharing", jobs=2, min_overlap=0.0)), "sharing")
    assert rec["status"] == "ok", rec.get("error")
    m, p = rec["metrics"], rec["params"]
    (s0, e0), (s1, e1) = p["timed_windows_unix"]
    # the barrier: both timed windows start together (a slow 2-core CPU: within 0.3 s)
    assert m["window_start_spread_s"] == pytest.approx(abs(s0 - s1)) and abs(s0 - s1) < 0.3
    union = max(e0, e1) - min(s0, s1)
    assert m["window_union_s"] == pytest.approx(union)
    assert m["window_together_s"] == pytest.approx(min(e0, e1) - max(s0, s1))
    assert m["window_overlap"] == pytest.approx(m["window_together_s"] / union)
    # all timed images over the union window, not the sum of the jobs' own rates
    assert m["aggregate_images_per_sec"] == pytest.approx(2 * 32 * 8 / union)
    assert m["sum_of_job_rates"] == pytest.approx(
        m["job0_images_per_sec"] + m["job1_images_per_sec"]
    )
    assert m["aggregate_images_per_sec"] <= m["sum_of_job_rates"] * (1 + 1e-9)
    assert rec["images_per_sec"] == m["aggregate_images_per_sec"]
    assert m["aggregate_throughput_ratio"] == pytest.approx(
        m["aggregate_images_per_sec"] / m["single_images_per_sec"]
    )
    # completion over the timed windows; elapsed_s (imports, compile) is its own ratio
    assert m["completion_time_ratio"] == pytest.approx(
        max(m["job0_timed_wall_s"], m["job1_timed_wall_s"]) / m["single_timed_wall_s"]
    )
    assert m["elapsed_ratio"] == pytest.approx(
        max(m["job0_elapsed_s"], m["job1_elapsed_s"]) / m["single_elapsed_s"]
    )
    assert m["job0_elapsed_s"] > m["job0_timed_wall_s"]
    assert rec["global_batch"] == 64
    # the concurrent jobs sync as often as the baseline did; timed_s is the union
    k = rec["params"]["single_timing"]["sync_every"]
    assert rec["sync_every"] == k and [t["sync_every"] for t in p["job_timings"]] == [k, k]
    assert rec["timed_s"] == m["window_union_s"]
    assert rec["first_step_s"] == max(t["first_step_s"] for t in p["job_timings"])


def test_window_stats_union_together_and_overlap() -> None:
    w = window_stats([(0.0, 4.0), (1.0, 3.0), (2.0, 5.0)])
    assert (w.union_s, w.together_s, w.start_spread_s) == (5.0, 1.0, 2.0)
    assert w.overlap == pytest.approx(0.2)
    gap = window_stats([(0.0, 1.0), (2.0, 3.0)])  # a gap is not in the union
    assert (gap.union_s, gap.together_s, gap.overlap) == (2.0, 0.0, 0.0)
    assert window_stats([(1.0, 2.0), (1.0, 2.0)]).overlap == 1.0
    with pytest.raises(ValueError):
        window_stats([(2.0, 1.0)])


def test_sharing_result_below_min_overlap_is_refused() -> None:
    """Known windows: overlap 0.2 against the default 0.8 gives a failed record naming it."""
    base = {"images_per_sec": 100.0, "elapsed_s": 10.0, "metrics": {"timed_wall_s": 1.0}}
    results = [
        {
            "images_per_sec": 80.0,
            "elapsed_s": 11.0,
            "metrics": {"timed_wall_s": t},
            "params": {"timed_window_unix": [s, s + t]},
        }
        for s, t in ((0.0, 4.0), (1.0, 2.0), (2.0, 3.0))
    ]
    job = _job("sharing", jobs=3)
    opts = sharing.check_options(job.options)
    assert opts["min_overlap"] == 0.8
    out = sharing._measured(job, job, opts, {"jobs": 3}, base, results)
    assert out["status"] == "failed"
    assert "overlap 0.20 < min_overlap 0.8" in out["error"]
    assert out["metrics"]["aggregate_images_per_sec"] == pytest.approx(3 * 32 * 8 / 5.0)
    opts["min_overlap"] = 0.1
    assert "status" not in sharing._measured(job, job, opts, {"jobs": 3}, base, results)


CHILD = """
import sys, time
from workloads.scenarios.barrier import wait_in_child
time.sleep(float(sys.argv[1]))
wait_in_child()
print(repr(time.time()), flush=True)
"""


def test_barrier_releases_all_children_together() -> None:
    """Children that get ready 0 s, 0.5 s and 1 s apart all leave the barrier at once."""
    with tempfile.TemporaryDirectory() as tmp, ProcGroup(Path(tmp)) as group:
        gate = Barrier()
        try:
            procs = [
                group.start(
                    f"c{i}",
                    [sys.executable, "-c", CHILD, str(0.5 * i)],
                    gate.env(60),
                    pass_fds=gate.fds,
                )
                for i in range(3)
            ]
            gate.children_started()
            assert gate.wait_ready(procs, time.monotonic() + 60) is None
            time.sleep(0.3)  # all three are waiting now: none may leave before the release
            before = time.time()
            gate.release(3)
            assert group.wait(procs, time.monotonic() + 30)
        finally:
            gate.close()
        left = [float(p.log.read_text().split()[-1]) for p in procs]
    assert all(0 <= t - before < 0.5 for t in left), [t - before for t in left]
    assert max(left) - min(left) < 0.2


def test_barrier_reports_a_child_that_dies_before_it() -> None:
    with tempfile.TemporaryDirectory() as tmp, ProcGroup(Path(tmp)) as group:
        gate = Barrier()
        try:
            ok = group.start(
                "ok", [sys.executable, "-c", CHILD, "0"], gate.env(60), pass_fds=gate.fds
            )
            bad = group.start(
                "bad",
                [sys.executable, "-c", "raise SystemExit(3)"],
                gate.env(60),
                pass_fds=gate.fds,
            )
            gate.children_started()
            why = gate.wait_ready([ok, bad], time.monotonic() + 60)
        finally:
            gate.close()
    assert why is not None and "bad exited 3 before the start barrier" in why
    assert not any(p.popen.poll() is None for p in (ok, bad))  # the group stopped both


def test_sharing_wrapper_that_fails_is_a_failed_record() -> None:
    fields = sharing.run(_job("sharing", jobs=1, baseline_wrapper=["/bin/false"]))
    assert fields["status"] == "failed" and "baseline" in fields["error"]
    assert "exited 1" in fields["error"]


def test_shared_order_alternates_and_random_is_seeded() -> None:
    assert [shared.alone_first("alternate", r, 0) for r in range(4)] == [True, False, True, False]
    assert all(shared.alone_first("alone-first", r, 0) for r in range(3))
    draws = [shared.alone_first("random", r, 7) for r in range(40)]
    assert draws == [shared.alone_first("random", r, 7) for r in range(40)]
    assert 5 < sum(draws) < 35  # both orders occur


def test_partition_mechanisms_and_their_absence(monkeypatch: pytest.MonkeyPatch) -> None:
    from workloads import partition

    monkeypatch.setattr(partition, "mps_available", lambda: False)
    assert partition.choose("none", 0.25, None) == ("none", {})
    mech, env = partition.choose("auto", 0.25, None)
    assert mech == "memory" and env["GPULAB_GPU_SHARE"] == "0.25"
    assert env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.250"
    assert partition.choose("auto", 0.25, ["bitfusion", "run", "--"])[0] == "wrapper"
    with pytest.raises(ValueError, match="MPS control daemon"):
        partition.choose("mps", 0.25, None)
    with pytest.raises(ValueError, match="needs a wrapper"):
        partition.choose("wrapper", 0.25, None)
    monkeypatch.setattr(partition, "mps_available", lambda: True)
    mech, env = partition.choose("auto", 0.25, None)
    assert mech == "mps" and env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"


def test_partition_in_a_child_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from workloads import partition

    monkeypatch.delenv(partition.SHARE_ENV, raising=False)
    assert partition.apply_in_child("tensorflow") is None
    monkeypatch.setenv(partition.SHARE_ENV, "0.25")
    monkeypatch.setenv(partition.MECHANISM_ENV, "memory")
    monkeypatch.setattr(partition, "_gpu_memory_mib", lambda: [])
    info = partition.apply_in_child("tensorflow")
    assert info == {
        "mechanism": "memory",
        "share": 0.25,
        "mps_active_thread_percentage": None,
        "memory_cap": "not applied: no GPU visible",
    }


def test_sharing_mps_without_its_daemon_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    from workloads import partition

    monkeypatch.setattr(partition, "mps_available", lambda: False)
    fields = sharing.run(_job("sharing", jobs=2, partition="mps"))
    assert fields["status"] == "skipped" and "MPS control daemon" in fields["error"]


@pytest.mark.parametrize(
    ("check", "options", "match"),
    [
        (shared.check_options, {"background_model": "bert"}, "background_model"),
        (shared.check_options, {"background_batch": 0}, "background_batch"),
        (shared.check_options, {"background_env": {"A": 1}}, "background_env"),
        (shared.check_options, {"jobs": 2}, "'jobs'"),
        (sharing.check_options, {"jobs": 0}, "'jobs'"),
        (sharing.check_options, {"wrapper": "bitfusion run"}, "'wrapper'"),
        (sharing.check_options, {"deadline_s": 0}, "'deadline_s'"),
        (sharing.check_options, {"min_overlap": 1.5}, "'min_overlap'"),
        (shared.check_options, {"min_overlap": -0.1}, "'min_overlap'"),
    ],
)
def test_option_errors(check, options: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        check(options)
