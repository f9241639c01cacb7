"""ImageNet TFRecord input pipeline, as tf_cnn_benchmarks' training preprocessing.

Shards are the ones ``build_imagenet_data.py`` writes (and :mod:`imagenet_writer` imitates):
``train-00000-of-01024`` ... holding ``tf.train.Example`` records with ``image/encoded`` (JPEG),
``image/class/label`` and ``image/object/bbox/{xmin,ymin,xmax,ymax}``.

Pipeline (``tf_cnn_benchmarks/preprocessing.py``, ``RecordInputImagePreprocessor`` /
``train_image`` with distortions): list files -> interleave TFRecord readers -> shuffle ->
repeat -> parse -> decode JPEG cropped to a distorted bounding box
(``sample_distorted_bounding_box``: min_object_covered 0.1, aspect ratio 0.75-1.33, area
0.05-1.0, 100 attempts, whole image if no box) -> random left/right flip -> bilinear resize to
the model's input -> scale to [-1, 1] -> batch (drop remainder) -> prefetch.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Any

from workloads.errors import InputError


@dataclass(frozen=True)
class PipelineOptions:
    shuffle_buffer: int = 10000
    cycle_length: int = 10
    label_offset: int = 0  # subtract from stored labels (ImageNet's are 1..1000)
    seed: int | None = None


def list_shards(data_dir: str | os.PathLike[str], split: str = "train") -> list[str]:
    """The shard files of ``split`` in ``data_dir``; a clear error when there are none."""
    data_dir = os.fspath(data_dir)
    if not os.path.isdir(data_dir):
        raise InputError(f"data_dir {data_dir!r} is not a directory")
    files = sorted(glob.glob(os.path.join(data_dir, f"{split}-*-of-*")))
    if not files:
        raise InputError(
            f"data_dir {data_dir!r} holds no {split}-*-of-* TFRecord shards "
            "(write some with: gpulab data imagenet-like --images N --out-dir DIR)"
        )
    return files


def parse_example(serialized: Any) -> tuple[Any, Any, Any]:
    """One ImageNet Example: (JPEG bytes, int32 label, bbox [1, n, 4] as ymin,xmin,ymax,xmax)."""
    import tensorflow as tf

    feature_map: dict[str, tf.io.FixedLenFeature | tf.io.VarLenFeature] = {
        "image/encoded": tf.io.FixedLenFeature([], tf.string, default_value=""),
        "image/class/label": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        "image/class/text": tf.io.FixedLenFeature([], tf.string, default_value=""),
    }
    box = tf.io.VarLenFeature(dtype=tf.float32)
    for k in ("xmin", "ymin", "xmax", "ymax"):
        feature_map[f"image/object/bbox/{k}"] = box
    features = tf.io.parse_single_example(serialized, feature_map)
    label = tf.cast(features["image/class/label"], tf.int32)
    coords = [
        tf.expand_dims(features[f"image/object/bbox/{k}"].values, 0)
        for k in ("ymin", "xmin", "ymax", "xmax")
    ]
    bbox = tf.concat(coords, 0)
    bbox = tf.expand_dims(bbox, 0)
    bbox = tf.transpose(bbox, [0, 2, 1])
    return features["image/encoded"], label, bbox


def train_image(
    image_buffer: Any, height: int, width: int, bbox: Any, seed: int | None = None
) -> Any:
    """Distorted-bbox crop + flip + bilinear resize of one JPEG; float32 in [0, 255]."""
    import tensorflow as tf

    begin, size, _ = tf.image.sample_distorted_bounding_box(
        tf.image.extract_jpeg_shape(image_buffer),
        bounding_boxes=bbox,
        min_object_covered=0.1,
        aspect_ratio_range=[0.75, 1.33],
        area_range=[0.05, 1.0],
        max_attempts=100,
        use_image_if_no_bounding_boxes=True,
        seed=seed or 0,
    )
    offset_y, offset_x, _ = tf.unstack(begin)
    target_h, target_w, _ = tf.unstack(size)
    crop_window = tf.stack([offset_y, offset_x, target_h, target_w])
    image = tf.image.decode_and_crop_jpeg(image_buffer, crop_window, channels=3)
    image = tf.image.random_flip_left_right(image, seed=seed)
    image = tf.image.resize(image, [height, width], method=tf.image.ResizeMethod.BILINEAR)
    image.set_shape([height, width, 3])
    return image


def normalize(image: Any) -> Any:
    """[0, 255] -> [-1, 1], as tf_cnn_benchmarks: image * (1 / 127.5) - 1."""
    import tensorflow as tf

    return tf.subtract(tf.multiply(image, 1.0 / 127.5), 1.0)


def train_dataset(
    data_dir: str | os.PathLike[str],
    batch_size: int,
    image_size: int,
    options: PipelineOptions | None = None,
) -> Any:
    """An infinite ``tf.data.Dataset`` of (images [B, S, S, 3] float32 in [-1, 1], labels [B])."""
    import tensorflow as tf

    if batch_size < 1:
        raise InputError(f"batch must be >= 1, got {batch_size}")
    if image_size < 1:
        raise InputError(f"image_size must be >= 1, got {image_size}")
    opts = options or PipelineOptions()
    files = list_shards(data_dir, "train")
    autotune = tf.data.AUTOTUNE
    ds = tf.data.Dataset.from_tensor_slices(files)
    ds = ds.shuffle(len(files), seed=opts.seed).repeat()
    ds = ds.interleave(
        lambda f: tf.data.TFRecordDataset(f, buffer_size=8 << 20),
        cycle_length=min(opts.cycle_length, len(files)),
        num_parallel_calls=autotune,
        deterministic=opts.seed is not None,
    )
    ds = ds.shuffle(opts.shuffle_buffer, seed=opts.seed)

    def _preprocess(serialized: Any) -> tuple[Any, Any]:
        buf, label, bbox = parse_example(serialized)
        image = train_image(buf, image_size, image_size, bbox, seed=opts.seed)
        return normalize(image), label - opts.label_offset

    ds = ds.map(_preprocess, num_parallel_calls=autotune)
    ds = ds.batch(batch_size, drop_remainder=True)
    return ds.prefetch(autotune)
