"""Fathom-like workloads: the eight models of rdadolf/fathom (used by the IBM containers study,
seed 003) re-implemented in Keras 3. They are *not* ports: :data:`DIFFERENCES` lists, per model,
how each differs from rdadolf/fathom (compared with its source), and every record carries
``params.fathom_port = "Fathom-like"`` and ``params.fathom_differences``.

Eight Keras 3 models with synthetic inputs made once on the device, trained with the runner's
own compiled step and timed like the CNNs (W warm-up steps excluded, T timed steps):

| name | what | input (``full``) |
|---|---|---|
| seq2seq | 3-layer LSTM encoder-decoder with dot-product attention | 2 x 30 tokens, vocab 10000 |
| memnet | end-to-end memory network, 3 hops (bAbI-sized) | 50 x 12-word story + query |
| speech | Deep Speech: 2 conv + 3 bidirectional GRU + CTC loss | 400 x 161 spectrogram |
| autoenc | variational autoencoder (MLP 784-500-500-20) | 28 x 28 |
| residual | ResNet-34 (basic blocks 3, 4, 6, 3) | 224 x 224 x 3 |
| vgg | VGG-19 | 224 x 224 x 3 |
| alexnet | AlexNet as Krizhevsky 2012 (96-256-384-384-256, no LRN) | 224 x 224 x 3 |
| deepq | DQN (Mnih 2015), Q-learning loss on sampled actions | 84 x 84 x 4 Atari frames |

``size: tiny`` (scenario option) shrinks every dimension so each trains in seconds on a CPU.
Throughput is in samples/sec (``images_per_sec`` in the record, ``params.unit`` says so).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from workloads.errors import InputError
from workloads.fathom.workload import FathomWorkload
from workloads.options import with_defaults


def _builders() -> dict[str, Callable[[int, str], FathomWorkload]]:
    from workloads.fathom import conv_models, seq_models

    return {
        "seq2seq": seq_models.seq2seq,
        "memnet": seq_models.memnet,
        "speech": seq_models.speech,
        "autoenc": seq_models.autoenc,
        "residual": conv_models.residual,
        "vgg": conv_models.vgg,
        "alexnet": conv_models.alexnet,
        "deepq": conv_models.deepq,
    }


FATHOM_MODELS = ("seq2seq", "memnet", "speech", "autoenc", "residual", "vgg", "alexnet", "deepq")
SIZES = ("full", "tiny")
PORT = "Fathom-like"
# Every model: synthetic inputs made once (Fathom reads its datasets: ImageNet, WMT, bAbI,
# TIMIT, an Atari emulator), the runner's SGD step (Fathom: each model's own optimizer),
# Keras 3 layers on TensorFlow 2 (Fathom: TensorFlow 1 graphs).
COMMON_DIFFERENCES = (
    "synthetic inputs made once on the device; Fathom reads its datasets",
    "the runner's SGD step for every model; Fathom uses each model's own optimizer",
    "Keras 3 layers on TensorFlow 2 (or JAX/PyTorch); Fathom is TensorFlow 1 graph code",
)
DIFFERENCES: dict[str, tuple[str, ...]] = {
    "seq2seq": (
        "3-layer LSTM encoder-decoder with dot-product attention and a full softmax; Fathom "
        "uses legacy embedding_attention_seq2seq with a sampled softmax",
    ),
    "memnet": ("SGD; Fathom's memory network trains with Adam",),
    "speech": (
        "2 conv + 3 bidirectional GRU layers + CTC; Fathom's speech model is 3 fully connected "
        "layers (1024) + one bidirectional RNN + a fully connected layer, CTC",
    ),
    "autoenc": ("MLP 784-500-500-20 variational autoencoder; Fathom's has one hidden layer",),
    "residual": (
        "ResNet-34 basic blocks, default batch 32; Fathom's residual uses bottleneck blocks "
        "and batch 16",
    ),
    "vgg": ("default batch 32; Fathom's VGG-19 uses batch 8 and learning rate 1e-4",),
    "alexnet": ("no LRN, default batch 128; Fathom's AlexNet has LRN and batch 64",),
    "deepq": (
        "Q-learning loss on a synthetic replay batch, SGD; Fathom plays an Atari emulator and "
        "trains with RMSProp (learning rate 0.00025)",
    ),
}


def model_names() -> tuple[str, ...]:
    return FATHOM_MODELS


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    out = with_defaults(options, {"size": "full"}, "fathom", also=("learning_rate",))
    if out["size"] not in SIZES:
        raise InputError(f"option 'size' must be one of {', '.join(SIZES)}, got {out['size']!r}")
    lr = out.get("learning_rate")
    if lr is not None and (isinstance(lr, bool) or not isinstance(lr, int | float) or lr <= 0):
        raise InputError(f"option 'learning_rate' must be a number > 0, got {lr!r}")
    return out


def build(name: str, batch: int, size: str = "full") -> FathomWorkload:
    if name not in FATHOM_MODELS:
        raise InputError(f"Fathom model {name!r} is not one of {', '.join(FATHOM_MODELS)}")
    if size not in SIZES:
        raise InputError(f"Fathom size {size!r} is not one of {', '.join(SIZES)}")
    return _builders()[name](batch, size)


def run(job: Any) -> dict[str, Any]:
    """The ``fathom`` scenario: train one Fathom model on synthetic data, timed like the CNNs
    (workloads.measure: a host sync every K steps, NVML throttle counters over the window)."""
    from workloads.measure import timed_training
    from workloads.step import build_train_step, make_optimizer, select_backend

    select_backend(job.backend)
    opts = check_options(job.options)
    work = build(job.model, job.batch, opts["size"])
    lr = float(opts.get("learning_rate", 0.001))
    step = build_train_step(work.model, make_optimizer(lr), work.loss)
    pair = (work.inputs, work.targets)
    done = timed_training(job, step, lambda: pair)
    out: dict[str, Any] = {
        "images_per_sec": done.timing.images_per_sec(job.batch),
        "step_times_s": done.timing.step_times_s,
        "batch_size": job.batch,
        "global_batch": job.batch,
        "metrics": done.metrics,
        **done.fields,
        "params": {
            "suite_model": "fathom",
            "fathom_port": PORT,
            "fathom_differences": [*DIFFERENCES[job.model], *COMMON_DIFFERENCES],
            "size": opts["size"],
            "unit": work.unit,
            "param_count": int(work.model.count_params()),
            "optimizer": "sgd",
            "learning_rate": lr,
            "backend": job.backend,
            **done.params,
        },
    }
    if done.error:
        out.update(status="failed", error=done.error)
    return out
