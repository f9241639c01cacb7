"""Model registry: ``MODELS[name]`` -> :class:`ModelSpec`.

Importing this package is cheap: Keras is imported only when a model is built. Every model is a
Keras 3 definition, so it runs on the TensorFlow, JAX and PyTorch backends alike. Data format is
NHWC (channels last), as in the CLOSER 2018 configuration (Table 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workloads.errors import InputError


@dataclass(frozen=True)
class ModelSpec:
    name: str
    default_batch: int  # per device, from the paper (tf_cnn_benchmarks Table 1)
    image_size: int  # full square input size
    channels: int
    num_classes: int
    min_image_size: int  # smallest square input the architecture accepts
    builder: Callable[..., Any]  # builder(image_size, num_classes) -> keras.Model
    description: str = ""
    # What synthetic pixels (0-255) are multiplied by before they reach the model: the scale
    # of the input the model is trained on (1: tf_cnn_benchmarks' raw pixels).
    input_scale: float = 1.0

    def input_shape(self, image_size: int | None = None) -> tuple[int, int, int]:
        size = image_size or self.image_size
        return (size, size, self.channels)

    def check_image_size(self, image_size: int | None) -> int:
        size = image_size or self.image_size
        if isinstance(size, bool) or not isinstance(size, int) or size < self.min_image_size:
            raise InputError(
                f"image_size {image_size!r} is too small for model {self.name!r} "
                f"(at least {self.min_image_size} px)"
            )
        return size

    def build(self, image_size: int | None = None, num_classes: int | None = None) -> Any:
        """Build the Keras model (uncompiled) at ``image_size`` (default: full size)."""
        size = self.check_image_size(image_size)
        return self.builder(size, num_classes or self.num_classes)


def _alexnet(size: int, classes: int) -> Any:
    from workloads.models.alexnet import build

    return build(size, classes)


def _inception_v3(size: int, classes: int) -> Any:
    from workloads.models.inception_v3 import build

    return build(size, classes)


def _resnet50(size: int, classes: int) -> Any:
    from workloads.models.resnet50 import build

    return build(size, classes)


def _mnist_cnn(size: int, classes: int) -> Any:
    from workloads.models.mnist_cnn import build

    return build(size, classes)


MODELS: dict[str, ModelSpec] = {
    "alexnet": ModelSpec(
        "alexnet",
        512,
        227,
        3,
        1000,
        67,
        _alexnet,
        "tf_cnn_benchmarks AlexNet (224+3 input, no LRN)",
    ),
    "inception_v3": ModelSpec(
        "inception_v3", 32, 299, 3, 1000, 75, _inception_v3, "Inception v3 (Szegedy et al.)"
    ),
    "resnet50": ModelSpec("resnet50", 32, 224, 3, 1000, 32, _resnet50, "ResNet-50 v1 (He et al.)"),
    # input_scale: the classic example's x / 255 (raw pixels could make its SGD diverge)
    "mnist_cnn": ModelSpec(
        "mnist_cnn", 128, 28, 1, 10, 6, _mnist_cnn, "Keras MNIST CNN (2 conv + 2 dense)", 1 / 255
    ),
}


def get_model(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        raise InputError(f"unknown model {name!r} (known: {', '.join(sorted(MODELS))})") from None
