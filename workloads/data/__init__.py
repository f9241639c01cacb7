"""Input data for the runner: ImageNet-format TFRecord shards and MNIST IDX files.

- :mod:`workloads.data.imagenet`: tf_cnn_benchmarks' training input pipeline over
  ``train-*-of-*`` shards (real ImageNet, or shards from :mod:`workloads.data.imagenet_writer`).
- :mod:`workloads.data.mnist`: the MNIST IDX format (plain or ``.gz``), read and written.

TensorFlow is imported inside functions, so importing this package is cheap.
"""

from __future__ import annotations
