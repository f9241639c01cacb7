"""Scenario ``sharing``: N identical concurrent jobs against one (the Bitfusion study, seed 004).

First one job alone (the baseline: in the paper, one container with a full GPU); then N copies
of the same job started together (the paper: four containers with 25 % of a GPU each). The N
jobs wait at a start barrier after their warm-up (workloads.scenarios.barrier), so their timed
windows start together; each records its window in wall-clock time. The record holds::

    images_per_sec                aggregate of the N concurrent jobs: all their timed images
                                  over the union of their timed windows
    metrics.single_images_per_sec, aggregate_images_per_sec
    metrics.sum_of_job_rates      the sum of the jobs' own rates (for comparison only: it
                                  overstates the aggregate when the windows do not coincide)
    metrics.aggregate_throughput_ratio  aggregate / single (paper: about 3 for N = 4)
    metrics.completion_time_ratio slowest concurrent job's timed window / single's timed
                                  window (paper: 1.17, i.e. 17 % longer)
    metrics.window_union_s, window_together_s, window_overlap (together / union),
            window_start_spread_s
    metrics.single_elapsed_s, job<i>_elapsed_s, elapsed_ratio  process wall-clock (start,
                                  imports, compile, warm-up included), kept apart from the
                                  ratios above
    metrics.job<i>_images_per_sec, job<i>_timed_wall_s
    sync_every                    the baseline's K (auto or forced); the concurrent jobs use it
    startup_s, first_step_s       the slowest concurrent job's start-up and warm-up
    timed_s                       the union of the concurrent timed windows
    block_times_s                 job0's blocks (params.job_timings: every job's, and
                                  params.single_timing the baseline's)
    params.nvml_window            NVML's throttle counters over every job's timed window
                                  (the baseline's too): a throttle in any part throttles it

A result whose window_overlap is below ``min_overlap`` (default 0.8: at least 80 % of the
union had all N jobs running) is refused: status failed, the error says the overlap, and the
metrics are kept for inspection.

Options: jobs (4), wrapper (argv prefix for each concurrent job, e.g. [bitfusion, run, -n, "1",
-p, "0.25", --]), baseline_wrapper (for the single job; default none), env (mapping added to
every job), deadline_s (900: every job is killed at it), min_overlap (0.8), plus the
``single`` options seed, learning_rate. Without a ``wrapper`` option,
``$GPULAB_SHARING_WRAPPER`` (a shell-quoted prefix) is used, so the execution environment
(e.g. Bitfusion) can set it and the suite stays unchanged. The concurrent jobs run at least
one warm-up step (the barrier follows the last one).

Partitioning (workloads.partition): ``partition`` (``auto``, ``none``, ``memory``, ``mps``,
``wrapper``; default ``none``) and ``share`` (default 1 / jobs) choose how each concurrent job
gets its part of the GPU; ``params.partition`` records the mechanism chosen and what each job
applied (``params.job_partitions``). A mechanism that cannot be had here (MPS without its
daemon, a wrapper without a wrapper) is a ``skipped`` record naming why.
"""

from __future__ import annotations

import os
import shlex
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from workloads.errors import InputError
from workloads.options import fraction, positive_number
from workloads.scenarios import jobs
from workloads.scenarios.barrier import Barrier, window_stats

