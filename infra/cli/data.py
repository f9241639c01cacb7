"""``gpulab data``: write input data for the real-data experiments.

- ``gpulab data imagenet-like --images N --out DIR``: ImageNet-format TFRecord shards
  (``train-NNNNN-of-MMMMM``: JPEG + label + bounding box) from generated images, so a lab
  without ImageNet still exercises file reads, JPEG decode and tf_cnn's preprocessing. Point
  ``$GPULAB_DATA_DIR`` at DIR.
- ``gpulab data mnist-like --out DIR``: MNIST IDX files (LeCun's names, ``.gz`` by default)
  of generated digit-like images. Point ``$GPULAB_MNIST_DIR`` at DIR.
"""

from __future__ import annotations

import time

import typer

from infra.cli.errors import UsageError
from infra.cli.options import int_option

# Upper bounds of the options (a typo is refused before anything is written).
MAX_IMAGES = 2_000_000  # ImageNet's training set is 1,281,167 images
MAX_SHARDS = 1024  # ImageNet's own training shard count
MAX_IMAGE_SIDE = 2048  # px
MAX_CLASSES = 21843  # ImageNet-21k
MAX_MNIST = 1_000_000  # per split (MNIST has 60,000 + 10,000)
MAX_SEED = 2**32 - 1


def _check_out(out: str) -> None:
    """--out must be a directory or not exist yet (nothing is made before the checks pass)."""
    from pathlib import Path

    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {out!r} exists and is not a directory")
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise UsageError(f"--out {out!r}: {str(parent)!r} is not a directory")


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(
        help="Write input data (ImageNet-format shards, MNIST IDX files).", no_args_is_help=True
    )
    app.add_typer(data_app, name="data")

    @data_app.command("imagenet-like")
    def imagenet_like(
        images_opt: str = typer.Option(
            ..., "--images", metavar="N", help=f"number of images to write (1..{MAX_IMAGES})"
        ),
        out: str = typer.Option(..., "--out", help="directory for the shards"),
        shards_opt: str | None = typer.Option(
            None, "--shards", metavar="S", help=f"shard files (default N/256, at most {MAX_SHARDS})"
        ),
        size_opt: str = typer.Option(
            "320",
            "--image-size",
            metavar="PX",
            help=f"typical image side in px (8..{MAX_IMAGE_SIDE})",
        ),
        classes_opt: str = typer.Option(
            "1000", "--classes", metavar="C", help=f"label range 1..classes (at most {MAX_CLASSES})"
        ),
        split: str = typer.Option("train", "--split", help="train or validation"),
        seed_opt: str = typer.Option("0", "--seed", metavar="SEED", help="random seed"),
    ) -> None:
        """Write ImageNet-format TFRecord shards from generated JPEG images."""
        images = int_option("--images", images_opt, 1, MAX_IMAGES)
        shards = int_option("--shards", shards_opt, 1, MAX_SHARDS)
        image_size = int_option("--image-size", size_opt, 8, MAX_IMAGE_SIDE)
        classes = int_option("--classes", classes_opt, 1, MAX_CLASSES)
        seed = int_option("--seed", seed_opt, 0, MAX_SEED)
        assert images is not None and image_size is not None
        assert classes is not None and seed is not None
        if shards is not None and shards > images:
            raise UsageError(f"--shards must be at most --images ({images}), got {shards}")
        if split not in ("train", "validation"):
            raise UsageError(f"--split must be train or validation, got {split[:40]!r}")
        _check_out(out)
        from rich.console import Console

        from workloads.data.imagenet_writer import write_imagenet_like

        console = Console(stderr=True)
        start = time.perf_counter()
        with console.status(f"writing {images} images to {out} ..."):
            summary = write_imagenet_like(out, images, shards, image_size, classes, split, seed)
        secs = time.perf_counter() - start
        typer.echo(
            f"wrote {summary.images} images in {len(summary.files)} shards "
            f"({summary.bytes / 1e6:.1f} MB) to {summary.out_dir} in {secs:.1f} s"
        )

    @data_app.command("mnist-like")
    def mnist_like(
        out: str = typer.Option(..., "--out", help="directory for the IDX files"),
        train_opt: str = typer.Option(
            "60000", "--train", metavar="N", help=f"training images (1..{MAX_MNIST})"
        ),
        test_opt: str = typer.Option(
            "10000", "--test", metavar="N", help=f"test images (1..{MAX_MNIST})"
        ),
        plain: bool = typer.Option(False, "--plain", help="write uncompressed IDX (no .gz)"),
        seed_opt: str = typer.Option("0", "--seed", metavar="SEED", help="random seed"),
    ) -> None:
        """Write MNIST-format IDX files of generated digit-like images."""
        from workloads.data.mnist import write_mnist_like

        train = int_option("--train", train_opt, 1, MAX_MNIST)
        test = int_option("--test", test_opt, 1, MAX_MNIST)
        seed = int_option("--seed", seed_opt, 0, MAX_SEED)
        assert train is not None and test is not None and seed is not None
        _check_out(out)

        paths = write_mnist_like(out, train, test, gz=not plain, seed=seed)
        for p in paths:
            typer.echo(str(p))
