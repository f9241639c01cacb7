"""The raw JAX loop: the plan's graph in jax.lax ops, one jax.jit'ed SGD step, donated state.

Parameters and batch-norm statistics are plain pytrees of arrays made from the Keras model's
initial weights; bf16 casts activations and weights to bfloat16 for convolutions and matrix
products and keeps batch-norm statistics, the loss and the fp32 master weights in float32.
"""

from __future__ import annotations

import functools
from typing import Any

from benchmarks.gpu.graph import Plan
from benchmarks.gpu.interp import run_plan, split_weights

DESCRIPTION = (
    "plain JAX loop (jax.lax ops, one jax.jit SGD step, donated buffers) on the "
    "Keras model's weights"
)


class JaxOps:
    def __init__(self, dtype: Any, key: Any = None) -> None:
        self.dtype = dtype
        self.key = key

    def _window(self, x: Any, init: Any, op: Any, cfg: dict[str, Any]) -> Any:
        from jax import lax

        kh, kw = cfg["pool_size"]
        sh, sw = cfg["strides"]
        return lax.reduce_window(
            x, init, op, (1, kh, kw, 1), (1, sh, sw, 1), cfg["padding"].upper()
        )

    def conv(self, x: Any, w: dict[str, Any], cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any:
        from jax import lax

        y = lax.conv_general_dilated(
            x,
            w["kernel"].astype(self.dtype),
            cfg["strides"],
            cfg["padding"].upper(),
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        )
        return y + w["bias"].astype(self.dtype) if "bias" in w else y

    def dense(self, x: Any, w: dict[str, Any], cfg: dict[str, Any]) -> Any:
        y = x @ w["kernel"].astype(self.dtype)
        return y + w["bias"].astype(self.dtype) if "bias" in w else y

    def batch_norm(
        self, x: Any, w: dict[str, Any], s: dict[str, Any], cfg: dict[str, Any], training: bool
    ) -> tuple[Any, dict[str, Any] | None]:
        import jax.numpy as jnp
        from jax import lax

        x32 = x.astype(jnp.float32)
        upd = None
        if training:
            mean = x32.mean((0, 1, 2))
            var = jnp.square(x32 - mean).mean((0, 1, 2))
            m = cfg["momentum"]
            upd = {
                "moving_mean": s["moving_mean"] * m + lax.stop_gradient(mean) * (1 - m),
                "moving_variance": s["moving_variance"] * m + lax.stop_gradient(var) * (1 - m),
            }
        else:
            mean, var = s["moving_mean"], s["moving_variance"]
        y = (x32 - mean) * lax.rsqrt(var + cfg["epsilon"])
        if "gamma" in w:
            y = y * w["gamma"]
        if "beta" in w:
            y = y + w["beta"]
        return y.astype(self.dtype), upd

    def act(self, x: Any, name: str) -> Any:
        import jax

        return jax.nn.relu(x) if name == "relu" else x

    def max_pool(self, x: Any, cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any:
        from jax import lax

        return self._window(x, -float("inf"), lax.max, cfg)  # a constant init: differentiable

    def avg_pool(self, x: Any, cfg: dict[str, Any], in_hw: tuple[int, int]) -> Any:
        import jax.numpy as jnp
        from jax import lax

        sums = self._window(x, 0.0, lax.add, cfg)
        ones = jnp.ones((1, *x.shape[1:3], 1), x.dtype)
        counts = self._window(ones, 0.0, lax.add, cfg)
        return sums / counts

    def global_avg_pool(self, x: Any) -> Any:
        return x.mean((1, 2))

    def flatten(self, x: Any) -> Any:
        return x.reshape(x.shape[0], -1)

    def dropout(self, x: Any, rate: float, index: int) -> Any:
        import jax
        import jax.numpy as jnp

        keep = jax.random.bernoulli(jax.random.fold_in(self.key, index), 1.0 - rate, x.shape)
        return jnp.where(keep, x / (1.0 - rate), jnp.zeros_like(x))

    def add(self, xs: list[Any]) -> Any:
        return functools.reduce(lambda a, b: a + b, xs)

    def concat(self, xs: list[Any]) -> Any:
        import jax.numpy as jnp

        return jnp.concatenate(xs, axis=-1)

    def zero_pad(self, x: Any, pads: tuple[int, int, int, int]) -> Any:
        import jax.numpy as jnp

        top, bottom, left, right = pads
        return jnp.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))


class JaxRaw:
    framework = "jax"
    description = DESCRIPTION

    def __init__(
        self, plan: Plan, batch: int, precision: str, lr: float = 0.005, seed: int = 1234
    ) -> None:
        import jax
        import jax.numpy as jnp

        self.jax = jax
        self.plan = plan
        self.dtype = jnp.bfloat16 if precision == "bf16" else jnp.float32
        p, s = split_weights(plan)
        self.params = jax.tree.map(jnp.asarray, p)
        self.state = jax.tree.map(jnp.asarray, s)
        key = jax.random.PRNGKey(seed)
        k1, k2, self.key = jax.random.split(key, 3)
        self.images = (
            jax.random.truncated_normal(k1, -2.0, 2.0, (batch, *plan.input_shape)) * 60.0 + 127.0
        )
        self.labels = jax.random.randint(k2, (batch,), 0, plan.num_classes, dtype=jnp.int32)
        self.count = 0
        dtype = self.dtype

        def loss_fn(params: Any, state: Any, x: Any, y: Any, key: Any) -> Any:
            logits, new_state = run_plan(
                plan, x.astype(dtype), JaxOps(dtype, key), params, state, True
            )
            logp = jax.nn.log_softmax(logits.astype(jnp.float32))
            return -jnp.take_along_axis(logp, y[:, None], axis=1).mean(), new_state

        def train(params: Any, state: Any, x: Any, y: Any, key: Any, i: Any) -> Any:
            k = jax.random.fold_in(key, i)
            (loss, new_state), grads = jax.value_and_grad(loss_fn, has_aux=True)(
                params, state, x, y, k
            )
            params = jax.tree.map(lambda w, g: w - lr * g, params, grads)
            return params, {**state, **new_state}, loss

        self._train = jax.jit(train, donate_argnums=(0, 1))
        self._loss: Any = None

    def forward(self, x: Any, training: bool) -> Any:
        import jax.numpy as jnp

        logits, _ = run_plan(
            self.plan,
            jnp.asarray(x).astype(self.dtype),
            JaxOps(self.dtype, self.key),
            self.params,
            self.state,
            training,
        )
        return logits.astype(jnp.float32)

    def step(self) -> None:
        import jax.numpy as jnp

        self.params, self.state, self._loss = self._train(
            self.params, self.state, self.images, self.labels, self.key, jnp.uint32(self.count)
        )
        self.count += 1

    def sync(self) -> float:
        return float(self._loss.block_until_ready())
