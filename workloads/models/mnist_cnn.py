"""The Keras MNIST CNN (the classic ``mnist_cnn.py`` example the VMware MNIST studies ran).

28x28x1 input, conv 32 3x3 ReLU, conv 64 3x3 ReLU, maxpool 2, dropout 0.25, flatten, dense 128
ReLU, dropout 0.5, dense ``classes`` (logits). 1,199,882 parameters with 10 classes.
"""

from __future__ import annotations

from typing import Any


def build(size: int = 28, classes: int = 10) -> Any:
    import keras
    from keras import layers

    inputs = keras.Input(shape=(size, size, 1), name="images")
    x = layers.Conv2D(32, 3, activation="relu", name="conv1")(inputs)
    x = layers.Conv2D(64, 3, activation="relu", name="conv2")(x)
    x = layers.MaxPooling2D(2, name="pool")(x)
    x = layers.Dropout(0.25, name="drop1")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(128, activation="relu", name="fc1")(x)
    x = layers.Dropout(0.5, name="drop2")(x)
    outputs = layers.Dense(classes, name="logits")(x)
    return keras.Model(inputs, outputs, name="mnist_cnn")
