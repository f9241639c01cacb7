"""The suite's parts, each writing result records: kernels (bf16 peak, bandwidth, RNN), training
(runner arm vs raw arm, ratio, MFU), and the seed claims one host can test.

Reused from workloads/: the runner's own measurement process (``_measure``: the ``single``
scenario), the ``sharing`` and ``shared`` scenarios (called in this process; they start the
runner's measurement processes themselves), the ``kernel`` scenario's bandwidth with NUMA
affinity and its RNN kernels. Claim ids are those of workloads/reference/published-results.yaml.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.gpu.launch import Recorder, run_child
from benchmarks.gpu.plan import PRECISIONS, Case, Plan

CLAIMS = {
    "sharing": [
        "vmware_bitfusion_singularity/sharing_throughput",
        "vmware_bitfusion_singularity/sharing_completion",
    ],
    "shared": ["closer2018/shared"],
    "bandwidth": ["ibm_containers/bandwidth_numa"],
    "rnn": ["ibm_containers/rnn"],
    "mnist": [
        "vmware_vgpu_containers/mnist_container_vm",
        "vmware_vgpu_containers/virtualization_overhead",
    ],
}
# Concurrent jobs share one GPU: JAX must not grab 75 % of it, TensorFlow must grow on demand.
SHARE_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}


@dataclass
class Context:
    plan: Plan
    backends: list[str]
    parts: list[str]
    rec: Recorder
    deadline: float  # time.monotonic() after which no new measurement starts
    log: Callable[[str], None] = print
    peaks: dict[str, float] = field(default_factory=dict)  # backend -> bf16 TFLOP/s
    skipped: list[str] = field(default_factory=list)

    def time_left(self, what: str) -> bool:
        if time.monotonic() < self.deadline:
            return True
        self.skipped.append(what)
        return False


def _fail_fields(exc: BaseException) -> dict[str, Any]:
    return {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}


# ---- kernels: bf16 peak per backend, bandwidth, RNN -----------------------------------------


def kernels(ctx: Context) -> None:
    p = ctx.plan
    for i, backend in enumerate(ctx.backends):
        tasks: list[dict[str, Any]] = [{"kind": "peak", "framework": backend, "n": p.peak_n}]
        if i == 0 and "bandwidth" in ctx.parts:
            tasks.append(
                {
                    "kind": "bandwidth",
                    "options": p.bandwidth,
                    "warmup": 2,
                    "iters": p.bandwidth_iters,
                }
            )
        if i == 0 and "rnn" in ctx.parts:
            tasks.append(
                {
                    "kind": "rnn",
                    "shapes": [list(s) for s in p.rnn_shapes],
                    "cells": list(p.rnn_cells),
                    "mode": "train",
                    "warmup": 2,
                    "iters": p.rnn_iters,
                }
            )
        if not ctx.time_left(f"kernels ({backend})"):
            return
        ctx.log(f"kernels on {backend}: {', '.join(t['kind'] for t in tasks)}")
        res = run_child("kernels", {"tasks": tasks}, SHARE_ENV, p.timeout_s)
        outs = res.get("tasks") or [
            {"kind": t["kind"], "status": "failed", "error": res.get("error")} for t in tasks
        ]
        common = {"fingerprint": res.get("fingerprint") or {}, "elapsed_s": res.get("elapsed_s")}
        for out in outs:
            {"peak": _peak_record, "bandwidth": _bandwidth_record, "rnn": _rnn_record}[out["kind"]](
                ctx, backend, out, common
            )


def _peak_record(ctx: Context, backend: str, out: dict[str, Any], common: dict) -> None:
    r = out.get("result") or {}
    n = ctx.plan.peak_n
    metrics = {}
    if out["status"] == "ok":
        ctx.peaks[backend] = float(r["tflops"])
        metrics = {
            f"gemm_bf16_{n}.tflops": r["tflops"],
            f"gemm_bf16_{n}.time_per_call_s": r["time_per_call_s"],
        }
    ctx.rec.write(
        {**common, "status": out["status"], "error": out.get("error")},
        kind="kernel",
        experiment=f"peak-bf16-{backend}",
        model="gemm",
        scenario="kernel",
        steps=int(r.get("iters", 0)),
        metrics=metrics,
        params={"framework": backend, "n": n, "dtype": "bfloat16", **r},
    )


def _bandwidth_record(ctx: Context, backend: str, out: dict[str, Any], common: dict) -> None:
    fields = dict(out.get("result") or {})
    fields.update(common, status=out["status"], error=out.get("error"))
    ctx.rec.write(
        fields,
        kind="kernel",
        experiment="bandwidth-numa",
        model="bandwidth",
        scenario="kernel",
        steps=ctx.plan.bandwidth_iters,
        claims=CLAIMS["bandwidth"],
    )


def _rnn_record(ctx: Context, backend: str, out: dict[str, Any], common: dict) -> None:
    r = out.get("result") or {}
    metrics: dict[str, float] = {}
    by_shape: dict[tuple, dict[str, float]] = {}
    for row in r.get("results", []):
        metrics[f"{row['id']}.time_per_call_s"] = row["time_per_call_s"]
        metrics[f"{row['id']}.tflops"] = row["tflops"]
        s = row["shape"]
        cells = by_shape.setdefault((s["hidden"], s["batch"], s["timesteps"]), {})
        # a training step is the sum of its phases (forward, backward-data, -weights rows)
        cells[s["cell"]] = cells.get(s["cell"], 0.0) + row["time_per_call_s"]
    for (h, b, t), cells in by_shape.items():
        if "gru" in cells and "lstm" in cells:
            metrics[f"rnn_h{h}_b{b}_t{t}.gru_over_lstm_time_ratio"] = cells["gru"] / cells["lstm"]
    ctx.rec.write(
        {**common, "status": out["status"], "error": out.get("error")},
        kind="kernel",
        experiment="deepbench-rnn",
        model="rnn",
        scenario="kernel",
        steps=ctx.plan.rnn_iters,
        claims=CLAIMS["rnn"],
        metrics=metrics,
        params={"framework": r.get("framework"), "mode": "train", "results": r.get("results", [])},
    )


# ---- training: runner arm vs raw arm ---------------------------------------------------------


def _cv(values: list[float]) -> float | None:
    if len(values) < 2 or statistics.fmean(values) == 0:
        return None
    return statistics.stdev(values) / statistics.fmean(values)


def train(ctx: Context) -> None:
    p = ctx.plan
    for backend in ctx.backends:
        for case in p.train:
            for precision in p.precisions:
                for repeat in range(p.repeats):
                    if not ctx.time_left(f"train {case.label} {precision} {backend} r{repeat}"):
                        return
                    _train_pair(ctx, backend, case, precision, repeat)


def _train_pair(ctx: Context, backend: str, case: Case, precision: str, repeat: int) -> None:
    p = ctx.plan
    experiment = f"train-{precision}-{backend}"
    base = {
        "kind": "training",
        "model": case.model,
        "scenario": "single",
        "batch_size": case.batch,
        "global_batch": case.batch,
        "warmup": p.warmup,
        "steps": p.steps,
        "repeat": repeat,
    }
    common = {"precision": precision, "backend": backend, "image_size": case.image_size}
    peak = ctx.peaks.get(backend)
    ctx.log(f"train {case.label} {precision} on {backend}, repeat {repeat}: raw loop")
    raw = run_child(
        "raw",
        {
            "framework": backend,
            "model": case.model,
            "batch": case.batch,
            "image_size": case.image_size,
            "precision": precision,
            "warmup": p.warmup,
            "steps": p.steps,
            "seed": 1234 + repeat,
        },
        {"KERAS_BACKEND": backend},
        p.timeout_s,
    )
    macs = (raw.get("params") or {}).get("forward_macs_per_image")
    raw_ips = raw.get("images_per_sec") if raw.get("status") == "ok" else None

    def mfu(ips: float | None) -> dict[str, float]:
        if not (ips and macs and peak):
            return {}
        return {
            "mfu": 6.0 * macs * ips / (peak * 1e12),
            "train_tflops": 6.0 * macs * ips / 1e12,
            "peak_bf16_tflops": peak,
        }

    ctx.rec.write(
        raw,
        **{**base, "scenario": "raw-loop"},
        experiment=experiment,
        metrics=mfu(raw_ips),
        params={**common, "variant": f"raw-{backend}", "arm_kind": "raw"},
    )
    ctx.log(f"train {case.label} {precision} on {backend}, repeat {repeat}: runner")
    job = {
        "suite": ctx.rec.suite,
        "experiment": experiment,
        "model": case.model,
        "scenario": "single",
        "batch": case.batch,
        "steps": p.steps,
        "warmup": p.warmup,
        "repeat": repeat,
        "image_size": case.image_size,
        "backend": backend,
        "options": {"seed": 1234 + repeat},
        "timeout_s": p.timeout_s,
    }
    env = {"KERAS_BACKEND": backend, "GPULAB_PRECISION": PRECISIONS[precision] or ""}
    run = run_child("runner", job, env, p.timeout_s)
    ips = run.get("images_per_sec") if run.get("status") == "ok" else None
    metrics = mfu(ips)
    if ips and raw_ips:
        metrics["runner_over_raw_ratio"] = ips / raw_ips
        metrics["raw_images_per_sec"] = raw_ips
    if (cv := _cv(run.get("step_times_s") or [])) is not None:
        metrics["step_time_cv"] = cv
    ctx.rec.write(
        run,
        **base,
        experiment=experiment,
        metrics=metrics,
        params={
            **common,
            "variant": f"runner-{backend}",
            "arm_kind": "runner",
            "dtype_policy": PRECISIONS[precision] or "float32",
            "forward_macs_per_image": macs,
        },
    )


# ---- seed claims: sharing, shared, MNIST wall-clock -------------------------------------------


def _scenario_job(
    ctx: Context, scenario: str, case: Case, steps: int, options: dict, experiment: str
) -> Any:
    from workloads.scenarios import Job

    p = ctx.plan
    return Job(
        suite=ctx.rec.suite,
        experiment=experiment,
        model=case.model,
        scenario=scenario,
        batch=case.batch,
        steps=steps,
        warmup=min(p.warmup, 10),
        image_size=case.image_size,
        backend=ctx.backends[0],
        options=options,
        timeout_s=p.timeout_s * 3,
        launched_at=time.time(),
    )


def _run_scenario(ctx: Context, scenario: str, job: Any, claims: list[str]) -> None:
    import importlib

    started = time.time()
    try:
        fields = importlib.import_module(f"workloads.scenarios.{scenario}").run(job)
    except Exception as exc:
        fields = _fail_fields(exc)
    fields["elapsed_s"] = time.time() - started
    ctx.rec.write(
        fields,
        kind="training",
        experiment=job.experiment,
        model=job.model,
        scenario=scenario,
        batch_size=job.batch,
        warmup=job.warmup,
        steps=job.steps,
        claims=claims,
        params={"backend": job.backend, "image_size": job.image_size},
    )


def sharing(ctx: Context) -> None:
    p = ctx.plan
    if not ctx.time_left("sharing"):
        return
    ctx.log(f"sharing: {p.sharing_jobs} concurrent {p.sharing.label} jobs vs 1")
    job = _scenario_job(
        ctx,
        "sharing",
        p.sharing,
        p.sharing_steps,
        {"jobs": p.sharing_jobs, "env": SHARE_ENV},
        "sharing",
    )
    _run_scenario(ctx, "sharing", job, CLAIMS["sharing"])


def shared(ctx: Context) -> None:
    p = ctx.plan
    bg = p.shared_background
    for fg in p.shared_foreground:
        if not ctx.time_left(f"shared {fg.label}"):
            return
        ctx.log(f"shared: foreground {fg.label} alone, then beside background {bg.label}")
        opts = {
            "background_model": bg.model,
            "background_batch": bg.batch,
            "background_image_size": bg.image_size,
            "foreground_env": SHARE_ENV,
            "background_env": SHARE_ENV,
        }
        job = _scenario_job(ctx, "shared", fg, p.shared_steps, opts, "shared")
        _run_scenario(ctx, "shared", job, CLAIMS["shared"])


def mnist(ctx: Context) -> None:
    p = ctx.plan
    case = p.mnist
    if not ctx.time_left("mnist"):
        return
    ctx.log(f"MNIST CNN wall-clock: {case.label}, {p.mnist_steps} steps")
    job = {
        "suite": ctx.rec.suite,
        "experiment": "mnist-wallclock",
        "model": case.model,
        "scenario": "single",
        "batch": case.batch,
        "steps": p.mnist_steps,
        "warmup": min(p.warmup, 10),
        "repeat": 0,
        "image_size": case.image_size,
        "backend": ctx.backends[0],
        "options": {},
        "timeout_s": p.timeout_s,
    }
    run = run_child("runner", job, {"KERAS_BACKEND": ctx.backends[0]}, p.timeout_s)
    ctx.rec.write(
        run,
        kind="training",
        experiment="mnist-wallclock",
        model=case.model,
        scenario="single",
        batch_size=case.batch,
        global_batch=case.batch,
        warmup=job["warmup"],
        steps=p.mnist_steps,
        repeat=0,
        claims=CLAIMS["mnist"],
        params={"backend": ctx.backends[0], "image_size": case.image_size},
    )
