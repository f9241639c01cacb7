"""DeepBench-style compute kernels on TensorFlow: GEMM, convolution, RNN (vanilla/LSTM/GRU).

Each function measures one shape and returns a :class:`KernelResult`: seconds per call (mean
of ``iters`` calls after ``warmup`` calls, synchronised once at the end so GPU work is
included) and TFLOP/s from the shape's floating-point operation count:

- GEMM: 2 M N K.
- conv forward: 2 N K C R S P Q (P x Q the output); ``train`` adds backward-data and
  backward-filter (3x forward), as DeepBench reports them.
- RNN: per timestep the input and recurrent GEMMs, 2 x 2 B H H per gate (1 vanilla, 4 LSTM,
  3 GRU); ``train`` is forward + backward (3x forward).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class KernelResult:
    kernel: str
    shape: dict[str, Any]
    time_per_call_s: float
    iters: int
    device: str
    tflops: float | None = None
    gbps: float | None = None
    extra: dict[str, float] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        out = {"time_per_call_s": self.time_per_call_s}
        if self.tflops is not None:
            out["tflops"] = self.tflops
        if self.gbps is not None:
            out["gbps"] = self.gbps
        out.update(self.extra)
        return out

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_device() -> str:
    import tensorflow as tf

    return "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"


def _sync(value: Any) -> None:
    import tensorflow as tf

    for t in tf.nest.flatten(value):
        t = tf.convert_to_tensor(t)
        tf.reshape(t, [-1])[:1].numpy()  # waits for the op that produced ``t``


def time_calls(
    fn: Callable[[], Any], warmup: int, iters: int, sync: Callable[[Any], Any] | None = None
) -> float:
    """Mean seconds per call of ``fn`` over ``iters`` calls after ``warmup`` calls.

    ``sync(out)`` waits for the device to finish ``out`` (default: TensorFlow's); other
    frameworks pass their own (``block_until_ready``, ``torch.cuda.synchronize``).
    """
    sync = sync or _sync
    out = None
    for _ in range(max(1, warmup)):
        out = fn()
    sync(out)
    start = time.perf_counter()
    for _ in range(iters):
        out = fn()
    sync(out)
    return (time.perf_counter() - start) / iters


def gemm(
    shape: tuple[int, int, int, bool, bool],
    warmup: int = 2,
    iters: int = 10,
    device: str | None = None,
) -> KernelResult:
    import tensorflow as tf

    m, n, k, ta, tb = shape
    device = device or default_device()
    with tf.device(device):
        a = tf.random.normal((k, m) if ta else (m, k))
        b = tf.random.normal((n, k) if tb else (k, n))
        fn = tf.function(lambda: tf.matmul(a, b, transpose_a=ta, transpose_b=tb))
        t = time_calls(fn, warmup, iters)
    return KernelResult(
        "gemm",
        {"m": m, "n": n, "k": k, "a_t": ta, "b_t": tb},
        t,
        iters,
        device,
        tflops=2.0 * m * n * k / t / 1e12,
    )


def conv(
    shape: tuple[int, ...],
    warmup: int = 2,
    iters: int = 10,
    device: str | None = None,
    mode: str = "train",
) -> KernelResult:
    """One DeepBench conv shape, NHWC; ``mode`` 'forward' or 'train' (fwd + both backward)."""
    import tensorflow as tf

    w, h, c, n, k, s, r, pad_w, pad_h, stride_w, stride_h = shape
    device = device or default_device()
    pad = [[0, 0], [pad_h, pad_h], [pad_w, pad_w], [0, 0]]
    p = (h + 2 * pad_h - r) // stride_h + 1
    q = (w + 2 * pad_w - s) // stride_w + 1
    with tf.device(device):
        x = tf.Variable(tf.random.normal((n, h, w, c)))
        f = tf.Variable(tf.random.normal((r, s, c, k)))

        def forward() -> Any:
            # Explicit padding (a list of pairs) is valid for tf.nn.conv2d; the stubs allow only
            # "SAME" and "VALID".
            return tf.nn.conv2d(
                x,
                f,
                strides=[1, stride_h, stride_w, 1],
                padding=pad,  # type: ignore[arg-type]
            )

        def train() -> Any:
            with tf.GradientTape() as tape:
                y = forward()
            return tape.gradient(y, [x, f], output_gradients=tf.ones_like(y))

        fn = tf.function(forward if mode == "forward" else train)
        t = time_calls(fn, warmup, iters)
    flops = 2.0 * n * k * c * r * s * p * q * (1 if mode == "forward" else 3)
    dims: dict[str, Any] = dict(
        zip(
            ("w", "h", "c", "n", "k", "s", "r", "pad_w", "pad_h", "stride_w", "stride_h"),
            shape,
            strict=True,
        )
    )
    dims.update(mode=mode, out_h=p, out_w=q)
    return KernelResult("conv", dims, t, iters, device, tflops=flops / t / 1e12)


_GATES = {"vanilla": 1, "lstm": 4, "gru": 3}


def rnn(
    shape: tuple[int, int, int, str],
    warmup: int = 2,
    iters: int = 5,
    device: str | None = None,
    mode: str = "train",
) -> KernelResult:
    """One RNN shape (hidden, batch, timesteps, cell): forward or forward + backward."""
    import keras
    import tensorflow as tf

    hidden, batch, steps, cell = shape
    if cell not in _GATES:
        raise ValueError(f"rnn cell {cell!r} is not one of {sorted(_GATES)}")
    device = device or default_device()
    layer_cls = {
        "vanilla": keras.layers.SimpleRNN,
        "lstm": keras.layers.LSTM,
        "gru": keras.layers.GRU,
    }[cell]
    with tf.device(device):
        layer = layer_cls(hidden, return_sequences=True)
        x = tf.Variable(tf.random.normal((batch, steps, hidden)))
        layer(x)

        def forward() -> Any:
            return layer(x)

        def train() -> Any:
            with tf.GradientTape() as tape:
                y = layer(x)
            return tape.gradient(y, [x, *layer.trainable_weights], output_gradients=tf.ones_like(y))

        fn = tf.function(forward if mode == "forward" else train)
        t = time_calls(fn, warmup, iters)
    flops = 2.0 * 2 * batch * hidden * hidden * _GATES[cell] * steps
    flops *= 1 if mode == "forward" else 3
    dims = {"hidden": hidden, "batch": batch, "timesteps": steps, "cell": cell, "mode": mode}
    return KernelResult("rnn", dims, t, iters, device, tflops=flops / t / 1e12)
