"""Inception v3 at 299x299 (Szegedy et al. 2015), the Keras 3 definition, random weights.

Logits output (no softmax): the training step applies a from-logits cross entropy.
"""

from __future__ import annotations

from typing import Any


def build(size: int = 299, classes: int = 1000) -> Any:
    import keras

    return keras.applications.InceptionV3(
        weights=None,
        include_top=True,
        input_shape=(size, size, 3),
        classes=classes,
        classifier_activation=None,
    )