DEFAULTS: dict[str, Any] = {
    "jobs": 4,
    "wrapper": None,
    "baseline_wrapper": None,
    "env": {},
    "deadline_s": 900.0,
    "min_overlap": 0.8,
    "partition": "none",
    "share": None,
}


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    out = jobs.check_common(options, DEFAULTS, "sharing")
    n = out["jobs"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"option 'jobs' must be an integer >= 1, got {n!r}")
    out["wrapper"] = jobs.check_wrapper(out["wrapper"])
    out["baseline_wrapper"] = jobs.check_wrapper(out["baseline_wrapper"])
    env = out["env"]
    if not isinstance(env, dict) or not all(isinstance(x, str) for x in (*env, *env.values())):
        raise InputError(f"option 'env' must map variable names to strings, got {env!r}")
    positive_number(out, "deadline_s")
    fraction(out, "min_overlap")
    from workloads.partition import MECHANISMS

    if out["partition"] not in MECHANISMS:
        raise InputError(
            f"option 'partition' must be one of {', '.join(MECHANISMS)}, got {out['partition']!r}"
        )
    if out["share"] is None:
        out["share"] = 1.0 / n
    share = out["share"]
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise InputError(f"option 'share' must be a number > 0 and <= 1, got {share!r}")
    return out


def run(job: Any) -> dict[str, Any]:
    from workloads.scenarios.procs import ProcGroup

    opts = check_options(job.options)
    if "wrapper" not in job.options and os.environ.get("GPULAB_SHARING_WRAPPER"):
        opts["wrapper"] = shlex.split(os.environ["GPULAB_SHARING_WRAPPER"])
    n = int(opts["jobs"])
    deadline_s = min(float(opts["deadline_s"]), max(1.0, float(job.timeout_s) - 15.0))
    one = jobs.single_job(job)
    each = jobs.single_job(job, warmup=max(1, job.warmup))
    params: dict[str, Any] = {"jobs": n, "wrapper": opts["wrapper"]}
    from workloads.partition import choose

    try:
        mechanism, part_env = choose(opts["partition"], float(opts["share"]), opts["wrapper"])
    except ValueError as exc:
        return {"status": "skipped", "error": str(exc), "params": params, "metrics": {}}
    params["partition"] = {"asked": opts["partition"], "mechanism": mechanism}
    params["partition"]["share"] = float(opts["share"])
    with (
        tempfile.TemporaryDirectory(prefix="gpulab-sharing-") as tmp,
        ProcGroup(Path(tmp)) as group,
    ):
        end = time.monotonic() + deadline_s
        job.on_step("single", 0, n + 1)
        base_p = jobs.start_job(group, "single", one, opts["baseline_wrapper"], opts["env"])
        base = jobs.finish(group, [base_p], end)[0]
        if base.get("status") != "ok":
            return _failed(params, f"single (baseline) job: {base.get('error')}")
        # the concurrent jobs sync as often as the baseline did (its K, auto or not)
        each = replace(each, sync_every=base.get("sync_every") or each.sync_every)
        job.on_step("concurrent", 1, n + 1)
        with Barrier() as gate:
            starts = [
                partial(jobs.start_job, group, f"job{i}", each, opts["wrapper"]) for i in range(n)
            ]
            procs = gate.launch(starts, {**opts["env"], **part_env}, end)
            why = gate.wait_ready(procs, end)
            if why is not None:
                group.close()
                return _failed(params, f"concurrent jobs: {why}")
            gate.release(n)
            results = jobs.finish(group, procs, end)
    params["single_params"] = base.get("params", {})
    params["job_partitions"] = [(r.get("params") or {}).get("partition") for r in results]
    bad = [(f"job{i}", r) for i, r in enumerate(results) if r.get("status") != "ok"]
    if bad:
        return _failed(params, "; ".join(f"{name}: {r.get('error')}" for name, r in bad))
    return _measured(job, each, opts, params, base, results)


TIMING_KEYS = ("sync_every", "startup_s", "first_step_s", "timed_s", "block_times_s")


def _max(values: Any) -> float | None:
    nums = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return max(nums) if nums else None


def _failed(params: dict[str, Any], error: str) -> dict[str, Any]:
    return {"status": "failed", "params": params, "metrics": {}, "error": error}


def _window(r: dict[str, Any]) -> tuple[float, float] | None:
    w = (r.get("params") or {}).get("timed_window_unix")
    if isinstance(w, list) and len(w) == 2 and all(isinstance(x, int | float) for x in w):
        return float(w[0]), float(w[1])
    return None


