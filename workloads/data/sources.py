"""Data source ``real`` for the runner's DATA_SOURCES registry: ImageNet-format shards.

The directory is the entry's option ``data_dir`` when its scenario takes one, else
``$GPULAB_DATA_DIR`` (a lab-specific path, so suites stay unchanged between labs). Batches come
from :func:`workloads.data.imagenet.train_dataset` (tf_cnn_benchmarks' training preprocessing),
overlapped with compute on every backend (workloads.data.prefetch: TensorFlow prefetches onto
the GPU, JAX and PyTorch double-buffer their device copies); ``get_batch.overlap`` says how.
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
    from workloads.data.prefetch import overlapped, tf_device_dataset

    backend = keras.backend.backend()
    classes = spec.num_classes
    # labels beyond the model's classes (1..1000 vs 1000) wrap, before any device copy
    ds = ds.map(lambda images, labels: (images, labels % classes))
    overlap = None
    if backend == "tensorflow":
        ds, overlap = tf_device_dataset(ds)
    source = overlapped(iter(ds), backend)
    if overlap is not None:
        source.overlap = overlap
    return source
