"""DeepBench-style compute kernels on TensorFlow: GEMM, convolution, RNN (vanilla/LSTM/GRU).

Each function measures one shape and returns :class:`KernelResult` rows: seconds per call and
TFLOP/s from the shape's floating-point operation count:

- GEMM: 2 M N K.
- conv: 2 N K C R S P Q (P x Q the output) for each phase. ``train`` times forward,
  backward-data (``Conv2DBackpropInput``) and backward-weights (``Conv2DBackpropFilter``) apart,
  as DeepBench's conv_bench does (one row per phase); ``forward`` times the forward pass only.
- RNN: per timestep the input and recurrent GEMMs, 2 x 2 B H H per gate (1 vanilla, 4 LSTM,
  3 GRU), the same count for each phase. Backward-data (gradient to the input only) and
  backward-weights (gradient to the weights only) are timed as forward + that gradient, minus
  the forward time (``method`` says so); a Keras ``SimpleRNN`` has no cuDNN kernel, so vanilla
  rows are marked ``comparable: false`` (DeepBench runs vanilla as cuDNN's CUDNN_RNN_RELU).

Timing (``loop``): ``compiled`` (default) runs the calls inside one ``tf.function`` as a
``tf.while_loop`` of ``iters`` iterations (one dispatch per loop, not per call, so a small
kernel is not dominated by dispatch); ``python`` calls a ``tf.function`` once per call (the
dispatch floor included; kept to compare). The loop carries a scalar read from each result so
no call can be pruned, and reads the operands from variables each iteration so none is hoisted.
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
    phase: str | None = None  # forward | backward_data | backward_weights (conv, rnn)
    comparable: bool = True  # False: not the kernel DeepBench runs (see note)
    note: str | None = None
    loop: str = "python"

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
    """Mean seconds per call of ``fn`` over ``iters`` Python-level calls after ``warmup``.

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


def time_tf(call: Callable[[], Any], warmup: int, iters: int, loop: str = "compiled") -> float:
    """Seconds per call of ``call`` (a graph-buildable function of no arguments)."""
    import tensorflow as tf

    if loop == "python":
        return time_calls(tf.function(call), warmup, iters)

    @tf.function  # type: ignore[untyped-decorator]  # tf.function is missing from the stubs
    def run(n: Any) -> Any:
        def body(i: Any, acc: Any) -> Any:
            first = [tf.reshape(t, [-1])[0] for t in tf.nest.flatten(call())]
            return i + 1, acc + tf.add_n([tf.cast(t, tf.float32) for t in first])

        return tf.while_loop(
            lambda i, acc: i < n, body, (tf.constant(0), tf.constant(0.0)), parallel_iterations=1
        )[1]

    run(tf.constant(max(1, warmup))).numpy()  # traces once; the count is a tensor
    start = time.perf_counter()
    run(tf.constant(iters)).numpy()
    return (time.perf_counter() - start) / iters


def gemm(
    shape: tuple[int, int, int, bool, bool],
    warmup: int = 2,
    iters: int = 10,
    device: str | None = None,
    loop: str = "compiled",
) -> KernelResult:
    import tensorflow as tf

    m, n, k, ta, tb = shape
    device = device or default_device()
    with tf.device(device):
        a = tf.Variable(tf.random.normal((k, m) if ta else (m, k)))
        b = tf.Variable(tf.random.normal((n, k) if tb else (k, n)))
        t = time_tf(lambda: tf.matmul(a, b, transpose_a=ta, transpose_b=tb), warmup, iters, loop)
    return KernelResult(
        "gemm",
        {"m": m, "n": n, "k": k, "a_t": ta, "b_t": tb},
        t,
        iters,
        device,
        tflops=2.0 * m * n * k / t / 1e12,
        loop=loop,
    )


CONV_FIELDS = ("w", "h", "c", "n", "k", "s", "r", "pad_w", "pad_h", "stride_w", "stride_h")


def conv_dims(shape: tuple[int, ...]) -> tuple[dict[str, Any], int, int]:
    """The named dimensions of a DeepBench conv row, and its output height and width."""
    dims: dict[str, Any] = dict(zip(CONV_FIELDS, shape, strict=True))
    p = (dims["h"] + 2 * dims["pad_h"] - dims["r"]) // dims["stride_h"] + 1
    q = (dims["w"] + 2 * dims["pad_w"] - dims["s"]) // dims["stride_w"] + 1
    return dims, p, q


