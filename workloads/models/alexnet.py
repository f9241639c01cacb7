"""AlexNet exactly as tf_cnn_benchmarks' ``alexnet_model.AlexnetModel``.

227x227 input (224 + 3: the first convolution is VALID), conv 64 11x11/4 VALID, maxpool 3/2,
conv 192 5x5, maxpool 3/2, conv 384 3x3, conv 384 3x3, conv 256 3x3, maxpool 3/2, FC 4096,
dropout, FC 4096, dropout, FC ``classes``. Convolutions are SAME unless noted, with bias and
ReLU; pools are VALID; no local response normalization (tf_cnn leaves it out). At 227 px the
flattened feature map is 6x6x256 = 9216, as in tf_cnn's reshape; smaller CI inputs flatten
whatever the last pool yields.
"""

from __future__ import annotations

from typing import Any


def build(size: int = 227, classes: int = 1000) -> Any:
    import keras
    from keras import layers

    inputs = keras.Input(shape=(size, size, 3), name="images")
    x = layers.Conv2D(64, 11, strides=4, padding="valid", activation="relu", name="conv1")(inputs)
    x = layers.MaxPooling2D(3, strides=2, padding="valid", name="pool1")(x)
    x = layers.Conv2D(192, 5, padding="same", activation="relu", name="conv2")(x)
    x = layers.MaxPooling2D(3, strides=2, padding="valid", name="pool2")(x)
    x = layers.Conv2D(384, 3, padding="same", activation="relu", name="conv3")(x)
    x = layers.Conv2D(384, 3, padding="same", activation="relu", name="conv4")(x)
    x = layers.Conv2D(256, 3, padding="same", activation="relu", name="conv5")(x)
    x = layers.MaxPooling2D(3, strides=2, padding="valid", name="pool5")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(4096, activation="relu", name="fc6")(x)
    x = layers.Dropout(0.5, name="drop6")(x)
    x = layers.Dense(4096, activation="relu", name="fc7")(x)
    x = layers.Dropout(0.5, name="drop7")(x)
    outputs = layers.Dense(classes, name="logits")(x)
    return keras.Model(inputs, outputs, name="alexnet")
