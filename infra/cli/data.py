"""``gpulab data``: write input data for the real-data experiments.

- ``gpulab data imagenet-like --images N --out-dir DIR``: ImageNet-format TFRecord shards
  (``train-NNNNN-of-MMMMM``: JPEG + label + bounding box) from generated images, so a lab
  without ImageNet still exercises file reads, JPEG decode and tf_cnn's preprocessing. Point
  ``$GPULAB_DATA_DIR`` at DIR.
- ``gpulab data mnist-like --out-dir DIR``: MNIST IDX files (LeCun's names, ``.gz`` by default)
  of generated digit-like images. Point ``$GPULAB_MNIST_DIR`` at DIR.
"""

from __future__ import annotations

import enum
import time
from typing import Annotated

import typer

from infra.cli.errors import UsageError
from infra.cli.options import add_examples, bounded, shown


class Split(enum.StrEnum):
    train = "train"
    validation = "validation"


# Upper bounds of the options (a typo is refused before anything is written).
MAX_IMAGES = 2_000_000  # ImageNet's training set is 1,281,167 images
MAX_SHARDS = 1024  # ImageNet's own training shard count
MAX_IMAGE_SIDE = 2048  # px
MAX_CLASSES = 21843  # ImageNet-21k
MAX_MNIST = 1_000_000  # per split (MNIST has 60,000 + 10,000)
MAX_SEED = 2**32 - 1


def _check_out(out: str) -> None:
    """--out-dir must be a directory or not exist yet (nothing is made before the checks pass)."""
    from pathlib import Path

    from workloads.files import reason

    path = Path(out)
    try:
        if path.exists() and not path.is_dir():
            raise UsageError(f"--out-dir {out!r} exists and is not a directory")
        parent = next((p for p in path.absolute().parents if p.exists()), None)
    except OSError as exc:  # a name longer than the file system allows, a loop of links
        raise UsageError(f"--out-dir {out!r}: {reason(exc)}") from None
    if parent is not None and not parent.is_dir():
        raise UsageError(f"--out-dir {out!r}: {str(parent)!r} is not a directory")


def _out_dir(out: str | None) -> str:
    if not out:
        raise UsageError("missing option --out-dir DIR")
    _check_out(out)
    return out


OutDirOpt = Annotated[
    str | None,
    typer.Option("--out-dir", metavar="DIR", help="directory to write to (made if missing)"),
]
SeedOpt = Annotated[int, bounded("--seed", 0, MAX_SEED, "random seed", metavar="SEED")]


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(
        help="Write input data (ImageNet-format shards, MNIST IDX files).", no_args_is_help=True
    )
    app.add_typer(data_app, name="data")

    def imagenet_like(
        images: Annotated[int, bounded("--images", 1, MAX_IMAGES, "number of images to write")],
        out_dir: OutDirOpt = None,
        shards: Annotated[
            int | None,
            bounded("--shards", 1, MAX_SHARDS, "shard files (default N/256)", metavar="S"),
        ] = None,
        image_size: Annotated[
            int,
            bounded("--image-size", 8, MAX_IMAGE_SIDE, "typical image side in px", metavar="PX"),
        ] = 320,
        classes: Annotated[
            int, bounded("--classes", 1, MAX_CLASSES, "label range 1..classes", metavar="C")
        ] = 1000,
        split: Annotated[
            Split, typer.Option("--split", help="which split's file names")
        ] = Split.train,
        seed: SeedOpt = 0,
    ) -> None:
        """Write ImageNet-format TFRecord shards from generated JPEG images."""
        if shards is not None and shards > images:
            raise UsageError(f"--shards must be at most --images ({images}), got {shards}")
        out = _out_dir(out_dir)
        from rich.console import Console

        from workloads.data.imagenet_writer import write_imagenet_like

        console = Console(stderr=True)
        start = time.perf_counter()
        with console.status(f"writing {images} images to {out} ..."):
            summary = write_imagenet_like(
                out, images, shards, image_size, classes, split.value, seed
            )
        secs = time.perf_counter() - start
        typer.echo(
            shown(
                f"wrote {summary.images} images in {len(summary.files)} shards "
                f"({summary.bytes / 1e6:.1f} MB) to {summary.out_dir} in {secs:.1f} s"
            )
        )

    def mnist_like(
        out_dir: OutDirOpt = None,
        train: Annotated[int, bounded("--train", 1, MAX_MNIST, "training images")] = 60000,
        test: Annotated[int, bounded("--test", 1, MAX_MNIST, "test images")] = 10000,
        plain: Annotated[
            bool, typer.Option("--plain", help="write uncompressed IDX (no .gz)")
        ] = False,
        seed: SeedOpt = 0,
    ) -> None:
        """Write MNIST-format IDX files of generated digit-like images."""
        out = _out_dir(out_dir)
        from workloads.data.mnist import write_mnist_like

        for p in write_mnist_like(out, train, test, gz=not plain, seed=seed):
            typer.echo(shown(str(p)))

    data_app.command("imagenet-like")(
        add_examples(
            imagenet_like,
            ["gpulab data imagenet-like --images 512 --out-dir /data/imagenet-like",
             "GPULAB_DATA_DIR=/data/imagenet-like gpulab bench --suite closer2018"],
        )
    )  # fmt: skip
    data_app.command("mnist-like")(
        add_examples(mnist_like, ["gpulab data mnist-like --out-dir /data/mnist --train 6000"])
    )
