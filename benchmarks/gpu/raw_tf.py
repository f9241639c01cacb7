"""The raw TensorFlow loop: the plan's graph in tf.nn ops, GradientTape, plain SGD, tf.function.

No Keras objects in the step: variables are tf.Variables made from the Keras model's initial
weights; bf16 mixed precision casts activations and weights to bfloat16 for convolutions and
matrix products and keeps batch-norm statistics, the loss and the fp32 master weights in float32
(what Keras' ``mixed_bfloat16`` policy does).
"""

from __future__ import annotations

from typing import Any

from benchmarks.gpu.graph import Plan
from benchmarks.gpu.interp import run_plan, split_weights

DESCRIPTION = "plain tf.function loop (tf.nn ops, GradientTape, SGD) on the Keras model's weights"


class TfOps:
    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    def _c(self, v: Any) -> Any:
        import tensorflow as tf

        return tf.cast(v, self.dtype)

    def conv(self, x: Any, w: dict[str, Any], cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any:
        import tensorflow as tf

        sh, sw = cfg["strides"]
        y = tf.nn.conv2d(
            x, self._c(w["kernel"]), strides=(1, sh, sw, 1), padding=cfg["padding"].upper()
        )
        return tf.nn.bias_add(y, self._c(w["bias"])) if "bias" in w else y

    def dense(self, x: Any, w: dict[str, Any], cfg: dict[str, Any]) -> Any:
        import tensorflow as tf

        y = tf.matmul(x, self._c(w["kernel"]))
        return y + self._c(w["bias"]) if "bias" in w else y

    def batch_norm(
        self, x: Any, w: dict[str, Any], s: dict[str, Any], cfg: dict[str, Any], training: bool
    ) -> tuple[Any, None]:
        import tensorflow as tf

        x32 = tf.cast(x, tf.float32)
        if training:
            mean, var = tf.nn.moments(x32, [0, 1, 2])
            m = cfg["momentum"]
            s["moving_mean"].assign(s["moving_mean"] * m + mean * (1.0 - m))
            s["moving_variance"].assign(s["moving_variance"] * m + var * (1.0 - m))
        else:
            mean, var = s["moving_mean"], s["moving_variance"]
        y = tf.nn.batch_normalization(x32, mean, var, w.get("beta"), w.get("gamma"), cfg["epsilon"])
        return tf.cast(y, self.dtype), None

    def act(self, x: Any, name: str) -> Any:
        import tensorflow as tf

        return tf.nn.relu(x) if name == "relu" else x

    def max_pool(self, x: Any, cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any:
        import tensorflow as tf

        return tf.nn.max_pool2d(x, cfg["pool_size"], cfg["strides"], cfg["padding"].upper())

    def avg_pool(self, x: Any, cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any:
        import tensorflow as tf

        return tf.nn.avg_pool2d(x, cfg["pool_size"], cfg["strides"], cfg["padding"].upper())

    def global_avg_pool(self, x: Any) -> Any:
        import tensorflow as tf

        return tf.reduce_mean(x, axis=[1, 2])

    def flatten(self, x: Any) -> Any:
        import tensorflow as tf

        return tf.reshape(x, [tf.shape(x)[0], -1])

    def dropout(self, x: Any, rate: float, index: int) -> Any:
        import tensorflow as tf

        return tf.nn.dropout(x, rate=rate)

    def add(self, xs: list[Any]) -> Any:
        import tensorflow as tf

        return tf.add_n(xs)

    def concat(self, xs: list[Any]) -> Any:
        import tensorflow as tf

        return tf.concat(xs, axis=-1)

    def zero_pad(self, x: Any, pads: tuple[int, int, int, int]) -> Any:
        import tensorflow as tf

        top, bottom, left, right = pads
        return tf.pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]])


class TfRaw:
    framework = "tensorflow"
    description = DESCRIPTION

    def __init__(
        self, plan: Plan, batch: int, precision: str, lr: float = 0.005, seed: int = 1234
    ) -> None:
        import tensorflow as tf

        self.plan = plan
        self.dtype = tf.bfloat16 if precision == "bf16" else tf.float32
        p, s = split_weights(plan)
        self.params = {n: {k: tf.Variable(v) for k, v in d.items()} for n, d in p.items()}
        self.state = {
            n: {k: tf.Variable(v, trainable=False) for k, v in d.items()} for n, d in s.items()
        }
        self.variables = [v for d in self.params.values() for v in d.values()]
        self.ops = TfOps(self.dtype)
        tf.random.set_seed(seed)
        self.images = tf.random.truncated_normal((batch, *plan.input_shape), 127.0, 60.0)
        self.labels = tf.random.uniform((batch,), 0, plan.num_classes, dtype=tf.int32)
        self.lr = lr
        self._step = tf.function(self._train, jit_compile=False)
        self._loss: Any = None

    def forward(self, x: Any, training: bool) -> Any:
        import tensorflow as tf

        logits, _ = run_plan(
            self.plan, tf.cast(x, self.dtype), self.ops, self.params, self.state, training
        )
        return tf.cast(logits, tf.float32)

    def _train(self) -> Any:
        import tensorflow as tf

        with tf.GradientTape() as tape:
            logits = self.forward(self.images, True)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(self.labels, logits)
            )
        grads = tape.gradient(loss, self.variables)
        for v, g in zip(self.variables, grads, strict=True):
            v.assign_sub(self.lr * g)
        return loss

    def step(self) -> None:
        self._loss = self._step()

    def sync(self) -> float:
        return float(self._loss.numpy())
