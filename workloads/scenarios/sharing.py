"""Scenario ``sharing``: N identical concurrent jobs against one (the Bitfusion study, seed 004).

First one job alone (the baseline: in the paper, one container with a full GPU); then N copies
of the same job started together (the paper: four containers with 25 % of a GPU each). The
record holds::

    images_per_sec                aggregate of the N concurrent jobs
    metrics.single_images_per_sec, aggregate_images_per_sec
    metrics.aggregate_throughput_ratio  aggregate / single (paper: about 3 for N = 4)
    metrics.completion_time_ratio slowest concurrent job's elapsed / single's elapsed
                                  (paper: 1.17, i.e. 17 % longer)
    metrics.job<i>_images_per_sec, job<i>_elapsed_s

Options: jobs (4), wrapper (argv prefix for each concurrent job, e.g. [bitfusion, run, -n, "1",
-p, "0.25", --]), baseline_wrapper (for the single job; default none), env (mapping added to
every job), deadline_s (900), plus the ``single`` options seed, learning_rate. Without a
``wrapper`` option, ``$GPULAB_SHARING_WRAPPER`` (a shell-quoted prefix) is used, so the
execution environment (e.g. Bitfusion) can set it and the suite stays unchanged.
"""

from __future__ import annotations

import os
import shlex
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workloads.errors import InputError
from workloads.scenarios import jobs

DEFAULTS: dict[str, Any] = {
    "jobs": 4,
    "wrapper": None,
    "baseline_wrapper": None,
    "env": {},
    "deadline_s": 900.0,
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
    dl = out["deadline_s"]
    if isinstance(dl, bool) or not isinstance(dl, int | float) or dl <= 0:
        raise InputError(f"option 'deadline_s' must be a number > 0, got {dl!r}")
    return out


def run(job: Any) -> dict[str, Any]:
    from workloads.scenarios.procs import ProcGroup

    opts = check_options(job.options)
    if "wrapper" not in job.options and os.environ.get("GPULAB_SHARING_WRAPPER"):
        opts["wrapper"] = shlex.split(os.environ["GPULAB_SHARING_WRAPPER"])
    n = int(opts["jobs"])
    deadline_s = min(float(opts["deadline_s"]), max(1.0, float(job.timeout_s) - 15.0))
    one = jobs.single_job(job)
    with (
        tempfile.TemporaryDirectory(prefix="gpulab-sharing-") as tmp,
        ProcGroup(Path(tmp)) as group,
    ):
        end = time.monotonic() + deadline_s
        job.on_step("single", 0, n + 1)
        base_p = jobs.start_job(group, "single", one, opts["baseline_wrapper"], opts["env"])
        base = jobs.finish(group, [base_p], end)[0]
        if base.get("status") != "ok":
            return {
                "status": "failed",
                "metrics": {},
                "params": {"jobs": n},
                "error": f"single (baseline) job: {base.get('error')}",
            }
        job.on_step("concurrent", 1, n + 1)
        started = time.time()
        procs = [
            jobs.start_job(group, f"job{i}", jobs.single_job(job), opts["wrapper"], opts["env"])
            for i in range(n)
        ]
        results = jobs.finish(group, procs, end)
        all_done = time.time() - started
    params: dict[str, Any] = {
        "jobs": n,
        "wrapper": opts["wrapper"],
        "single_params": base.get("params", {}),
    }
    bad = [
        (name, r)
        for name, r in (("single", base), *((f"job{i}", r) for i, r in enumerate(results)))
        if r.get("status") != "ok"
    ]
    if bad:
        return {
            "status": "failed",
            "params": params,
            "metrics": {},
            "error": "; ".join(f"{name}: {r.get('error')}" for name, r in bad),
        }
    single_ips, single_el = base["images_per_sec"], base["elapsed_s"]
    aggregate = sum(r["images_per_sec"] for r in results)
    slowest = max(r["elapsed_s"] for r in results)
    metrics = {
        "single_images_per_sec": single_ips,
        "single_elapsed_s": single_el,
        "aggregate_images_per_sec": aggregate,
        "aggregate_throughput_ratio": aggregate / single_ips,
        "completion_time_ratio": slowest / single_el,
        "concurrent_wall_s": all_done,
    }
    for i, r in enumerate(results):
        metrics[f"job{i}_images_per_sec"] = r["images_per_sec"]
        metrics[f"job{i}_elapsed_s"] = r["elapsed_s"]
    params["step_times_s_job0"] = results[0].get("step_times_s", [])
    return {
        "images_per_sec": aggregate,
        "step_times_s": base.get("step_times_s", []),
        "batch_size": job.batch,
        "global_batch": job.batch * n,
        "metrics": metrics,
        "params": params,
    }
