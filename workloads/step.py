"""The runner's own training step (SGD), compiled for the active Keras 3 backend.

Keras 3 ``model.fit`` breaks under multi-worker strategies and tf_cnn timing needs the step
anyway, so the runner owns it. Backend-specific code is the three small ``_*_step`` builders
below; everything else (models, data, timing) is backend-neutral Keras.

- ``tensorflow`` (default): ``tf.function`` around a GradientTape step (graph mode, no XLA:
  XLA is slower on CPU and tf_cnn_benchmarks ran without it).
- ``jax``: ``jax.jit`` of a stateless step (``model.stateless_call`` + ``optimizer
  .stateless_apply``), state carried between calls and written back by ``finish()``.
- ``torch``: eager autograd step (what Keras' own torch trainer does by default).

Each step returns the scalar loss and leaves it on the device: dispatching a step does not wait
for it. ``TrainStep.sync(loss)`` waits until the device has finished the step that gave the
loss (and every step before it): TensorFlow reads the value (``.numpy()``), JAX blocks on the
loss and the carried state (``jax.block_until_ready``), PyTorch calls ``torch.cuda
.synchronize()`` on CUDA (``.item()`` otherwise). The timed loop (workloads.timing) syncs
every K steps and fetches the losses once, after the timed window (``TrainStep.fetch``).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import Any

from workloads.errors import InputError

BACKENDS = ("tensorflow", "jax", "torch")
DEFAULT_LEARNING_RATE = 0.005  # tf_cnn_benchmarks AlexNet default; throughput ignores it
# tf_cnn_benchmarks --weight_decay default: weight_decay x sum(l2_loss(v)) over the trainable
# variables outside batch normalization (l2_loss = sum(v^2) / 2) is added to the loss.
TF_CNN_WEIGHT_DECAY = 4e-5


def decayed_mask(model: Any) -> list[bool]:
    """Per trainable variable of ``model``: True when L2 weight decay applies (not a batch
    normalization variable, as tf_cnn_benchmarks filters them)."""
    import keras

    skip = {
        id(v)
        for layer in model._flatten_layers()
        if isinstance(layer, keras.layers.BatchNormalization)
        for v in layer.trainable_weights
    }
    return [id(v) not in skip for v in model.trainable_variables]


def l2_penalty(values: list[Any], mask: list[bool], weight_decay: float) -> Any:
    """weight_decay x sum(v^2) / 2 over the masked values (backend-neutral keras.ops)."""
    import keras

    ops = keras.ops
    terms = [ops.sum(ops.square(v)) for v, keep in zip(values, mask, strict=True) if keep]
    return weight_decay * 0.5 * ops.sum(ops.stack(terms)) if terms else 0.0


def installed_backends() -> list[str]:
    return [b for b in BACKENDS if importlib.util.find_spec(b) is not None]


FALLBACK_ENV = "GPULAB_BACKEND_FALLBACK"  # "1": without TensorFlow, use JAX, else PyTorch


def default_backend() -> str:
    """``$KERAS_BACKEND`` when set, else TensorFlow; never another backend silently.

    Without TensorFlow the runner refuses to fall back (a JAX arm against a TensorFlow arm is
    not the same measurement) unless asked: ``--keras-backend jax|torch``, ``KERAS_BACKEND``, or
    ``GPULAB_BACKEND_FALLBACK=1`` (then JAX, else PyTorch, whichever is installed). The
    backend that ran is in every record (``params.backend``, and the fingerprint's
    ``software.backend.keras_backend``).
    """
    env = os.environ.get("KERAS_BACKEND")
    if env:
        return env
    found = installed_backends()
    if not found:
        raise InputError("no Keras backend installed (need tensorflow, jax or torch)")
    if found[0] == "tensorflow":
        return "tensorflow"
    if os.environ.get(FALLBACK_ENV, "").strip().lower() in ("1", "true", "yes"):
        return found[0]
    raise InputError(
        f"TensorFlow (the default backend) is not installed; installed: {', '.join(found)}. "
        f"Name one with --keras-backend or KERAS_BACKEND, or set {FALLBACK_ENV}=1 to fall back"
    )


def check_backend(name: str) -> str:
    if name not in BACKENDS:
        raise InputError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")
    if importlib.util.find_spec(name) is None:
        raise InputError(f"backend {name!r} is not installed in this Python environment")
    return name


def select_backend(name: str) -> Any:
    """Make ``name`` the Keras backend (call before Keras is imported); returns keras."""
    os.environ["KERAS_BACKEND"] = name
    import keras

    active = keras.backend.backend()
    if active != name:
        raise RuntimeError(f"keras was already imported with backend {active!r}, not {name!r}")
    return keras


def make_optimizer(learning_rate: float = DEFAULT_LEARNING_RATE) -> Any:
    import keras

    return keras.optimizers.SGD(learning_rate=learning_rate)


def default_loss() -> Any:
    import keras

    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


class DecayedLoss:
    """``loss(labels, logits) + l2_penalty`` over the model's decayed variables (their current
    values, or ``values`` when given: JAX's stateless step passes its traced ones)."""

    def __init__(self, base: Any, model: Any, weight_decay: float) -> None:
        self.base, self.weight_decay = base, weight_decay
        self.mask, self.variables = decayed_mask(model), model.trainable_variables

    def __call__(self, labels: Any, logits: Any, values: Any = None) -> Any:
        vals = values if values is not None else [v.value for v in self.variables]
        return self.base(labels, logits) + l2_penalty(vals, self.mask, self.weight_decay)


