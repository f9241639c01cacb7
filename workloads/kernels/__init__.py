"""DeepBench-style kernels as the ``kernel`` scenario (IBM containers study, seed 003).

A suite entry names the kernel as its ``model`` (``gemm``, ``conv``, ``rnn``, ``allreduce``,
``bandwidth``); ``warmup`` calls are excluded and ``steps`` calls are timed per shape;
``options`` choose the shapes::

    sizes: tiny | deepbench-small | deepbench   (default tiny; deepbench = the whole training set)
    family: square | resnet | lstm | ...        (a row group of workloads.kernels.shapes)
    mode: train | forward                       (conv and rnn; default train: forward,
                                                 backward-data, backward-weights timed apart)
    iterations: deepbench | steps               (default deepbench: gemm 400, conv 300, rnn 100,
                                                 all-reduce 10,000/1,000 per size; steps: the
                                                 entry's steps)
    cpu_scale: 1.0                              (0 < x <= 1: iterations x this when the kernel
                                                 runs on a CPU; at least 1)
    loop: compiled | python                     (compiled: calls looped inside one compiled
                                                 function; python: one dispatch per call)
    devices: 2                                  (allreduce: local devices)
    directions: [h2d, d2h]                      (bandwidth)
    affinities: [none, local, remote]           (bandwidth: CPU pinning vs the GPU's NUMA node)
    numactl: auto | off                         (bandwidth: each affinity in a fresh process
                                                 under numactl --cpunodebind --membind)

One record (kind ``kernel``) per entry: ``metrics`` has ``<shape id>.time_per_call_s`` and
``<shape id>.tflops`` (or ``.gbps``) for every shape (and phase) plus totals; ``params.results``
lists the shapes with their numbers, ``params.shape_set`` says full or subset (with counts),
``params.iterations`` how the call counts were chosen, ``params.nvml_window`` NVML's throttle
counters around the whole set. ``block_times_s`` holds each shape's timed calls (one host
sync after them), ``timed_s`` their sum, ``startup_s`` the launch to the first call.
Backends: GEMM and conv run on TensorFlow and JAX; RNN and all-reduce need TensorFlow;
bandwidth copies with PyTorch (CUDA), TensorFlow or the host. A kernel the backend cannot run
is a ``skipped`` record with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from workloads.errors import InputError
from workloads.options import with_defaults

KERNELS = ("gemm", "conv", "rnn", "allreduce", "bandwidth")
SIZES = ("tiny", "deepbench-small", "deepbench")
AFFINITIES = ("none", "local", "remote")
DIRECTIONS = ("h2d", "d2h")
# What each backend runs; the rest is a skipped record with NEEDS_TF as the reason.
BACKEND_KERNELS = {
    "tensorflow": KERNELS,
    "jax": ("gemm", "conv", "bandwidth"),
    "torch": ("bandwidth",),
}
NEEDS_TF = (
    "kernel {kernel!r} is implemented on TensorFlow{also} only; backend {backend!r} cannot run "
    "it, so it is skipped (run this entry with --keras-backend tensorflow)"
)


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    defaults = {
        "sizes": "tiny",
        "mode": "train",
        "devices": 2,
        "directions": ["h2d", "d2h"],
        "affinities": ["none", "local"],
        "iterations": "deepbench",
        "cpu_scale": 1.0,
        "loop": "compiled",
        "numactl": "auto",
    }
    out = with_defaults(options, defaults, "kernel", also=("family",))
    if out["sizes"] not in SIZES:
        raise InputError(f"option 'sizes' must be one of {', '.join(SIZES)}, got {out['sizes']!r}")
    if "family" in out and not isinstance(out["family"], str):
        raise InputError(f"option 'family' must be a string, got {out['family']!r}")
    if out["mode"] not in ("train", "forward"):
        raise InputError(f"option 'mode' must be train or forward, got {out['mode']!r}")
    for key, allowed in (
        ("iterations", ("deepbench", "steps")),
        ("loop", ("compiled", "python")),
        ("numactl", ("auto", "off")),
    ):
        if out[key] not in allowed:
            raise InputError(
                f"option {key!r} must be one of {', '.join(allowed)}, got {out[key]!r}"
            )
    scale = out["cpu_scale"]
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not 0 < scale <= 1:
        raise InputError(f"option 'cpu_scale' must be a number > 0 and <= 1, got {scale!r}")
    dev = out["devices"]
    if isinstance(dev, bool) or not isinstance(dev, int) or dev < 1:
        raise InputError(f"option 'devices' must be an integer >= 1, got {dev!r}")
    lists: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("directions", DIRECTIONS),
        ("affinities", AFFINITIES),
    )
    for key, allowed_list in lists:
        vals = out[key]
        if not isinstance(vals, list) or not vals or any(v not in allowed_list for v in vals):
            raise InputError(
                f"option {key!r} must be a non-empty list of {', '.join(allowed_list)}, "
                f"got {vals!r}"
            )
    return out


def model_names() -> tuple[str, ...]:
    return KERNELS


def shape_id(result: Any) -> str:
    s = result.shape
    phase = getattr(result, "phase", None)
    tail = f"_{phase}" if phase and phase != "forward" else ""
    if result.kernel == "gemm":
        return (
            f"gemm_{s['m']}x{s['n']}x{s['k']}"
            + ("_at" if s["a_t"] else "")
            + ("_bt" if s["b_t"] else "")
        )
    if result.kernel == "conv":
        return (
            f"conv_{s['w']}x{s['h']}x{s['c']}_n{s['n']}_k{s['k']}_{s['r']}x{s['s']}"
            f"_s{s['stride_h']}{tail}"
        )
    if result.kernel == "rnn":
        return f"rnn_{s['cell']}_h{s['hidden']}_b{s['batch']}_t{s['timesteps']}{tail}"
    if result.kernel == "allreduce":
        return f"allreduce_{s['elements']}x{s['devices']}"
    return f"bandwidth_{s['direction']}_{s['affinity']}_{s['bytes']}"


class Plan:
    """How many calls each shape gets: DeepBench's counts or the entry's steps, x cpu_scale
    on a CPU (at least 1)."""

    def __init__(self, kernel: str, opts: Mapping[str, Any], steps: int, on_cpu: bool) -> None:
        self.kernel, self.opts, self.steps, self.on_cpu = kernel, opts, steps, on_cpu

    def iters(self, row: Any) -> int:
        from workloads.kernels.shapes import deepbench_iterations

        base = self.steps
        if self.opts["iterations"] == "deepbench":
            base = deepbench_iterations(self.kernel, row)
        scale = float(self.opts["cpu_scale"]) if self.on_cpu else 1.0
        return max(1, round(base * scale))

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.opts["iterations"],
            "cpu_scale": float(self.opts["cpu_scale"]),
            "scaled": self.on_cpu and float(self.opts["cpu_scale"]) < 1,
            "loop": self.opts["loop"],
        }


def _on_cpu(backend: str) -> bool:
    if backend == "jax":
        import jax

        return bool(jax.devices()[0].platform == "cpu")
    if backend == "tensorflow":
        import tensorflow as tf

        return not tf.config.list_logical_devices("GPU")
    return True


def measure(
    kernel: str, options: Mapping[str, Any], warmup: int, steps: int, backend: str = "tensorflow"
) -> tuple[list[Any], Plan]:
    """Run every selected shape of ``kernel``: (KernelResult rows, the iteration plan)."""
    from workloads.kernels import comm, shapes

    opts = check_options(options)
    rows = shapes.select(kernel, opts["sizes"], opts.get("family"))
    plan = Plan(kernel, opts, steps, kernel != "bandwidth" and _on_cpu(backend))
    loop, mode = opts["loop"], opts["mode"]
    if backend == "jax" and kernel in ("gemm", "conv"):
        from workloads.kernels import jax_kernels as impl
    else:
        from workloads.kernels import compute as impl  # type: ignore[no-redef]
    results: list[Any] = []
    for row in rows:
        n = plan.iters(row)
        if kernel == "gemm":
            results.append(impl.gemm(row, warmup, n, loop=loop))
        elif kernel == "conv":
            results.extend(impl.conv(row, warmup, n, mode=mode, loop=loop))
        elif kernel == "rnn":
            from workloads.kernels import compute

            results.extend(compute.rnn(row, warmup, n, mode=mode, loop=loop))
        elif kernel == "allreduce":
            results.append(comm.allreduce(row, opts["devices"], warmup, n))
        else:
            for direction in opts["directions"]:
                for aff in opts["affinities"]:
                    if aff == "remote" and len(comm.numa_nodes()) < 2:
                        continue  # one NUMA node: nothing is remote
                    results.append(
                        comm.bandwidth_isolated(row, direction, aff, warmup, n, opts["numactl"])
                    )
    return results, plan


def run(job: Any) -> dict[str, Any]:
    """The ``kernel`` scenario: every shape of the entry's kernel, one record."""
    from workloads.kernels import shapes

    if job.model not in KERNELS:
        raise InputError(f"kernel {job.model!r} is not one of {', '.join(KERNELS)}")
    opts = check_options(job.options)
    backend = getattr(job, "backend", "tensorflow")
    cover = shapes.coverage(job.model, opts["sizes"], opts.get("family"))
    params: dict[str, Any] = {
        "kernel": job.model,
        "options": dict(opts),
        "backend": backend,
        "shape_set": cover,
    }
    if job.model not in BACKEND_KERNELS.get(backend, ()):
        also = " and JAX" if job.model in BACKEND_KERNELS["jax"] else ""
        why = NEEDS_TF.format(kernel=job.model, backend=backend, also=also)
        return {"kind": "kernel", "status": "skipped", "error": why, "params": params}
    from workloads.fingerprint.throttle import CounterWindow

    window = CounterWindow()
    started = time.time()
    with window:
        results, plan = measure(job.model, opts, job.warmup, job.steps, backend)
    metrics: dict[str, float] = {}
    for res in results:
        for key, value in res.metrics().items():
            metrics[f"{shape_id(res)}.{key}"] = float(value)
    times = [r.time_per_call_s for r in results]
    metrics["shapes"] = float(cover["count"])
    metrics["total_time_per_call_s"] = float(sum(times))
    rates = [r.tflops for r in results if r.tflops] or [r.gbps for r in results if r.gbps]
    if rates:
        metrics["max_rate"] = float(max(rates))
    params.update(
        results=[r.as_dict() for r in results],
        device=results[0].device if results else None,
        iterations=plan.describe(),
        not_comparable=sorted({shape_id(r) for r in results if not r.comparable}),
        nvml_window=window.result(),
    )
    # each shape's timed calls are one block, synchronized once at its end (no sync_every:
    # the calls per block differ by shape, params.iterations says how they were chosen)
    blocks = [r.time_per_call_s * r.iters for r in results]
    return {
        "kind": "kernel",
        "metrics": metrics,
        "params": params,
        "startup_s": max(0.0, started - job.launched_at) if job.launched_at else None,
        "first_step_s": None,
        "timed_s": float(sum(blocks)),
        "block_times_s": blocks,
    }
