"""Model definitions: parameter counts at full size (1000 classes) and tf_cnn AlexNet shapes.

Building a model creates its variables but runs nothing, so this is cheap.
"""

from __future__ import annotations

import pytest

from workloads.errors import InputError
from workloads.models import MODELS, get_model

pytestmark = pytest.mark.tf

# tf_cnn_benchmarks AlexNet with 1000 classes: conv 23,296 + 307,392 + 663,936 + 1,327,488 +
# 884,992; fc 9216*4096+4096, 4096*4096+4096, 4096*1000+1000.
ALEXNET_PARAMS = (
    (11 * 11 * 3 * 64 + 64)
    + (5 * 5 * 64 * 192 + 192)
    + (3 * 3 * 192 * 384 + 384)
    + (3 * 3 * 384 * 384 + 384)
    + (3 * 3 * 384 * 256 + 256)
    + (9216 * 4096 + 4096)
    + (4096 * 4096 + 4096)
    + (4096 * 1000 + 1000)
)


def test_registry_names_and_paper_defaults():
    assert set(MODELS) >= {"alexnet", "inception_v3", "resnet50", "mnist_cnn"}
    assert MODELS["inception_v3"].default_batch == 32
    assert MODELS["resnet50"].default_batch == 32
    assert MODELS["alexnet"].default_batch == 512
    assert MODELS["alexnet"].input_shape() == (227, 227, 3)
    assert MODELS["inception_v3"].input_shape() == (299, 299, 3)
    assert MODELS["resnet50"].input_shape() == (224, 224, 3)
    assert MODELS["mnist_cnn"].input_shape() == (28, 28, 1)


def test_resnet50_about_25_6_million():
    n = MODELS["resnet50"].build().count_params()
    assert n == pytest.approx(25.6e6, rel=0.005), n


def test_inception_v3_about_23_9_million():
    n = MODELS["inception_v3"].build().count_params()
    assert n == pytest.approx(23.9e6, rel=0.005), n


def test_alexnet_is_tf_cnn_benchmarks_alexnet():
    model = MODELS["alexnet"].build()
    assert model.count_params() == ALEXNET_PARAMS == 61_838_248
    shapes = {layer.name: tuple(layer.output.shape[1:]) for layer in model.layers[1:]}
    assert shapes["conv1"] == (55, 55, 64)  # 11x11/4 VALID on 227
    assert shapes["pool1"] == (27, 27, 64)
    assert shapes["conv2"] == (27, 27, 192)
    assert shapes["pool2"] == (13, 13, 192)
    assert shapes["conv5"] == (13, 13, 256)
    assert shapes["pool5"] == (6, 6, 256)
    assert shapes["flatten"] == (9216,)  # tf_cnn's reshape [-1, 256*6*6]
    kinds = [type(layer).__name__ for layer in model.layers]
    assert kinds.count("Conv2D") == 5 and kinds.count("Dense") == 3
    assert kinds.count("Dropout") == 2 and kinds.count("MaxPooling2D") == 3
    assert not any("Normalization" in k for k in kinds)  # no LRN, no batch norm


def test_mnist_cnn_parameters():
    assert MODELS["mnist_cnn"].build().count_params() == 1_199_882


@pytest.mark.parametrize("name", sorted(MODELS))
def test_smallest_image_size_builds_and_one_less_is_refused(name):
    spec = MODELS[name]
    model = spec.build(spec.min_image_size)
    assert tuple(model.output_shape) == (None, spec.num_classes)
    with pytest.raises(InputError, match=f"at least {spec.min_image_size} px"):
        spec.build(spec.min_image_size - 1)
    with pytest.raises(ValueError):  # the architecture itself cannot take one pixel less
        spec.builder(spec.min_image_size - 1, spec.num_classes)


def test_unknown_model_names_the_known_ones():
    with pytest.raises(InputError, match=r"unknown model 'vgg16'.*alexnet"):
        get_model("vgg16")