def _read_value(value: Any) -> Any:
    """The value on the host, which waits for it: ``.item()`` for a PyTorch tensor (its
    ``numpy()`` refuses a tensor on a GPU), ``numpy()`` for TensorFlow, ``float`` otherwise."""
    if type(value).__module__.startswith("torch"):
        return value.item()
    return value.numpy() if hasattr(value, "numpy") else float(value)


class TrainStep:
    """``step(images, labels) -> loss`` (on the device, not waited for); ``sync(loss)`` waits
    for it; ``fetch(losses)`` brings losses to the host; ``finish()`` writes carried state
    back to the model."""

    def __init__(
        self,
        fn: Callable[[Any, Any], Any],
        finish: Callable[[], None] | None = None,
        sync: Callable[[Any], Any] | None = None,
    ):
        self._fn = fn
        self._finish = finish
        self._sync = sync or _read_value

    def __call__(self, images: Any, labels: Any) -> Any:
        return self._fn(images, labels)

    def sync(self, loss: Any) -> None:
        """Wait until the device has finished the step that returned ``loss``."""
        self._sync(loss)

    def fetch(self, losses: list[Any]) -> list[float]:
        """The losses as host floats (call after the timed window: each one is a transfer)."""
        return [float(_read_value(v)) for v in losses]

    def finish(self) -> None:
        if self._finish is not None:
            self._finish()


def build_train_step(
    model: Any,
    optimizer: Any | None = None,
    loss_fn: Any | None = None,
    compile: bool = True,
    weight_decay: float = 0.0,
) -> TrainStep:
    """A training step for ``model`` on the active backend.

    ``compile=False`` returns the plain step body (TensorFlow: for wrapping in a distribution
    strategy's ``run`` inside the caller's own ``tf.function``; JAX: un-jitted).
    ``weight_decay`` > 0 adds tf_cnn's L2 term (:func:`l2_penalty`) to the loss.
    """
    import keras

    optimizer = optimizer or make_optimizer()
    loss_fn = loss_fn or default_loss()
    if weight_decay > 0:
        loss_fn = DecayedLoss(loss_fn, model, weight_decay)

    optimizer.build(model.trainable_variables)
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tf_step(model, optimizer, loss_fn, compile)
    if backend == "jax":
        return _jax_step(model, optimizer, loss_fn, compile)
    if backend == "torch":
        return _torch_step(model, optimizer, loss_fn)
    raise InputError(f"unsupported Keras backend {backend!r} (known: {', '.join(BACKENDS)})")


