"""Synthetic input the way tf_cnn_benchmarks makes it: on the device, once.

tf_cnn_benchmarks (``--data_name`` unset) fills a device-resident variable with
``truncated_normal(mean=127, stddev=60)`` images and uniform random labels, and every step
reads that same tensor: no input pipeline and no host-to-device copy per step. Here the tensors
are made with ``keras.random`` on the active backend's default device (the GPU when there is
one) and handed to every step unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

MEAN = 127.0
STDDEV = 60.0


def synthetic_batch(
    shape: tuple[int, int, int], batch: int, classes: int, seed: int = 1234
) -> tuple[Any, Any]:
    """One batch of images ``(batch, *shape)`` float32 and int32 labels in ``[0, classes)``."""
    import keras

    images = keras.random.truncated_normal(
        (batch, *shape), mean=MEAN, stddev=STDDEV, dtype="float32", seed=seed
    )
    labels = keras.random.randint((batch,), 0, classes, dtype="int32", seed=seed + 1)
    return images, labels


def synthetic_source(
    spec: Any, batch: int, image_size: int | None, options: Mapping[str, Any]
) -> Callable[[], tuple[Any, Any]]:
    """Data source ``synthetic``: returns ``get_batch()`` yielding the same device batch."""
    pair = synthetic_batch(
        spec.input_shape(image_size), batch, spec.num_classes, int(options.get("seed", 1234))
    )

    def get_batch() -> tuple[Any, Any]:
        return pair

    return get_batch
