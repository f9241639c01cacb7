"""Synthetic input the way tf_cnn_benchmarks makes it: on the device, once.

tf_cnn_benchmarks (``--data_name`` unset) fills a device-resident variable with
``truncated_normal(mean=127, stddev=60)`` images and uniform random labels, and every step
reads that same tensor: no input pipeline and no host-to-device copy per step. Here the tensors
are made with ``keras.random`` on the active backend's default device (the GPU when there is
one) and handed to every step unchanged. A model trained on scaled pixels
(``ModelSpec.input_scale``: the MNIST CNN's x / 255, as the classic example feeds it) gets them
scaled once, when they are made: on raw pixels its SGD could diverge within ten steps.

:func:`host_source` (the ``single`` option ``input: host``, the ``shared`` scenario's default)
is the other way: a few batches of the same distribution held in host memory, one of them
copied to the device for every step, so each step moves its batch from host to device as an
input pipeline feeding from host memory does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

MEAN = 127.0
STDDEV = 60.0


def synthetic_batch(
    shape: tuple[int, int, int], batch: int, classes: int, seed: int = 1234, scale: float = 1.0
) -> tuple[Any, Any]:
    """One batch of images ``(batch, *shape)`` float32 (pixels times ``scale``) and int32
    labels in ``[0, classes)``."""
    import keras

    images = keras.random.truncated_normal(
        (batch, *shape), mean=MEAN * scale, stddev=STDDEV * scale, dtype="float32", seed=seed
    )
    labels = keras.random.randint((batch,), 0, classes, dtype="int32", seed=seed + 1)
    return images, labels


def synthetic_source(
    spec: Any, batch: int, image_size: int | None, options: Mapping[str, Any]
) -> Callable[[], tuple[Any, Any]]:
    """Data source ``synthetic``: returns ``get_batch()`` yielding the same device batch."""
    pair = synthetic_batch(
        spec.input_shape(image_size),
        batch,
        spec.num_classes,
        int(options.get("seed", 1234)),
        spec.input_scale,
    )

    def get_batch() -> tuple[Any, Any]:
        return pair

    return get_batch


HOST_POOL = 2  # distinct host batches cycled (no two consecutive steps copy the same one)


def host_source(
    spec: Any, batch: int, image_size: int | None, options: Mapping[str, Any]
) -> Callable[[], tuple[Any, Any]]:
    """``get_batch()`` copying one of ``HOST_POOL`` host-memory batches to the device per call
    (``keras.ops.convert_to_tensor``: TensorFlow copies it in the step, JAX with
    ``device_put``, PyTorch to its default device). ``get_batch.overlap`` says so."""
    import keras
    import numpy as np

    rng = np.random.default_rng(int(options.get("seed", 1234)))
    shape = (batch, *spec.input_shape(image_size))
    pool = []
    for _ in range(HOST_POOL):
        images = np.clip(rng.normal(MEAN, STDDEV, shape), MEAN - 2 * STDDEV, MEAN + 2 * STDDEV)
        images *= spec.input_scale
        labels = rng.integers(0, spec.num_classes, (batch,), dtype=np.int32)
        pool.append((images.astype(np.float32), labels))
    count = [0]

    def get_batch() -> tuple[Any, Any]:
        images, labels = pool[count[0] % len(pool)]
        count[0] += 1
        return keras.ops.convert_to_tensor(images), keras.ops.convert_to_tensor(labels)

    get_batch.overlap = (  # type: ignore[attr-defined]
        f"host memory: {HOST_POOL} synthetic batches, one copied to the device per step"
    )
    return get_batch
