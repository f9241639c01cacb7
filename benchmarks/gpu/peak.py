"""The peak of a large bf16 matrix product (n x n x n), measured in the framework under test.

MFU's denominator: ``2 n^3 / seconds per product``, the mean of ``iters`` back-to-back products
after ``warmup`` ones, synchronized once at the end. 8192 at full size (an H100 SXM reaches
about 750-800 TFLOP/s there); --cpu-smoke uses a small n.
"""

from __future__ import annotations

from typing import Any

from workloads.kernels.compute import time_calls


def bf16_matmul(framework: str, n: int, warmup: int = 3, iters: int = 10) -> dict[str, Any]:
    """``{tflops, time_per_call_s, n, framework, device}`` for an n x n x n bf16 product."""
    if framework == "torch":
        import torch

        dev = "cuda" if torch.cuda.is_available() else "cpu"
        a = torch.randn((n, n), device=dev, dtype=torch.bfloat16)
        b = torch.randn((n, n), device=dev, dtype=torch.bfloat16)

        def sync_t(out: Any) -> None:
            if dev == "cuda":
                torch.cuda.synchronize()

        t = time_calls(lambda: a @ b, warmup, iters, sync_t)
        device = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"
    elif framework == "jax":
        import jax
        import jax.numpy as jnp

        k1, k2 = jax.random.split(jax.random.PRNGKey(0))
        a = jax.random.normal(k1, (n, n), jnp.bfloat16)
        b = jax.random.normal(k2, (n, n), jnp.bfloat16)
        mm = jax.jit(jnp.matmul)
        t = time_calls(lambda: mm(a, b), warmup, iters, lambda o: o.block_until_ready())
        device = str(jax.devices()[0])
    elif framework == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_logical_devices("GPU")
        device = gpus[0].name if gpus else "/CPU:0"
        with tf.device(device):
            a = tf.cast(tf.random.normal((n, n)), tf.bfloat16)
            b = tf.cast(tf.random.normal((n, n)), tf.bfloat16)
            mm = tf.function(lambda: tf.matmul(a, b))
            t = time_calls(mm, warmup, iters, lambda o: o[:1, :1].numpy())
    else:
        raise ValueError(f"framework {framework!r} is not torch, jax or tensorflow")
    return {
        "framework": framework,
        "n": n,
        "dtype": "bfloat16",
        "time_per_call_s": t,
        "tflops": 2.0 * n**3 / t / 1e12,
        "device": device,
        "iters": iters,
    }


# NVIDIA's data-sheet dense bf16 Tensor Core peaks (TFLOP/s, without sparsity; the sheets print
# twice these "with sparsity"), by the name NVML gives the card. The first match wins, so the
# more specific names come first. H200 SXM and H100 SXM share the Hopper SXM figure.
DATASHEET_BF16_DENSE: tuple[tuple[str, str, float], ...] = (
    ("H200 NVL", "H200 NVL", 835.5),
    ("H200", "H200 SXM", 989.4),
    ("H100 NVL", "H100 NVL", 835.5),
    ("H100 PCIe", "H100 PCIe", 756.5),
    ("H100", "H100 SXM", 989.4),
    ("A100", "A100", 312.0),
)


def datasheet_peak(gpu_name: str | None) -> tuple[str, float] | None:
    """(the data sheet's name for the card, its dense bf16 TFLOP/s) for an NVML name such as
    "NVIDIA H200" or "NVIDIA H100 80GB HBM3"; None for a card not listed."""
    for needle, label, tflops in DATASHEET_BF16_DENSE:
        if needle.lower() in (gpu_name or "").lower():
            return label, tflops
    return None
