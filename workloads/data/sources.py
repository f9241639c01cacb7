"""Data source ``real`` for the runner's DATA_SOURCES registry: ImageNet-format shards.

The directory is the entry's option ``data_dir`` when its scenario takes one, else
``$GPULAB_DATA_DIR`` (a lab-specific path, so suites stay unchanged between labs). Batches come
from :func:`workloads.data.imagenet.train_dataset` (tf_cnn_benchmarks' training preprocessing);
on the JAX and PyTorch backends they are converted to that backend's tensors per step.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from workloads.errors import InputError

ENV_DATA_DIR = "GPULAB_DATA_DIR"


def data_dir(options: Mapping[str, Any]) -> str:
    path = options.get("data_dir") or os.environ.get(ENV_DATA_DIR)
    if not path:
        raise InputError(
            f"data 'real' needs ${ENV_DATA_DIR} (or option data_dir) naming a "
            "directory of train-*-of-* shards; gpulab data imagenet-like writes some"
        )
    return str(path)


def real_source(
    spec: Any, batch: int, image_size: int | None, options: Mapping[str, Any]
) -> Callable[[], tuple[Any, Any]]:
    import keras

    from workloads.data.imagenet import PipelineOptions, train_dataset

    if spec.channels != 3:
        raise InputError(
            f"data 'real' is ImageNet-format (3 channels); model {spec.name!r} "
            f"takes {spec.channels}"
        )
    size = image_size or spec.image_size
    seed = options.get("seed")
    ds = train_dataset(
        data_dir(options),
        batch,
        size,
        PipelineOptions(seed=seed if isinstance(seed, int) else None),
    )
    it = iter(ds)
    classes = spec.num_classes
    convert = keras.backend.backend() != "tensorflow"

    def get_batch() -> tuple[Any, Any]:
        images, labels = next(it)
        labels = labels % classes  # labels beyond the model's classes (1..1000 vs 1000) wrap
        if convert:
            return (
                keras.ops.convert_to_tensor(images.numpy()),
                keras.ops.convert_to_tensor(labels.numpy()),
            )
        return images, labels

    return get_batch
