"""Scenario ``shared``: a foreground job alone, then beside a background job (CLOSER fig. 10).

The foreground is the entry's model/batch/steps as a ``single`` measurement in its own
process. It runs once alone; then the background job (default AlexNet, batch 512, the paper's)
is started first on the same host and GPU, the foreground starts once the background has
finished its warm-up, and the background is killed when the foreground is done. With
``foreground_start: with-background`` the foreground starts beside the background instead and
waits after its warm-up at a start barrier (workloads.scenarios.barrier) until the background
has finished its warm-up: their start-ups overlap (seconds a unit where start-up is most of a
job, as on a CPU), its timed window is still against the background's training, and its
``elapsed_shared_s`` leaves the wait out. The record is
the foreground under contention, with the degradation against the alone run::

    metrics.images_per_sec_alone, images_per_sec_shared, images_per_sec_degradation
            (1 - shared / alone), timed_wall_alone_s, timed_wall_shared_s,
            elapsed_degradation (timed window shared / alone - 1: the paper's training time;
            interpreter start, imports and compile are not in it), elapsed_alone_s,
            elapsed_shared_s (process wall-clock, kept as their own fields),
            background_steps_during (the background's steps from the foreground's
            launch, or its release at the barrier, on), window_overlap (fraction
            of the foreground's timed window during which the background was running)

A result whose window_overlap is below ``min_overlap`` (0.8) is refused (status failed, the
metrics kept): the background stopped too early for the run to be "shared".

Options: background_model (alexnet), background_batch (512), background_image_size (the
model's full size), foreground_env / background_env (e.g. {CUDA_VISIBLE_DEVICES: "1"} to give
each instance its own GPU, CLOSER's setting), deadline_s (600: every job is killed at it),
min_overlap (0.8), foreground_start (``after-warm-up``, the paper's; ``with-background``),
order (``alone-first``; ``alternate``: alone first on even repeats, after
the shared run on odd ones; ``random``: seeded by order_seed and the repeat), order_seed (0),
input (``host``, the default: each instance is its own process with its own input pipeline
feeding synthetic batches from host memory, one copied to the device per step, so host-to-
device traffic happens; ``device``: tf_cnn's batch made once on the device, no copies),
plus the ``single`` options seed, learning_rate. The record carries ``params.run_order``
(``alone-first`` or ``shared-first``), the order option and seed, each instance's
CUDA_VISIBLE_DEVICES, input and process (``params.instances``). The foreground's second run
syncs with the device as often as its first (the same K); the record's timing fields
(``sync_every``, ``startup_s``, ``first_step_s``, ``timed_s``, ``block_times_s``) are the
shared run's, the alone run's are in ``params.alone_timing``; ``params.nvml_window`` holds
NVML's throttle counters over both foreground windows.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from workloads.errors import InputError
from workloads.fingerprint.throttle import merge_windows
from workloads.options import fraction, positive_number
from workloads.scenarios import jobs
from workloads.scenarios.barrier import Barrier

TIMING_KEYS = ("sync_every", "startup_s", "first_step_s", "timed_s", "block_times_s")
DEFAULTS: dict[str, Any] = {
    "background_model": "alexnet",
    "background_batch": 512,
    "background_image_size": None,
    "foreground_env": {},
    "background_env": {},
    "deadline_s": 600.0,
    "min_overlap": 0.8,
    "order": "alone-first",
    "order_seed": 0,
    "input": "host",
    "foreground_start": "after-warm-up",
}
INPUTS = ("host", "device")
FOREGROUND_STARTS = ("after-warm-up", "with-background")
ORDERS = ("alone-first", "alternate", "random")


def alone_first(order: str, repeat: int, seed: int) -> bool:
    """Whether the alone run goes before the shared one in repetition ``repeat``."""
    if order == "alternate":
        return repeat % 2 == 0
    if order == "random":
        import random

        return random.Random(f"{seed}:{repeat}").random() < 0.5
    return True


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    out = jobs.check_common(options, DEFAULTS, "shared")
    from workloads.models import MODELS

    if out["background_model"] not in MODELS:
        raise InputError(
            f"option 'background_model' {out['background_model']!r} is not one of "
            f"{', '.join(sorted(MODELS))}"
        )
    for key in ("background_batch", "background_image_size"):
        v = out[key]
        if v is None and key == "background_image_size":
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"option {key!r} must be an integer >= 1, got {v!r}")
    for key in ("foreground_env", "background_env"):
        v = out[key]
        if not isinstance(v, dict) or not all(isinstance(x, str) for x in (*v, *v.values())):
            raise InputError(f"option {key!r} must map variable names to strings, got {v!r}")
    positive_number(out, "deadline_s")
    fraction(out, "min_overlap")
    if out["order"] not in ORDERS:
        raise InputError(f"option 'order' must be one of {', '.join(ORDERS)}, got {out['order']!r}")
    seed = out["order_seed"]
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"option 'order_seed' must be an integer, got {seed!r}")
    if out["foreground_start"] not in FOREGROUND_STARTS:
        raise InputError(
            f"option 'foreground_start' must be one of {', '.join(FOREGROUND_STARTS)}, "
            f"got {out['foreground_start']!r}"
        )
    if out["input"] not in INPUTS:
        raise InputError(f"option 'input' must be one of {', '.join(INPUTS)}, got {out['input']!r}")
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _last_write(log: Path) -> float:
    try:
        return log.stat().st_mtime
    except OSError:
        return 0.0


def _overlap(shared: dict[str, Any], bg_last: float) -> float:
    """Fraction of the foreground's timed window before the background's last sign of life."""
    w = (shared.get("params") or {}).get("timed_window_unix")
    if not (isinstance(w, list) and len(w) == 2):
        return 0.0
    start, end = float(w[0]), float(w[1])
    if end <= start:
        return 0.0
    return max(0.0, min(1.0, (bg_last - start) / (end - start)))


def _after_warm_up(
    group: Any, bg: Any, fg: Any, opts: Mapping[str, Any], end: float
) -> tuple[dict[str, Any] | None, int]:
    """The paper's way: the foreground is launched once the background is in its timed
    steps. (its result or None if the background never got there, background steps before)"""
    if not jobs.wait_timed(bg, end):
        return None, 0
    bg_before = len(jobs.protocol(bg)[0])
    shared_p = jobs.start_job(group, "shared", fg, env=opts["foreground_env"])
    return jobs.finish(group, [shared_p], end)[0], bg_before


def _beside(
    group: Any, bg: Any, fg: Any, opts: Mapping[str, Any], end: float
) -> tuple[dict[str, Any] | None, int]:
    """``foreground_start: with-background``: the foreground is launched with the background
    (their interpreter starts, imports and compiles overlap: seconds a unit where start-up is
    most of a job) and waits after its warm-up at a start barrier until the background is in
    its timed steps, so its timed window runs against the background's training as before.
    Its elapsed time leaves the wait out: ``elapsed_s`` minus ``params.barrier_wait_s``."""
    with Barrier() as gate:
        [shared_p] = gate.launch(
            [lambda env, fds: jobs.start_job(group, "shared", fg, env=env, pass_fds=fds)],
            opts["foreground_env"],
            end,
        )
        if not jobs.wait_timed(bg, end):
            return None, 0
        # a foreground that exits before the barrier, or is not warm by the deadline, is
        # failed by finish() below with the others' way of saying so
        ready = gate.wait_ready([shared_p], end) is None
        bg_before = len(jobs.protocol(bg)[0])
        if ready:
            gate.release(1)
        shared = jobs.finish(group, [shared_p], end)[0]
    wait = (shared.get("params") or {}).get("barrier_wait_s")
    if isinstance(shared.get("elapsed_s"), int | float) and isinstance(wait, int | float):
        shared["elapsed_s"] = shared["elapsed_s"] - wait
    return shared, bg_before


def run(job: Any) -> dict[str, Any]:
    from workloads.scenarios.procs import ProcGroup
    from workloads.timing import sync_mode_of

    opts = check_options(job.options)
    deadline_s = min(float(opts["deadline_s"]), max(1.0, float(job.timeout_s) - 15.0))
    own_input = {"input": opts["input"]} if job.data == "synthetic" else {}
    fg_job = jobs.single_job(job)
    fg_job.options.update(own_input)
    bg_job = jobs.single_job(
        job,
        model=opts["background_model"],
        batch=opts["background_batch"],
        image_size=opts["background_image_size"],
        steps=100_000,
        warmup=max(1, min(job.warmup, 10)),
    )
    bg_job.options.update(own_input)
    with tempfile.TemporaryDirectory(prefix="gpulab-shared-") as tmp, ProcGroup(Path(tmp)) as group:
        end = time.monotonic() + deadline_s
        first = alone_first(opts["order"], job.repeat, opts["order_seed"])

        fg = [fg_job]  # the foreground after its first run: the second syncs as often

        def same_k(result: dict[str, Any]) -> None:
            if isinstance(result.get("sync_every"), int):
                fg[0] = replace(fg[0], sync_every=result["sync_every"])

        def run_alone() -> dict[str, Any]:
            job.on_step("alone", 0, 2)
            alone_p = jobs.start_job(group, "alone", fg[0], env=opts["foreground_env"])
            return jobs.finish(group, [alone_p], end)[0]

        alone: dict[str, Any] = run_alone() if first else {}
        same_k(alone)
        job.on_step("background", 1, 2)
        bg = jobs.start_job(group, "background", bg_job, env=opts["background_env"])
        if opts["foreground_start"] == "with-background":
            shared, bg_before = _beside(group, bg, fg[0], opts, end)
        else:
            shared, bg_before = _after_warm_up(group, bg, fg[0], opts, end)
        if shared is None:
            group.close()
            return {
                "status": "failed",
                "error": f"background job never reached its timed steps: {bg.tail()}",
                "metrics": {},
                "params": {"alone": alone},
            }
        same_k(shared)
        bg_during = len(jobs.protocol(bg)[0]) - bg_before
        bg_alive = bg.popen.poll() is None
        bg_last = time.time() if bg_alive else _last_write(bg.log)
        if not first:
            group.kill(bg)  # the background is gone before the alone run
            alone = run_alone()
        group.close()
    failed = [n for n, r in (("alone", alone), ("shared", shared)) if r.get("status") != "ok"]
    params = {
        "background_model": bg_job.model,
        "background_batch": bg_job.batch,
        "background_image_size": bg_job.image_size,
        "background_ran_throughout": bg_alive,
        "run_order": "alone-first" if first else "shared-first",
        "order": opts["order"],
        "order_seed": opts["order_seed"],
        "foreground_cuda_visible_devices": opts["foreground_env"].get("CUDA_VISIBLE_DEVICES"),
        "background_cuda_visible_devices": opts["background_env"].get("CUDA_VISIBLE_DEVICES"),
        "alone_params": alone.get("params", {}),
        "alone_step_times_s": alone.get("step_times_s", []),
        "alone_timing": {k: alone.get(k) for k in TIMING_KEYS},
        # separate instances: own processes, own input pipelines (host memory by default)
        "instances": {
            "foreground": {
                "input": fg_job.options.get("input", "device"),
                "pids": [
                    (alone.get("params") or {}).get("pid"),
                    (shared.get("params") or {}).get("pid"),
                ],
            },
            "background": {"input": bg_job.options.get("input", "device"), "pid": bg.pid},
        },
    }
    if failed:
        errs = "; ".join(
            f"{n}: {r.get('error')}"
            for n, r in (("alone", alone), ("shared", shared))
            if n in failed
        )
        return {"status": "failed", "error": errs, "params": params, "metrics": {}}
    a_ips, s_ips = alone["images_per_sec"], shared["images_per_sec"]
    a_wall, s_wall = alone["metrics"]["timed_wall_s"], shared["metrics"]["timed_wall_s"]
    overlap = _overlap(shared, bg_last)
    metrics = {
        "images_per_sec_alone": a_ips,
        "images_per_sec_shared": s_ips,
        "timed_wall_alone_s": a_wall,
        "timed_wall_shared_s": s_wall,
        "elapsed_alone_s": alone["elapsed_s"],
        "elapsed_shared_s": shared["elapsed_s"],
        "background_steps_during": float(bg_during),
        "window_overlap": overlap,
    }
    if (r := _ratio(s_ips, a_ips)) is not None:
        metrics["images_per_sec_degradation"] = 1.0 - r
    if (r := _ratio(s_wall, a_wall)) is not None:
        metrics["elapsed_degradation"] = r - 1.0
    params.update(shared.get("params", {}))
    params["min_overlap"] = opts["min_overlap"]
    params["nvml_window"] = merge_windows(
        {
            n: (r.get("params") or {}).get("nvml_window")
            for n, r in (("alone", alone), ("shared", shared))
        }
    )
    timing = {k: shared[k] for k in TIMING_KEYS if k in shared}
    # how the run was asked to sync (the foreground's second run used its first run's K)
    params["timing"] = {
        **(params.get("timing") or {}),
        "sync_every": shared.get("sync_every"),
        "sync_mode": sync_mode_of(job.sync_every),
    }
    if overlap < opts["min_overlap"]:
        return {
            "status": "failed",
            "error": (
                f"shared: the background ran for {overlap:.2f} of the foreground's timed window "
                f"(< min_overlap {opts['min_overlap']:g}): not a shared measurement"
            ),
            "metrics": metrics,
            "params": params,
            **timing,
        }
    return {
        "images_per_sec": s_ips,
        "step_times_s": shared.get("step_times_s", []),
        "batch_size": job.batch,
        "global_batch": job.batch,
        "metrics": metrics,
        "params": params,
        **timing,
    }
