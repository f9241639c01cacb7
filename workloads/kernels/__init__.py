"""DeepBench-style kernels as the ``kernel`` scenario (IBM containers study, seed 003).

A suite entry names the kernel as its ``model`` (``gemm``, ``conv``, ``rnn``, ``allreduce``,
``bandwidth``); ``warmup`` calls are excluded and ``steps`` calls are timed per shape;
``options`` choose the shapes::

    sizes: tiny | deepbench-small | deepbench   (default tiny)
    family: square | resnet | lstm | ...        (a row group of workloads.kernels.shapes)
    mode: train | forward                       (conv and rnn; default train)
    devices: 2                                  (allreduce: local devices)
    directions: [h2d, d2h]                      (bandwidth)
    affinities: [none, local, remote]           (bandwidth: CPU pinning vs the GPU's NUMA node)

One record (kind ``kernel``) per entry: ``metrics`` has ``<shape id>.time_per_call_s`` and
``<shape id>.tflops`` (or ``.gbps``) for every shape plus totals; ``params.results`` lists the
shapes with their numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workloads.errors import InputError
from workloads.options import with_defaults

KERNELS = ("gemm", "conv", "rnn", "allreduce", "bandwidth")
SIZES = ("tiny", "deepbench-small", "deepbench")
AFFINITIES = ("none", "local", "remote")
DIRECTIONS = ("h2d", "d2h")


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    defaults = {
        "sizes": "tiny",
        "mode": "train",
        "devices": 2,
        "directions": ["h2d", "d2h"],
        "affinities": ["none", "local"],
    }
    out = with_defaults(options, defaults, "kernel", also=("family",))
    if out["sizes"] not in SIZES:
        raise InputError(f"option 'sizes' must be one of {', '.join(SIZES)}, got {out['sizes']!r}")
    if "family" in out and not isinstance(out["family"], str):
        raise InputError(f"option 'family' must be a string, got {out['family']!r}")
    if out["mode"] not in ("train", "forward"):
        raise InputError(f"option 'mode' must be train or forward, got {out['mode']!r}")
    dev = out["devices"]
    if isinstance(dev, bool) or not isinstance(dev, int) or dev < 1:
        raise InputError(f"option 'devices' must be an integer >= 1, got {dev!r}")
    for key, allowed in (("directions", DIRECTIONS), ("affinities", AFFINITIES)):
        vals = out[key]
        if not isinstance(vals, list) or not vals or any(v not in allowed for v in vals):
            raise InputError(
                f"option {key!r} must be a non-empty list of {', '.join(allowed)}, got {vals!r}"
            )
    return out


def model_names() -> tuple[str, ...]:
    return KERNELS


def shape_id(result: Any) -> str:
    s = result.shape
    if result.kernel == "gemm":
        return (
            f"gemm_{s['m']}x{s['n']}x{s['k']}"
            + ("_at" if s["a_t"] else "")
            + ("_bt" if s["b_t"] else "")
        )
    if result.kernel == "conv":
        return (
            f"conv_{s['w']}x{s['h']}x{s['c']}_n{s['n']}_k{s['k']}_{s['r']}x{s['s']}"
            f"_s{s['stride_h']}"
        )
    if result.kernel == "rnn":
        return f"rnn_{s['cell']}_h{s['hidden']}_b{s['batch']}_t{s['timesteps']}"
    if result.kernel == "allreduce":
        return f"allreduce_{s['elements']}x{s['devices']}"
    return f"bandwidth_{s['direction']}_{s['affinity']}_{s['bytes']}"


def measure(kernel: str, options: Mapping[str, Any], warmup: int, iters: int) -> list[Any]:
    """Run every selected shape of ``kernel``; a list of KernelResult."""
    from workloads.kernels import comm, compute, shapes

    opts = check_options(options)
    rows = shapes.select(kernel, opts["sizes"], opts.get("family"))
    results = []
    for row in rows:
        if kernel == "gemm":
            results.append(compute.gemm(row, warmup, iters))
        elif kernel == "conv":
            results.append(compute.conv(row, warmup, iters, mode=opts["mode"]))
        elif kernel == "rnn":
            results.append(compute.rnn(row, warmup, iters, mode=opts["mode"]))
        elif kernel == "allreduce":
            results.append(comm.allreduce(row, opts["devices"], warmup, iters))
        else:
            for direction in opts["directions"]:
                for aff in opts["affinities"]:
                    if aff == "remote" and len(comm.numa_nodes()) < 2:
                        continue  # one NUMA node: nothing is remote
                    results.append(comm.bandwidth(row, direction, aff, warmup, iters))
    return results


def run(job: Any) -> dict[str, Any]:
    """The ``kernel`` scenario: every shape of the entry's kernel, one record."""
    if job.model not in KERNELS:
        raise InputError(f"kernel {job.model!r} is not one of {', '.join(KERNELS)}")
    results = measure(job.model, job.options, job.warmup, job.steps)
    metrics: dict[str, float] = {}
    for res in results:
        for key, value in res.metrics().items():
            metrics[f"{shape_id(res)}.{key}"] = float(value)
    times = [r.time_per_call_s for r in results]
    metrics["shapes"] = float(len(results))
    metrics["total_time_per_call_s"] = float(sum(times))
    rates = [r.tflops for r in results if r.tflops] or [r.gbps for r in results if r.gbps]
    if rates:
        metrics["max_rate"] = float(max(rates))
    return {
        "kind": "kernel",
        "metrics": metrics,
        "params": {
            "kernel": job.model,
            "options": dict(check_options(job.options)),
            "results": [r.as_dict() for r in results],
            "device": results[0].device if results else None,
        },
    }
