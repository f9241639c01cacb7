"""Input overlapped with compute: the next batches are on their way to the device while the
current step runs (tf_cnn_benchmarks staged its input the same way).

- TensorFlow: ``tf.data.experimental.prefetch_to_device`` onto the first GPU (a GPU-side
  buffer filled by the input thread); without a GPU, the host-side ``prefetch`` already there.
- JAX: ``jax.device_put`` of the next ``depth`` batches (asynchronous: the copy runs while the
  step computes), handed out oldest first: double buffering at depth 2.
- PyTorch: pinned host tensors copied with ``non_blocking=True`` on a side CUDA stream, the
  step's stream waiting on that copy only; without CUDA, plain CPU tensors.

Each ``get_batch`` built here carries ``overlap`` (a short description for ``params``).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from typing import Any

DEPTH = 2


class _Source:
    def __init__(self, fn: Callable[[], tuple[Any, Any]], overlap: str) -> None:
        self._fn, self.overlap = fn, overlap

    def __call__(self) -> tuple[Any, Any]:
        return self._fn()


def tf_device_dataset(ds: Any) -> tuple[Any, str]:
    """``ds`` prefetched onto the first GPU when there is one; (dataset, description)."""
    import tensorflow as tf

    if tf.config.list_logical_devices("GPU"):
        ds = ds.apply(tf.data.experimental.prefetch_to_device("/GPU:0", buffer_size=DEPTH))
        return ds, f"tf.data prefetch_to_device /GPU:0 (buffer {DEPTH})"
    return ds, "tf.data host prefetch (no GPU)"


def overlapped(it: Iterator[tuple[Any, Any]], backend: str, depth: int = DEPTH) -> _Source:
    """``get_batch`` over TensorFlow host batches ``it``, on ``backend``'s device, overlapped."""
    if backend == "jax":
        import jax

        dev = jax.devices()[0]
        queue: collections.deque[tuple[Any, Any]] = collections.deque()

        def put() -> None:
            images, labels = next(it)
            queue.append((jax.device_put(images.numpy(), dev), jax.device_put(labels.numpy(), dev)))

        def get_jax() -> tuple[Any, Any]:
            while len(queue) < depth:
                put()
            out = queue.popleft()
            put()  # the next copy starts before this step runs
            return out

        return _Source(get_jax, f"jax.device_put of the next {depth} batches ({dev.platform})")
    if backend == "torch":
        import torch

        if not torch.cuda.is_available():

            def get_cpu() -> tuple[Any, Any]:
                images, labels = next(it)
                return torch.from_numpy(images.numpy()), torch.from_numpy(labels.numpy())

            return _Source(get_cpu, "torch CPU tensors (no CUDA)")
        stream = torch.cuda.Stream()
        pending: collections.deque[tuple[Any, Any, Any]] = collections.deque()

        def put_torch() -> None:
            images, labels = next(it)
            with torch.cuda.stream(stream):
                x = torch.from_numpy(images.numpy()).pin_memory().to("cuda", non_blocking=True)
                y = torch.from_numpy(labels.numpy()).pin_memory().to("cuda", non_blocking=True)
                done = torch.cuda.Event()
                done.record(stream)
            pending.append((x, y, done))

        def get_torch() -> tuple[Any, Any]:
            while len(pending) < depth:
                put_torch()
            x, y, done = pending.popleft()
            torch.cuda.current_stream().wait_event(done)
            put_torch()
            return x, y

        return _Source(get_torch, f"torch pinned non_blocking copies on a side stream ({depth})")

    def get_tf() -> tuple[Any, Any]:
        return next(it)

    return _Source(get_tf, "tf.data iterator")