def phases(mode: str) -> tuple[str, ...]:
    return ("forward",) if mode == "forward" else ("forward", "backward_data", "backward_weights")


def conv(
    shape: tuple[int, ...],
    warmup: int = 2,
    iters: int = 10,
    device: str | None = None,
    mode: str = "train",
    loop: str = "compiled",
) -> list[KernelResult]:
    """One DeepBench conv shape, NHWC; one row per phase (see module doc)."""
    import tensorflow as tf

    dims, p, q = conv_dims(shape)
    w, h, c, n, k, s, r, pad_w, pad_h, stride_w, stride_h = shape
    device = device or default_device()
    strides = [1, stride_h, stride_w, 1]
    explicit = [0, 0, pad_h, pad_h, pad_w, pad_w, 0, 0]
    calls: dict[str, Callable[[], Any]] = {}
    with tf.device(device):
        x = tf.Variable(tf.random.normal((n, h, w, c)))
        f = tf.Variable(tf.random.normal((r, s, c, k)))
        dy = tf.Variable(tf.random.normal((n, p, q, k)))
        conv_args = {"strides": strides, "padding": "EXPLICIT", "explicit_paddings": explicit}
        calls["forward"] = lambda: tf.raw_ops.Conv2D(input=x, filter=f, **conv_args)
        calls["backward_data"] = lambda: tf.raw_ops.Conv2DBackpropInput(
            input_sizes=[n, h, w, c], filter=f, out_backprop=dy, **conv_args
        )
        calls["backward_weights"] = lambda: tf.raw_ops.Conv2DBackpropFilter(
            input=x, filter_sizes=[r, s, c, k], out_backprop=dy, **conv_args
        )
        out = []
        for phase in phases(mode):
            t = time_tf(calls[phase], warmup, iters, loop)
            flops = 2.0 * n * k * c * r * s * p * q
            row = dict(dims, mode=mode, out_h=p, out_w=q)
            out.append(
                KernelResult(
                    "conv", row, t, iters, device, tflops=flops / t / 1e12, phase=phase, loop=loop
                )
            )
    return out


_GATES = {"vanilla": 1, "lstm": 4, "gru": 3}
VANILLA_NOTE = (
    "Keras SimpleRNN has no cuDNN kernel; DeepBench times vanilla as cuDNN CUDNN_RNN_RELU, "
    "so this row is not comparable with DeepBench's"
)


def rnn(
    shape: tuple[int, int, int, str],
    warmup: int = 2,
    iters: int = 5,
    device: str | None = None,
    mode: str = "train",
    loop: str = "compiled",
) -> list[KernelResult]:
    """One RNN shape (hidden, batch, timesteps, cell); one row per phase (see module doc)."""
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

        def grad(wrt: Callable[[], list[Any]]) -> Callable[[], Any]:
            def call() -> Any:
                with tf.GradientTape() as tape:
                    y = layer(x)
                return tape.gradient(y, wrt(), output_gradients=tf.ones_like(y))

            return call

        calls = {
            "forward": lambda: layer(x),
            "backward_data": grad(lambda: [x]),
            "backward_weights": grad(lambda: list(layer.trainable_weights)),
        }
        raw = {ph: time_tf(calls[ph], warmup, iters, loop) for ph in phases(mode)}
    flops = 2.0 * 2 * batch * hidden * hidden * _GATES[cell] * steps
    out = []
    for phase, t in raw.items():
        method, noisy = "timed", False
        if phase != "forward":
            method = "forward+gradient minus forward"
            noisy = t <= raw["forward"]
            if noisy:  # the difference is below the noise: keep the combined time, say so
                method = "forward+gradient (difference below noise)"
            else:
                t -= raw["forward"]
        dims = {"hidden": hidden, "batch": batch, "timesteps": steps, "cell": cell, "mode": mode}
        dims["method"] = method
        out.append(
            KernelResult(
                "rnn",
                dims,
                t,
                iters,
                device,
                tflops=flops / t / 1e12,
                extra={"timed_s": raw[phase]} if method != "timed" else {},
                phase=phase,
                comparable=cell != "vanilla" and not noisy,
                note=VANILLA_NOTE if cell == "vanilla" else (method if noisy else None),
                loop=loop,
            )
        )
    return out
