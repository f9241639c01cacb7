"""Scenario ``mnist_epochs``: the VMware experiment (seeds 000/002): train the MNIST CNN for E
epochs and record the wall-clock time, the number the blog compares natively vs in a VM.

Data ``real`` reads the standard IDX files (plain or ``.gz``) from option ``data_dir`` or
``$GPULAB_MNIST_DIR``; ``synthetic`` generates digit-like images of the same shape in memory.
Each step feeds a host batch (as Keras ``fit`` does on MNIST), shuffled per epoch.

Options: epochs (12), data_dir, limit (use only the first N training images; CI), seed,
learning_rate (0.05). The record (kind ``job``): ``metrics.train_wall_s`` (E epochs, the
blog's training time), ``epoch_s_<i>``, ``final_loss``, ``test_accuracy`` (on the test split
when present); ``images_per_sec`` = images x epochs / train_wall_s; ``elapsed_s`` the whole
job. The host waits for the device once per epoch (``sync_every`` = steps per epoch,
``block_times_s`` the epochs, ``step_times_s`` each epoch's time per step) and once after the
first step (``first_step_s``, the compiling step, inside the timed window as the blog timed
it); ``startup_s`` runs from the launch to the first step. NVML's throttle counters are read
around the epochs (``params.nvml_window``); with ``data: real`` the page cache is dropped
before the files are read (``params.page_cache_dropped``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from workloads.errors import InputError
from workloads.options import positive_number, with_defaults

DEFAULTS: dict[str, Any] = {"epochs": 12, "limit": None, "seed": 0, "learning_rate": 0.05}
KNOWN = {*DEFAULTS, "data_dir"}


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    out = with_defaults(options, DEFAULTS, "mnist_epochs", also=KNOWN)
    for key, low in (("epochs", 1), ("limit", 1), ("seed", 0)):
        v = out[key]
        if v is None and key == "limit":
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise InputError(f"option {key!r} must be an integer >= {low}, got {v!r}")
    positive_number(out, "learning_rate")
    if "data_dir" in out and not isinstance(out["data_dir"], str):
        raise InputError(f"option 'data_dir' must be a path, got {out['data_dir']!r}")
    return out


def model_names() -> tuple[str, ...]:
    return ("mnist_cnn",)


def load(job: Any, opts: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(train images, train labels, test pair or None) for the job's data source."""
    from workloads.data import mnist

    if job.data == "real":
        data_dir = opts.get("data_dir") or os.environ.get("GPULAB_MNIST_DIR")
        if not data_dir:
            raise InputError(
                "data 'real' for mnist_epochs needs option 'data_dir' or "
                "$GPULAB_MNIST_DIR (IDX files; gpulab data mnist-like writes some)"
            )
        x, y = mnist.load_mnist(data_dir, "train")
        try:
            test = mnist.load_mnist(data_dir, "test")
        except InputError:
            test = None
    else:
        x, y = mnist.generate_mnist_like(opts["limit"] or 60000, seed=opts["seed"])
        test = mnist.generate_mnist_like(2000, seed=opts["seed"] + 1)
    if opts["limit"]:
        x, y = x[: opts["limit"]], y[: opts["limit"]]
    return x, y, test


def run(job: Any) -> dict[str, Any]:
    import numpy as np

    from workloads.fingerprint.throttle import TimedWindow
    from workloads.measure import loss_check
    from workloads.models import get_model
    from workloads.step import build_train_step, make_optimizer, select_backend

    keras = select_backend(job.backend)
    opts = check_options(job.options)
    cache: dict[str, Any] = {}
    if job.data == "real":  # the IDX files come from the disk, not from the page cache
        from workloads.data.page_cache import drop_page_cache

        cache = drop_page_cache()
    x, y, test = load(job, opts)
    if len(x) < job.batch:
        raise InputError(f"batch {job.batch} is larger than the {len(x)} training images")
    xf = (x.astype("float32") / 255.0)[..., None]
    yi = y.astype("int32")
    model = get_model("mnist_cnn").build(28)
    step = build_train_step(model, make_optimizer(float(opts["learning_rate"])))
    rng = np.random.default_rng(opts["seed"])
    steps_per_epoch = len(xf) // job.batch
    epoch_times: list[float] = []
    last: list[Any] = []  # each epoch's last loss, on the device until the end
    first_step_s = None
    window = TimedWindow()
    with window:
        started_unix = time.time()
        start = time.perf_counter()
        for epoch in range(opts["epochs"]):
            t0 = time.perf_counter()
            order = rng.permutation(len(xf))
            out: Any = None
            for i in range(steps_per_epoch):
                idx = order[i * job.batch : (i + 1) * job.batch]
                out = step(
                    keras.ops.convert_to_tensor(xf[idx]), keras.ops.convert_to_tensor(yi[idx])
                )
                if first_step_s is None:  # the first (compiling) step, waited for once
                    step.sync(out)
                    first_step_s = time.perf_counter() - start
            step.sync(out)  # one host sync per epoch
            last.append(out)
            epoch_times.append(time.perf_counter() - t0)
            job.on_step("epoch", epoch + 1, opts["epochs"])
        wall = time.perf_counter() - start
    losses = step.fetch(last)
    step.finish()
    info, error = loss_check(losses)
    metrics: dict[str, float] = {"train_wall_s": wall, "epochs": float(opts["epochs"])}
    if error is None:
        metrics["final_loss"] = losses[-1]
    metrics.update({f"epoch_s_{i}": t for i, t in enumerate(epoch_times)})
    if test is not None:
        tx = (test[0].astype("float32") / 255.0)[..., None]
        pred = np.argmax(keras.ops.convert_to_numpy(model(tx[:2000], training=False)), axis=-1)
        metrics["test_accuracy"] = float(np.mean(pred == test[1][:2000]))
    images = steps_per_epoch * job.batch * opts["epochs"]
    fields: dict[str, Any] = {
        "kind": "job",
        "images_per_sec": images / wall,
        "step_times_s": [t / steps_per_epoch for t in epoch_times],
        "batch_size": job.batch,
        "global_batch": job.batch,
        "metrics": metrics,
        "sync_every": steps_per_epoch,
        "startup_s": max(0.0, started_unix - job.launched_at) if job.launched_at else None,
        "first_step_s": first_step_s,
        "timed_s": wall,
        "block_times_s": epoch_times,
        "params": {
            "train_images": len(xf),
            "steps_per_epoch": steps_per_epoch,
            "data_dir": opts.get("data_dir") if job.data == "real" else None,
            "learning_rate": float(opts["learning_rate"]),
            "backend": job.backend,
            "losses": info,
            "nvml_window": window.counters.result(),
            "timing": {
                "sync_every": steps_per_epoch,
                "sync_mode": "epoch",
                "first_step_in_window": True,
            },
            **cache,
        },
    }
    if error:
        fields.update(status="failed", error=error)
    return fields