def _tf_step(model: Any, optimizer: Any, loss_fn: Any, compile: bool) -> TrainStep:
    import tensorflow as tf

    def step(images: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = loss_fn(labels, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss

    return TrainStep(tf.function(step, jit_compile=False) if compile else step)


def _jax_step(model: Any, optimizer: Any, loss_fn: Any, compile: bool) -> TrainStep:
    import jax

    def compute_loss(trainable: Any, non_trainable: Any, images: Any, labels: Any) -> Any:
        logits, non_trainable = model.stateless_call(
            trainable, non_trainable, images, training=True
        )
        if isinstance(loss_fn, DecayedLoss):  # the L2 term over the traced values
            return loss_fn(labels, logits, trainable), non_trainable
        return loss_fn(labels, logits), non_trainable

    grad_fn = jax.value_and_grad(compute_loss, has_aux=True)

    def pure_step(state: Any, images: Any, labels: Any) -> Any:
        trainable, non_trainable, opt_vars = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable, images, labels)
        trainable, opt_vars = optimizer.stateless_apply(opt_vars, grads, trainable)
        return loss, (trainable, non_trainable, opt_vars)

    jitted = jax.jit(pure_step, donate_argnums=0) if compile else pure_step
    state = [
        (
            [v.value for v in model.trainable_variables],
            [v.value for v in model.non_trainable_variables],
            [v.value for v in optimizer.variables],
        )
    ]

    def step(images: Any, labels: Any) -> Any:
        loss, state[0] = jitted(state[0], images, labels)
        return loss

    def sync(loss: Any) -> None:  # the loss and the state the next step reads
        jax.block_until_ready((loss, state[0]))  # type: ignore[no-untyped-call]

    def finish() -> None:
        trainable, non_trainable, opt_vars = state[0]
        for var, val in zip(model.trainable_variables, trainable, strict=True):
            var.assign(val)
        for var, val in zip(model.non_trainable_variables, non_trainable, strict=True):
            var.assign(val)
        for var, val in zip(optimizer.variables, opt_vars, strict=True):
            var.assign(val)

    return TrainStep(step, finish, sync)


def _torch_step(model: Any, optimizer: Any, loss_fn: Any) -> TrainStep:
    import torch

    def step(images: Any, labels: Any) -> Any:
        logits = model(images, training=True)
        loss = loss_fn(labels, logits)
        model.zero_grad()
        loss.backward()
        grads = [v.value.grad for v in model.trainable_variables]
        with torch.no_grad():
            optimizer.apply(grads, model.trainable_variables)
        return loss.detach()

    def sync(loss: Any) -> None:
        if loss.is_cuda:
            torch.cuda.synchronize(loss.device)
        else:
            loss.item()

    return TrainStep(step, sync=sync)


def compute_devices(count: int) -> list[str]:
    """TensorFlow: ``count`` compute devices: the first GPUs, else logical CPU devices (made
    here, so call before TensorFlow has initialised its devices; CI and CPU hosts)."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        if len(gpus) < count:
            raise InputError(f"central storage over {count} GPUs: this host shows {len(gpus)}")
        return [f"/GPU:{i}" for i in range(count)]
    cpu = tf.config.list_physical_devices("CPU")[0]
    if count > 1:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
        )
    return [f"/CPU:{i}" for i in range(count)]


def build_central_step(
    model: Any,
    devices: list[str],
    optimizer: Any | None = None,
    loss_fn: Any | None = None,
    weight_decay: float = 0.0,
) -> TrainStep:
    """TensorFlow central storage (tf_cnn_benchmarks ``variable_update=parameter_server`` with
    ``local_parameter_device=cpu``, CLOSER 2018 Table 1): the variables live on the CPU, the
    batch is split over ``devices``, each computes its gradients there, the gradients are
    averaged on the CPU and applied there, so every step copies weights to and gradients from
    each device. Build the model under ``tf.device("/CPU:0")`` first."""
    import tensorflow as tf

    optimizer = optimizer or make_optimizer()
    loss_fn = loss_fn or default_loss()
    if weight_decay > 0:
        loss_fn = DecayedLoss(loss_fn, model, weight_decay)
    with tf.device("/CPU:0"):
        optimizer.build(model.trainable_variables)
    n = len(devices)

    def step(images: Any, labels: Any) -> Any:
        xs, ys = tf.split(images, n), tf.split(labels, n)
        losses, grads = [], []
        for dev, x, y in zip(devices, xs, ys, strict=True):
            with tf.device(dev), tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            losses.append(loss)
            grads.append(tape.gradient(loss, model.trainable_variables))
        with tf.device("/CPU:0"):
            mean = [tf.add_n(list(g)) / n for g in zip(*grads, strict=True)]
            optimizer.apply(mean, model.trainable_variables)
            return tf.add_n(losses) / n

    return TrainStep(tf.function(step, jit_compile=False))


def blocking(step: TrainStep, get_batch: Callable[[], tuple[Any, Any]]) -> Callable[[], float]:
    """A no-argument step that waits for the device and returns the loss as a float (the
    per-step fetch of tf_cnn_benchmarks; the timed loop uses :func:`dispatching` instead)."""

    def run() -> float:
        images, labels = get_batch()
        return float(step(images, labels))

    return run


def dispatching(step: TrainStep, get_batch: Callable[[], tuple[Any, Any]]) -> Callable[[], Any]:
    """A no-argument step for :func:`workloads.timing.timed_loop`: dispatches one step and
    returns its loss on the device (``step.sync`` waits for it)."""

    def run() -> Any:
        images, labels = get_batch()
        return step(images, labels)

    return run


def device_summary() -> list[str]:
    """The devices the active backend computes on (GPUs first; CPU when there is none)."""
    import keras

    backend = keras.backend.backend()
    try:
        if backend == "tensorflow":
            import tensorflow as tf

            gpus = tf.config.list_logical_devices("GPU")
            return [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
        if backend == "jax":
            import jax

            return [str(d) for d in jax.devices()]
        if backend == "torch":
            import torch

            if torch.cuda.is_available():
                return [
                    f"cuda:{i} {torch.cuda.get_device_name(i)}"
                    for i in range(torch.cuda.device_count())
                ]
            return ["cpu"]
    except Exception as exc:  # a device query must never fail a measurement
        return [f"unknown ({type(exc).__name__})"]
    return []
