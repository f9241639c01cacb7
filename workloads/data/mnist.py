"""MNIST in the standard IDX format (plain or ``.gz``), read and written.

Files (LeCun's names): ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, each optionally ``.gz``. IDX header:
two zero bytes, a type code (0x08 = unsigned byte), the number of dimensions, then one
big-endian uint32 per dimension, then the data.
"""

from __future__ import annotations

import gzip
import os
import struct
from pathlib import Path
from typing import Any

from workloads.errors import InputError
from workloads.files import replacing

FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
_UBYTE = 0x08


def _open(path: Path) -> Any:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def read_idx(path: str | os.PathLike[str]) -> Any:
    """An IDX file (``.gz`` or plain) as a uint8 numpy array of the shape its header gives."""
    import numpy as np

    p = Path(path)
    try:
        with _open(p) as fh:
            raw = fh.read()
    except (OSError, EOFError) as exc:
        raise InputError(f"IDX file {str(p)!r} cannot be read: {exc}") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise InputError(f"IDX file {str(p)!r} has no IDX magic number")
    if raw[2] != _UBYTE:
        raise InputError(f"IDX file {str(p)!r} has type code {raw[2]:#x}, only 0x08 is read")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise InputError(f"IDX file {str(p)!r} is truncated in its header")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    expected = int(np.prod(dims, dtype=np.int64))
    if len(raw) - header != expected:
        raise InputError(
            f"IDX file {str(p)!r} holds {len(raw) - header} data bytes, header says {expected}"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def write_idx(path: str | os.PathLike[str], array: Any) -> Path:
    """Write a uint8 array as IDX; gzip-compressed when ``path`` ends in ``.gz``."""
    import numpy as np

    arr = np.ascontiguousarray(array, dtype=np.uint8)
    p = Path(path)
    head = bytes([0, 0, _UBYTE, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    # whole or not at all (workloads.files: a full disk leaves no truncated file); gzip's
    # header names the file as gzip.open(p) would, not the temporary file
    with replacing(p) as tmp, open(tmp, "wb") as raw:
        if p.suffix == ".gz":
            with gzip.GzipFile(filename=str(p), mode="wb", fileobj=raw) as fh:
                fh.write(head + arr.tobytes())
        else:
            raw.write(head + arr.tobytes())
    return p


def find_file(data_dir: str | os.PathLike[str], name: str) -> Path:
    d = Path(data_dir)
    for cand in (d / name, d / f"{name}.gz"):
        if cand.is_file():
            return cand
    raise InputError(f"MNIST file {name}[.gz] not found in data_dir {str(d)!r}")


def load_mnist(data_dir: str | os.PathLike[str], split: str = "train") -> tuple[Any, Any]:
    """(images [N, 28, 28] uint8, labels [N] uint8) of ``split`` ('train' or 'test')."""
    if split not in FILES:
        raise InputError(f"MNIST split {split!r} is not one of {sorted(FILES)}")
    if not Path(data_dir).is_dir():
        raise InputError(f"data_dir {str(data_dir)!r} is not a directory")
    img_name, lbl_name = FILES[split]
    images = read_idx(find_file(data_dir, img_name))
    labels = read_idx(find_file(data_dir, lbl_name))
    if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise InputError(
            f"MNIST {split} files in {str(data_dir)!r} disagree: images {images.shape}, "
            f"labels {labels.shape}"
        )
    return images, labels


def generate_mnist_like(n: int, seed: int = 0) -> tuple[Any, Any]:
    """``n`` digit-like 28x28 uint8 images (one bright bar position per class, noise) + labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    images = np.zeros((n, 28, 28), dtype=np.uint8)
    for k in range(10):  # one blob position per class, so the data is learnable
        sel = labels == k
        r, c = 4 + 2 * (k // 5) * 5, 4 + (k % 5) * 4
        images[sel, r : r + 10, c : c + 6] = 255
    noise = rng.integers(0, 64, size=images.shape, dtype=np.uint8)
    return np.maximum(images, noise), labels


def write_mnist_like(
    out_dir: str | os.PathLike[str],
    train: int = 60000,
    test: int = 10000,
    gz: bool = True,
    seed: int = 0,
) -> list[Path]:
    """Write generated digit-like IDX files (MNIST's names and format) under ``out_dir``."""
    if train < 1 or test < 1:
        raise InputError(f"train and test counts must be >= 1, got {train} and {test}")
    paths = []
    for i, (split, n) in enumerate((("train", train), ("test", test))):
        images, labels = generate_mnist_like(n, seed + i)
        suffix = ".gz" if gz else ""
        img_name, lbl_name = FILES[split]
        paths.append(write_idx(Path(out_dir) / f"{img_name}{suffix}", images))
        paths.append(write_idx(Path(out_dir) / f"{lbl_name}{suffix}", labels))
    return paths
