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


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(
        help="Write input data (ImageNet-format shards, MNIST IDX files).", no_args_is_help=True
    )
    app.add_typer(data_app, name="data")

    @data_app.command("imagenet-like")
    def imagenet_like(
        images: int = typer.Option(..., "--images", help="number of images to write"),
        out: str = typer.Option(..., "--out", help="directory for the shards"),
        shards: int | None = typer.Option(None, "--shards", help="shard files (default N/256)"),
        image_size: int = typer.Option(320, "--image-size", help="typical image side in px"),
        classes: int = typer.Option(1000, "--classes", help="label range 1..classes"),
        split: str = typer.Option("train", "--split", help="train or validation"),
        seed: int = typer.Option(0, "--seed", help="random seed"),
    ) -> None:
        """Write ImageNet-format TFRecord shards from generated JPEG images."""
        if images < 1:
            raise UsageError(f"--images must be >= 1, got {images}")
        if split not in ("train", "validation"):
            raise UsageError(f"--split must be train or validation, got {split!r}")
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
        train: int = typer.Option(60000, "--train", help="training images"),
        test: int = typer.Option(10000, "--test", help="test images"),
        plain: bool = typer.Option(False, "--plain", help="write uncompressed IDX (no .gz)"),
        seed: int = typer.Option(0, "--seed", help="random seed"),
    ) -> None:
        """Write MNIST-format IDX files of generated digit-like images."""
        from workloads.data.mnist import write_mnist_like

        paths = write_mnist_like(out, train, test, gz=not plain, seed=seed)
        for p in paths:
            typer.echo(str(p))
