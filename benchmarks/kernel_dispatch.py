"""Per-call time of a 16x16x16 GEMM: one dispatch per call vs the calls looped inside one
compiled function (the ``kernel`` scenario's ``loop`` option), same shape, same count.

    .venv/bin/python benchmarks/kernel_dispatch.py [--backend tensorflow|jax] [--iters 400]

``python`` is how the kernel scenario timed before (a tf.function / jax.jit call per
iteration); ``compiled`` is a tf.while_loop / lax.fori_loop of ``iters`` calls in one call.
Prints every trial in microseconds and the median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="tensorflow", choices=("tensorflow", "jax"))
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--size", type=int, default=16)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.backend == "jax":
        from workloads.kernels import jax_kernels as impl
    else:
        from workloads.kernels import compute as impl  # type: ignore[no-redef]
    n = args.size
    for loop in ("python", "compiled"):
        times = [
            impl.gemm((n, n, n, False, False), 5, args.iters, loop=loop).time_per_call_s * 1e6
            for _ in range(args.trials)
        ]
        print(
            f"{args.backend} gemm {n}^3 loop={loop:8s} iters={args.iters}: "
            + " ".join(f"{t:.1f}" for t in times)
            + f" us/call, median {statistics.median(times):.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
