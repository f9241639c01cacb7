"""DeepBench-style GEMM and convolution on JAX (the ``kernel`` scenario, ``--keras-backend jax``).

The calls run inside one ``jax.jit`` as a ``lax.fori_loop`` (``loop: compiled``), with an
``optimization_barrier`` on the carried operands so XLA cannot hoist the loop-invariant call
out of the loop; ``loop: python`` dispatches one jitted call per iteration. Convolution times
forward, backward-data and backward-weights apart (each a ``jax.vjp`` with respect to one
operand). The RNN, all-reduce and bandwidth kernels need TensorFlow: under JAX they are
``skipped`` with that reason (workloads.kernels.run).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from workloads.kernels.compute import KernelResult, conv_dims, phases


def default_device() -> str:
    import jax

    return str(jax.devices()[0])


def time_jax(
    fn: Callable[..., Any], operands: tuple[Any, ...], warmup: int, iters: int, loop: str
) -> float:
    """Seconds per call of ``fn(*operands)`` (see module doc)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    if loop == "python":
        call = jax.jit(fn)
        out = None
        for _ in range(max(1, warmup)):
            out = call(*operands)
        jax.block_until_ready(out)  # type: ignore[no-untyped-call]  # untyped in jax
        start = time.perf_counter()
        for _ in range(iters):
            out = call(*operands)
        jax.block_until_ready(out)  # type: ignore[no-untyped-call]  # untyped in jax
        return (time.perf_counter() - start) / iters

    def run(ops: tuple[Any, ...], n: Any) -> Any:
        def body(i: Any, carry: Any) -> Any:
            ops_, acc = lax.optimization_barrier(carry)  # type: ignore[no-untyped-call]
            leaves = jax.tree_util.tree_leaves(fn(*ops_))
            return ops_, acc + sum(jnp.ravel(t)[0].astype(jnp.float32) for t in leaves)

        return lax.fori_loop(0, n, body, (ops, jnp.float32(0)))[1]

    looped = jax.jit(run)
    looped(operands, max(1, warmup)).block_until_ready()  # the count is traced: one compile
    start = time.perf_counter()
    looped(operands, iters).block_until_ready()
    return (time.perf_counter() - start) / iters


def gemm(
    shape: tuple[int, int, int, bool, bool], warmup: int, iters: int, loop: str = "compiled"
) -> KernelResult:
    import jax
    import jax.numpy as jnp

    m, n, k, ta, tb = shape
    ka, kb = jax.random.split(jax.random.PRNGKey(0))
    a = jax.random.normal(ka, (k, m) if ta else (m, k), jnp.float32)
    b = jax.random.normal(kb, (n, k) if tb else (k, n), jnp.float32)

    def mm(a: Any, b: Any) -> Any:
        return (a.T if ta else a) @ (b.T if tb else b)

    t = time_jax(mm, (a, b), warmup, iters, loop)
    return KernelResult(
        "gemm",
        {"m": m, "n": n, "k": k, "a_t": ta, "b_t": tb},
        t,
        iters,
        default_device(),
        tflops=2.0 * m * n * k / t / 1e12,
        loop=loop,
    )


def conv(
    shape: tuple[int, ...], warmup: int, iters: int, mode: str = "train", loop: str = "compiled"
) -> list[KernelResult]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    dims, p, q = conv_dims(shape)
    n, h, w, c, k = dims["n"], dims["h"], dims["w"], dims["c"], dims["k"]
    r, s = dims["r"], dims["s"]
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    x = jax.random.normal(keys[0], (n, h, w, c), jnp.float32)
    f = jax.random.normal(keys[1], (r, s, c, k), jnp.float32)
    dy = jax.random.normal(keys[2], (n, p, q, k), jnp.float32)
    pads = ((dims["pad_h"], dims["pad_h"]), (dims["pad_w"], dims["pad_w"]))

    def fwd(x: Any, f: Any) -> Any:
        return lax.conv_general_dilated(
            x,
            f,
            (dims["stride_h"], dims["stride_w"]),
            pads,
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        )

    calls: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
        "forward": (fwd, (x, f)),
        "backward_data": (lambda f, dy: jax.vjp(lambda x_: fwd(x_, f), x)[1](dy), (f, dy)),
        "backward_weights": (lambda x, dy: jax.vjp(lambda f_: fwd(x, f_), f)[1](dy), (x, dy)),
    }
    out = []
    flops = 2.0 * n * k * c * r * s * p * q
    for phase in phases(mode):
        fn, ops = calls[phase]
        t = time_jax(fn, ops, warmup, iters, loop)
        row = dict(dims, mode=mode, out_h=p, out_w=q)
        out.append(
            KernelResult(
                "conv", row, t, iters, default_device(), tflops=flops / t / 1e12, phase=phase,
                loop=loop,
            )
        )  # fmt: skip
    return out
