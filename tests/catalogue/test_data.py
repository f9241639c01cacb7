"""TFRecord and IDX round trips on files the tests write (real TensorFlow, tiny sizes)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from workloads.data import imagenet, mnist
from workloads.data.imagenet_writer import write_imagenet_like
from workloads.errors import InputError


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("imagenet")
    summary = write_imagenet_like(out, images=24, shards=3, image_size=48, classes=5, seed=1)
    return out, summary


@pytest.mark.integration
def test_writer_names_shards_like_imagenet(shards) -> None:
    out, summary = shards
    names = sorted(p.name for p in out.iterdir())
    assert names == [f"train-{i:05d}-of-00003" for i in range(3)]
    assert summary.images == 24 and summary.bytes > 24 * 200


def test_records_parse_back_as_jpeg_with_label_and_box(shards) -> None:
    import tensorflow as tf

    out, _ = shards
    ds = tf.data.TFRecordDataset(imagenet.list_shards(out))
    count = 0
    for serialized in ds:
        buf, label, bbox = imagenet.parse_example(serialized)
        img = tf.io.decode_jpeg(buf).numpy()
        assert img.ndim == 3 and img.shape[2] == 3 and 36 <= img.shape[0] <= 48
        assert 1 <= int(label) <= 5
        box = bbox.numpy()
        assert box.shape == (1, 1, 4) and (box[..., 2:] > box[..., :2]).all()
        count += 1
    assert count == 24


def test_train_pipeline_batches_in_minus_one_to_one(shards) -> None:
    out, _ = shards
    ds = imagenet.train_dataset(
        out, batch_size=4, image_size=32, options=imagenet.PipelineOptions(shuffle_buffer=8)
    )
    labels = []
    for images, lbl in ds.take(8):  # 32 images from 24: the dataset repeats
        x = images.numpy()
        assert x.shape == (4, 32, 32, 3) and x.dtype == np.float32
        assert x.min() >= -1.0 and x.max() <= 1.0 and x.std() > 0.01
        labels.extend(lbl.numpy().tolist())
    assert len(labels) == 32 and set(labels) <= set(range(1, 6))


def test_missing_shards_is_one_clear_error(tmp_path) -> None:
    with pytest.raises(InputError, match="train-\\*-of-\\*"):
        imagenet.list_shards(tmp_path)
    with pytest.raises(InputError, match="not a directory"):
        imagenet.list_shards(tmp_path / "nope")


@pytest.mark.parametrize("gz", [False, True])
def test_idx_round_trip(tmp_path, gz: bool) -> None:
    arr = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    path = mnist.write_idx(tmp_path / ("x.gz" if gz else "x"), arr)
    raw = gzip.decompress(path.read_bytes()) if gz else path.read_bytes()
    assert raw[:4] == b"\x00\x00\x08\x03" and raw[4:8] == b"\x00\x00\x00\x02"
    np.testing.assert_array_equal(mnist.read_idx(path), arr)


def test_idx_truncated_and_bad_magic_are_rejected(tmp_path) -> None:
    path = mnist.write_idx(tmp_path / "x", np.zeros((3, 4), np.uint8))
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(InputError, match="header says 12"):
        mnist.read_idx(path)
    path.write_bytes(b"\x01\x02\x08\x01")
    with pytest.raises(InputError, match="magic"):
        mnist.read_idx(path)


def test_mnist_directory_plain_and_gz(tmp_path) -> None:
    mnist.write_mnist_like(tmp_path / "gz", train=50, test=10, gz=True)
    mnist.write_mnist_like(tmp_path / "plain", train=50, test=10, gz=False)
    xg, yg = mnist.load_mnist(tmp_path / "gz", "train")
    xp, yp = mnist.load_mnist(tmp_path / "plain", "train")
    assert xg.shape == (50, 28, 28) and yg.shape == (50,)
    np.testing.assert_array_equal(xg, xp)
    np.testing.assert_array_equal(yg, yp)
    assert mnist.load_mnist(tmp_path / "gz", "test")[0].shape == (10, 28, 28)
    with pytest.raises(InputError, match="t10k-images-idx3-ubyte"):
        mnist.load_mnist(tmp_path / "gz" / "..", "test")


def test_real_source_overlaps_input_and_wraps_labels(shards) -> None:
    """The ``real`` source on TensorFlow: batches wrapped to the model's classes, and the
    overlap it used named (host prefetch here: no GPU)."""
    from workloads.data.sources import real_source
    from workloads.models import MODELS

    out, _ = shards
    spec = MODELS["alexnet"]
    get_batch = real_source(spec, 4, 32, {"data_dir": str(out)})
    images, labels = get_batch()
    assert tuple(images.shape) == (4, 32, 32, 3)
    assert int(np.max(labels.numpy())) < spec.num_classes
    assert get_batch.overlap.startswith("tf.data")  # type: ignore[attr-defined]


def test_jax_double_buffering_keeps_two_batches_on_the_device(shards) -> None:
    """JAX: device copies of the next batches are made before the step that uses them."""
    import jax

    from workloads.data.prefetch import overlapped

    out, _ = shards
    ds = imagenet.train_dataset(
        out, batch_size=2, image_size=32, options=imagenet.PipelineOptions(shuffle_buffer=4)
    )
    pulled = []
    base = iter(ds)

    def counting():
        for item in base:
            pulled.append(1)
            yield item

    get_batch = overlapped(counting(), "jax")
    images, _ = get_batch()
    assert isinstance(images, jax.Array) and images.shape == (2, 32, 32, 3)
    assert len(pulled) == 3  # the batch returned, plus two already on their way
    assert "device_put" in get_batch.overlap
