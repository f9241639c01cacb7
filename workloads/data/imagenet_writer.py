"""Write ImageNet-format TFRecord shards from generated images.

The records carry the features ``build_imagenet_data.py`` writes (``image/encoded`` JPEG,
``image/height``, ``image/width``, ``image/colorspace``, ``image/channels``,
``image/class/label`` (1-based), ``image/class/synset``, ``image/class/text``,
``image/object/bbox/*``, ``image/format``, ``image/filename``), so a lab without ImageNet still
exercises file reads, JPEG decode and the distorted-crop pipeline of
:mod:`workloads.data.imagenet`. Images are smooth random colour fields with a few rectangles
(so JPEG sizes resemble photos more than noise does), in sizes around ``image_size``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workloads.errors import InputError
from workloads.files import OutputError, make_dirs, replacing


@dataclass
class WriteSummary:
    out_dir: str
    files: list[str]
    images: int
    bytes: int


def _image(rng: Any, height: int, width: int) -> Any:
    import numpy as np

    yy = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None, None]
    xx = np.linspace(0.0, 1.0, width, dtype=np.float32)[None, :, None]
    a, b, c = (rng.uniform(0, 255, size=(1, 1, 3)).astype(np.float32) for _ in range(3))
    img = a * (1 - yy) * (1 - xx) + b * yy + c * xx * (1 - yy)
    for _ in range(int(rng.integers(1, 5))):
        y0, x0 = int(rng.integers(0, height)), int(rng.integers(0, width))
        y1 = min(height, y0 + int(rng.integers(4, max(5, height // 2))))
        x1 = min(width, x0 + int(rng.integers(4, max(5, width // 2))))
        img[y0:y1, x0:x1] = rng.uniform(0, 255, size=3)
    img += rng.normal(0, 6, size=img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def _example(jpeg: bytes, height: int, width: int, label: int, box: list[float], name: str) -> Any:
    import tensorflow as tf

    def b(v: bytes) -> Any:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v]))

    def i(v: int) -> Any:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[v]))

    def f(v: float) -> Any:
        return tf.train.Feature(float_list=tf.train.FloatList(value=[v]))

    xmin, ymin, xmax, ymax = box
    feature = {
        "image/height": i(height),
        "image/width": i(width),
        "image/colorspace": b(b"RGB"),
        "image/channels": i(3),
        "image/class/label": i(label),
        "image/class/synset": b(f"n{label:08d}".encode()),
        "image/class/text": b(f"class {label}".encode()),
        "image/object/bbox/xmin": f(xmin),
        "image/object/bbox/ymin": f(ymin),
        "image/object/bbox/xmax": f(xmax),
        "image/object/bbox/ymax": f(ymax),
        "image/object/bbox/label": i(label),
        "image/format": b(b"JPEG"),
        "image/filename": b(name.encode()),
        "image/encoded": b(jpeg),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


@contextmanager
def _tf_io(path: Path) -> Iterator[None]:
    """TensorFlow's I/O errors (``tf.errors.OpError``: a full disk) as one line naming ``path``."""
    import tensorflow as tf

    try:
        yield
    except tf.errors.OpError as exc:  # "<temporary file>; No space left on device"
        why = exc.message.rsplit("; ", 1)[-1]
        raise OutputError(f"cannot write {str(path)!r}: {why}") from None


def write_imagenet_like(
    out_dir: str | os.PathLike[str],
    images: int,
    shards: int | None = None,
    image_size: int = 320,
    classes: int = 1000,
    split: str = "train",
    seed: int = 0,
    quality: int = 90,
) -> WriteSummary:
    """Write ``images`` generated JPEG examples into ``split-NNNNN-of-MMMMM`` shards."""
    import numpy as np
    import tensorflow as tf

    if images < 1:
        raise InputError(f"images must be >= 1, got {images}")
    if image_size < 8:
        raise InputError(f"image_size must be >= 8, got {image_size}")
    if classes < 1:
        raise InputError(f"classes must be >= 1, got {classes}")
    shards = shards or max(1, min(1024, images // 256))
    if shards < 1 or shards > images:
        raise InputError(f"shards must be between 1 and images ({images}), got {shards}")
    out = make_dirs(out_dir)
    rng = np.random.default_rng(seed)
    files: list[str] = []
    total = 0
    per_shard = [images // shards + (1 if s < images % shards else 0) for s in range(shards)]
    n = 0
    for s, count in enumerate(per_shard):
        path = out / f"{split}-{s:05d}-of-{shards:05d}"
        # each shard whole or not at all (workloads.files); TensorFlow's own I/O errors
        # (a full disk) become the same one line naming the shard
        with replacing(path) as tmp, _tf_io(path), tf.io.TFRecordWriter(str(tmp)) as writer:
            for _ in range(count):
                h = int(image_size * rng.uniform(0.75, 1.0))
                w = int(image_size * rng.uniform(0.8, 1.25))
                img = _image(rng, h, w)
                jpeg = tf.io.encode_jpeg(img, quality=quality).numpy()
                x0, y0 = rng.uniform(0, 0.5, size=2)
                x1, y1 = x0 + rng.uniform(0.3, 0.5), y0 + rng.uniform(0.3, 0.5)
                label = int(rng.integers(1, classes + 1))
                ex = _example(jpeg, h, w, label, [x0, y0, x1, y1], f"gen_{n:08d}.JPEG")
                writer.write(ex.SerializeToString())
                n += 1
        files.append(str(path))
        total += path.stat().st_size
    return WriteSummary(out_dir=str(out), files=files, images=n, bytes=total)