def _measured(
    job: Any,
    each: Any,
    opts: dict[str, Any],
    params: dict[str, Any],
    base: dict[str, Any],
    results: list[dict[str, Any]],
) -> dict[str, Any]:
    n = len(results)
    windows = [_window(r) for r in results]
    if any(w is None for w in windows):
        return _failed(
            params, "a concurrent job recorded no timed window (params.timed_window_unix)"
        )
    ws = window_stats([w for w in windows if w is not None])
    single_ips = base["images_per_sec"]
    single_wall = base["metrics"]["timed_wall_s"]
    aggregate = each.batch * each.steps * n / ws.union_s
    slowest = max(r["metrics"]["timed_wall_s"] for r in results)
    metrics: dict[str, float] = {
        "single_images_per_sec": single_ips,
        "single_timed_wall_s": single_wall,
        "single_elapsed_s": base["elapsed_s"],
        "aggregate_images_per_sec": aggregate,
        "sum_of_job_rates": sum(r["images_per_sec"] for r in results),
        "aggregate_throughput_ratio": aggregate / single_ips,
        "completion_time_ratio": slowest / single_wall,
        "elapsed_ratio": max(r["elapsed_s"] for r in results) / base["elapsed_s"],
        "window_union_s": ws.union_s,
        "window_together_s": ws.together_s,
        "window_overlap": ws.overlap,
        "window_start_spread_s": ws.start_spread_s,
    }
    for i, r in enumerate(results):
        metrics[f"job{i}_images_per_sec"] = r["images_per_sec"]
        metrics[f"job{i}_timed_wall_s"] = r["metrics"]["timed_wall_s"]
        metrics[f"job{i}_elapsed_s"] = r["elapsed_s"]
    from workloads.fingerprint.throttle import merge_windows
    from workloads.timing import sync_mode_of

    params["min_overlap"] = opts["min_overlap"]
    params["concurrent_warmup"] = each.warmup
    params["timed_windows_unix"] = windows
    params["step_times_s_job0"] = results[0].get("step_times_s", [])
    params["single_timing"] = {k: base.get(k) for k in TIMING_KEYS}
    # how the run was asked to sync (the concurrent jobs ran at the baseline's K)
    params["timing"] = {
        "sync_every": results[0].get("sync_every"),
        "sync_mode": sync_mode_of(job.sync_every),
    }
    params["job_timings"] = [{k: r.get(k) for k in TIMING_KEYS} for r in results]
    parts = {"single": (base.get("params") or {}).get("nvml_window")}
    parts.update(
        {f"job{i}": (r.get("params") or {}).get("nvml_window") for i, r in enumerate(results)}
    )
    params["nvml_window"] = merge_windows(parts)
    out: dict[str, Any] = {
        "images_per_sec": aggregate,
        "step_times_s": base.get("step_times_s", []),
        "batch_size": job.batch,
        "global_batch": job.batch * n,
        "metrics": metrics,
        "params": params,
        # the concurrent run: the slowest job's start-up and warm-up, the union of the
        # windows (the aggregate's denominator), job0's blocks, the K they all used
        "startup_s": _max(r.get("startup_s") for r in results),
        "first_step_s": _max(r.get("first_step_s") for r in results),
        "timed_s": ws.union_s,
        "block_times_s": results[0].get("block_times_s") or [],
    }
    if isinstance(results[0].get("sync_every"), int):
        out["sync_every"] = results[0]["sync_every"]
    if ws.overlap < opts["min_overlap"]:
        out["status"] = "failed"
        out["error"] = (
            f"sharing: the {n} jobs' timed windows all overlap for {ws.together_s:.2f} s of "
            f"{ws.union_s:.2f} s (overlap {ws.overlap:.2f} < min_overlap "
            f"{opts['min_overlap']:g}): not a concurrent measurement"
        )
    return out
