"""Fathom's convolutional workloads: residual (ResNet-34), vgg (VGG-19), alexnet, deepq (DQN)."""

from __future__ import annotations

from typing import Any

from workloads.fathom.workload import FathomWorkload


def _images(batch: int, shape: tuple[int, ...], classes: int, seed: int) -> tuple[Any, Any]:
    from workloads.synthetic import synthetic_batch

    return synthetic_batch(shape, batch, classes, seed=seed)  # type: ignore[arg-type]


def _classifier(
    name: str, model_name: str, x_in: Any, features: Any, batch: int, classes: int, seed: int
) -> FathomWorkload:
    """The model from ``x_in`` to one logit per class over ``features``, trained with cross
    entropy on generated images of ``x_in``'s shape."""
    import keras
    from keras import layers

    model = keras.Model(x_in, layers.Dense(classes)(features), name=model_name)
    images, labels = _images(batch, tuple(x_in.shape[1:]), classes, seed)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return FathomWorkload(name, model, images, labels, loss, unit="images")


def _fc_head(x: Any, width: int) -> Any:
    """Flatten, then two ``width``-wide ReLU layers with dropout 0.5 (VGG's and AlexNet's)."""
    from keras import layers

    x = layers.Flatten()(x)
    x = layers.Dropout(0.5)(layers.Dense(width, activation="relu")(x))
    return layers.Dropout(0.5)(layers.Dense(width, activation="relu")(x))


def residual(batch: int, size: str) -> FathomWorkload:
    """ResNet-34: basic blocks (two 3x3 convs + identity or 1x1 projection), batch norm."""
    import keras
    from keras import layers

    px, classes, blocks, width = (
        (224, 1000, (3, 4, 6, 3), 64) if size == "full" else (32, 10, (1, 1), 8)
    )
    x_in = keras.Input((px, px, 3))
    x = layers.Conv2D(width, 7, strides=2, padding="same", use_bias=False)(x_in)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    for stage, count in enumerate(blocks):
        filters = width * 2**stage
        for i in range(count):
            stride = 2 if (i == 0 and stage > 0) else 1
            shortcut = x
            y = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
            y = layers.ReLU()(layers.BatchNormalization()(y))
            y = layers.Conv2D(filters, 3, padding="same", use_bias=False)(y)
            y = layers.BatchNormalization()(y)
            if stride != 1 or shortcut.shape[-1] != filters:
                shortcut = layers.Conv2D(filters, 1, strides=stride, use_bias=False)(shortcut)
                shortcut = layers.BatchNormalization()(shortcut)
            x = layers.ReLU()(layers.Add()([y, shortcut]))
    x = layers.GlobalAveragePooling2D()(x)
    return _classifier("residual", "residual", x_in, x, batch, classes, 11)


def vgg(batch: int, size: str) -> FathomWorkload:
    """VGG-19 (configuration E): 2-2-4-4-4 3x3 convs, 3 FC layers."""
    import keras
    from keras import layers

    px, classes, div, fc = (224, 1000, 1, 4096) if size == "full" else (32, 10, 16, 32)
    x_in = keras.Input((px, px, 3))
    x = x_in
    for convs, filters in ((2, 64), (2, 128), (4, 256), (4, 512), (4, 512)):
        for _ in range(convs):
            x = layers.Conv2D(filters // div, 3, padding="same", activation="relu")(x)
        x = layers.MaxPooling2D(2)(x)
    return _classifier("vgg", "vgg19", x_in, _fc_head(x, fc), batch, classes, 12)


def alexnet(batch: int, size: str) -> FathomWorkload:
    """AlexNet as Fathom (Krizhevsky 2012 single tower, 96-256-384-384-256, no LRN)."""
    import keras
    from keras import layers

    px, classes, div, fc = (224, 1000, 1, 4096) if size == "full" else (67, 10, 16, 32)
    x_in = keras.Input((px, px, 3))
    x = layers.Conv2D(96 // div, 11, strides=4, padding="same", activation="relu")(x_in)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = layers.Conv2D(256 // div, 5, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = layers.Conv2D(384 // div, 3, padding="same", activation="relu")(x)
    x = layers.Conv2D(384 // div, 3, padding="same", activation="relu")(x)
    x = layers.Conv2D(256 // div, 3, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(3, strides=2)(x)
    return _classifier("alexnet", "fathom_alexnet", x_in, _fc_head(x, fc), batch, classes, 13)


def deepq(batch: int, size: str) -> FathomWorkload:
    """DQN (Mnih et al. 2015): 32 8x8/4, 64 4x4/2, 64 3x3/1, FC 512, one Q value per action.

    The loss is the Q-learning Huber loss on the actions taken, against given targets
    (``r + gamma max Q'`` in a real agent; synthetic here). Targets hold (action, target).
    """
    import keras
    from keras import layers, ops

    px, actions, div = (84, 18, 1) if size == "full" else (36, 4, 8)
    x_in = keras.Input((px, px, 4), name="frames")
    x = layers.Rescaling(1.0 / 255)(x_in)
    x = layers.Conv2D(32 // div, 8, strides=4, activation="relu")(x)
    x = layers.Conv2D(64 // div, 4, strides=2, activation="relu")(x)
    x = layers.Conv2D(64 // div, 3, strides=1, activation="relu")(x)
    x = layers.Dense(512 // div, activation="relu")(layers.Flatten()(x))
    model = keras.Model(x_in, layers.Dense(actions)(x), name="deepq")
    frames = keras.random.randint((batch, px, px, 4), 0, 256, dtype="int32", seed=14)
    frames = ops.cast(frames, "float32")
    taken = ops.cast(
        keras.random.randint((batch, 1), 0, actions, dtype="int32", seed=15), "float32"
    )
    targets = ops.concatenate([taken, keras.random.normal((batch, 1), seed=16)], axis=1)
    huber = keras.losses.Huber()

    def q_loss(y: Any, q: Any) -> Any:
        action = ops.cast(y[:, 0], "int32")
        chosen = ops.sum(q * ops.one_hot(action, actions), axis=1)
        return huber(y[:, 1], chosen)

    return FathomWorkload("deepq", model, frames, targets, q_loss, unit="frames")
