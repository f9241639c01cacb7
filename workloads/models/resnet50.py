"""ResNet-50 v1 at 224x224 (He et al. 2015), the Keras 3 definition, random weights.

Logits output (no softmax): the training step applies a from-logits cross entropy.
"""

from __future__ import annotations

from typing import Any


def build(size: int = 224, classes: int = 1000) -> Any:
    import keras

    return keras.applications.ResNet50(
        weights=None,
        include_top=True,
        input_shape=(size, size, 3),
        classes=classes,
        classifier_activation=None,
    )
