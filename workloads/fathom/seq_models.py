"""Fathom's sequence and generative workloads: seq2seq, memnet, speech, autoenc (Keras 3)."""

from __future__ import annotations

from typing import Any

from workloads.fathom.workload import FathomWorkload


def _tokens(batch: int, length: int, vocab: int, seed: int, low: int = 0) -> Any:
    import keras

    return keras.random.randint((batch, length), low, vocab, dtype="int32", seed=seed)


def _sparse_ce() -> Any:
    import keras

    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def seq2seq(batch: int, size: str) -> FathomWorkload:
    """Encoder-decoder LSTMs with dot-product attention over the encoder states."""
    import keras
    from keras import layers

    vocab, units, depth, length = (10000, 512, 3, 30) if size == "full" else (50, 16, 1, 6)
    src = keras.Input((length,), dtype="int32", name="source")
    tgt = keras.Input((length,), dtype="int32", name="target_in")
    x = layers.Embedding(vocab, units)(src)
    states: list[Any] = []
    for _ in range(depth):
        x, h, c = layers.LSTM(units, return_sequences=True, return_state=True)(x)
        states = [h, c]
    y = layers.Embedding(vocab, units)(tgt)
    for i in range(depth):
        y = layers.LSTM(units, return_sequences=True)(y, initial_state=states if i == 0 else None)
    context = layers.Attention()([y, x])
    out = layers.Dense(vocab)(layers.Concatenate()([y, context]))
    model = keras.Model([src, tgt], out, name="seq2seq")
    inputs = [_tokens(batch, length, vocab, 1), _tokens(batch, length, vocab, 2)]
    return FathomWorkload(
        "seq2seq", model, inputs, _tokens(batch, length, vocab, 3), _sparse_ce(), unit="sentences"
    )


def memnet(batch: int, size: str) -> FathomWorkload:
    """End-to-end memory network (Sukhbaatar et al. 2015), adjacent weight tying, K hops."""
    import keras
    from keras import layers, ops

    vocab, embed, memory, words, hops = (180, 64, 50, 12, 3) if size == "full" else (20, 8, 5, 4, 2)
    story = keras.Input((memory, words), dtype="int32", name="story")
    query = keras.Input((words,), dtype="int32", name="query")
    embeds = [layers.Embedding(vocab, embed) for _ in range(hops + 1)]
    u = ops.sum(layers.Embedding(vocab, embed)(query), axis=1)
    for k in range(hops):
        m = ops.sum(embeds[k](story), axis=2)  # (B, memory, embed)
        c = ops.sum(embeds[k + 1](story), axis=2)
        p = ops.softmax(ops.einsum("bme,be->bm", m, u), axis=-1)
        u = u + ops.einsum("bm,bme->be", p, c)
    out = layers.Dense(vocab)(u)
    model = keras.Model([story, query], out, name="memnet")
    import keras as k_

    inputs = [
        k_.random.randint((batch, memory, words), 0, vocab, dtype="int32", seed=4),
        _tokens(batch, words, vocab, 5),
    ]
    labels = k_.random.randint((batch,), 0, vocab, dtype="int32", seed=6)
    return FathomWorkload("memnet", model, inputs, labels, _sparse_ce(), unit="questions")


def speech(batch: int, size: str) -> FathomWorkload:
    """Deep Speech 2-style: 2 strided 2-D convs, bidirectional GRUs, per-frame chars, CTC."""
    import keras
    from keras import layers, ops

    frames, feats, chars, units, rnns, label_len = (
        (400, 161, 29, 512, 3, 60) if size == "full" else (24, 16, 6, 8, 1, 3)
    )
    x_in = keras.Input((frames, feats), name="spectrogram")
    x = layers.Reshape((frames, feats, 1))(x_in)
    x = layers.Conv2D(32, (11, 41), strides=(2, 2), padding="same", activation="relu")(x)
    x = layers.Conv2D(32, (11, 21), strides=(1, 2), padding="same", activation="relu")(x)
    t = (frames + 1) // 2
    x = layers.Reshape((t, -1))(x)
    for _ in range(rnns):
        x = layers.Bidirectional(layers.GRU(units, return_sequences=True))(x)
    logits = layers.Dense(chars + 1)(x)  # class 0 is the CTC blank
    model = keras.Model(x_in, logits, name="speech")
    spectrogram = keras.random.normal((batch, frames, feats), seed=7)
    labels = keras.random.randint((batch, label_len), 1, chars + 1, dtype="int32", seed=8)

    def ctc(y_true: Any, y_pred: Any) -> Any:
        n = ops.shape(y_pred)[0]
        target_len = ops.full((n,), label_len, dtype="int32")
        out_len = ops.full((n,), t, dtype="int32")
        return ops.mean(ops.ctc_loss(y_true, y_pred, target_len, out_len, mask_index=0))

    return FathomWorkload("speech", model, spectrogram, labels, ctc, unit="utterances")


def autoenc(batch: int, size: str) -> FathomWorkload:
    """Variational autoencoder (Kingma and Welling 2014) on 28x28 images, Gaussian latent."""
    import keras
    from keras import layers, ops

    pixels, hidden, latent = (784, 500, 20) if size == "full" else (64, 16, 4)

    class Sample(layers.Layer):  # type: ignore[misc]  # keras has no type information
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self.seed = keras.random.SeedGenerator(9)

        def call(self, mu: Any, logvar: Any) -> Any:
            eps = keras.random.normal(ops.shape(mu), seed=self.seed)
            return mu + ops.exp(0.5 * logvar) * eps

    x_in = keras.Input((pixels,), name="image")
    h = layers.Dense(hidden, activation="softplus")(x_in)
    h = layers.Dense(hidden, activation="softplus")(h)
    mu, logvar = layers.Dense(latent)(h), layers.Dense(latent)(h)
    z = Sample()(mu, logvar)
    d = layers.Dense(hidden, activation="softplus")(z)
    d = layers.Dense(hidden, activation="softplus")(d)
    recon = layers.Dense(pixels)(d)
    model = keras.Model(x_in, layers.Concatenate()([recon, mu, logvar]), name="autoenc")
    images = keras.random.uniform((batch, pixels), seed=10)

    def vae_loss(x: Any, out: Any) -> Any:
        logits, m, lv = out[:, :pixels], out[:, pixels : pixels + latent], out[:, pixels + latent :]
        rec = ops.sum(ops.binary_crossentropy(x, logits, from_logits=True), axis=-1)
        kl = -0.5 * ops.sum(1 + lv - ops.square(m) - ops.exp(lv), axis=-1)
        return ops.mean(rec + kl)

    return FathomWorkload("autoenc", model, images, images, vae_loss, unit="images")
