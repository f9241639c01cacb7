"""Scenario ``single``: one model trained on one device of one instance (tf_cnn method).

Builds the model at the entry's image size, makes the data on the device, compiles the
runner's training step, runs W warm-up + T timed steps with an NVML sampler over the timed
window, and returns the record fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workloads.errors import InputError
from workloads.options import with_defaults

OPTIONS = {
    "seed": int,
    "learning_rate": float,
    "variables": str,
    "devices": int,
    "weight_decay": float,
}
# tf_cnn_benchmarks' models get its default L2 weight decay; the Keras MNIST example has none
WEIGHT_DECAY_MODELS = ("alexnet", "inception_v3", "resnet50")
PLACEMENTS = ("device", "cpu")


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``variables``: ``device`` (default: one device holds and computes) or ``cpu`` (central
    storage: variables on the CPU, the batch split over ``devices`` compute devices; TensorFlow
    only; the entry's batch is per device, so the global batch is batch x devices)."""
    out = with_defaults(options, {}, "single", also=OPTIONS)
    for key, value in out.items():
        typ = OPTIONS[key]
        ok = isinstance(value, typ) or (typ is float and isinstance(value, int))
        if not ok or isinstance(value, bool):
            raise InputError(f"option {key!r} must be {typ.__name__}, got {value!r}")
        if typ is float and (value < 0 if key == "weight_decay" else value <= 0):
            raise InputError(f"option {key!r} must be > 0, got {value!r}")
    if out.get("variables", "device") not in PLACEMENTS:
        raise InputError(f"option 'variables' must be device or cpu, got {out['variables']!r}")
    if out.get("devices", 1) < 1 or ("devices" in out and out.get("variables") != "cpu"):
        raise InputError("option 'devices' must be >= 1 and goes with variables: cpu")
    return out


def run(job: Any) -> dict[str, Any]:
    from workloads.fingerprint.nvml import Sampler
    from workloads.models import get_model
    from workloads.scenarios.sources import DATA_SOURCES
    from workloads.step import (
        DEFAULT_LEARNING_RATE,
        TF_CNN_WEIGHT_DECAY,
        blocking,
        build_train_step,
        device_summary,
        make_optimizer,
        select_backend,
    )
    from workloads.timing import timed_loop

    spec = get_model(job.model)  # bad input fails before the framework import
    size = spec.check_image_size(job.image_size)
    from workloads.partition import apply_in_child

    partition = apply_in_child(job.backend)  # a memory cap before anything allocates
    central = job.options.get("variables") == "cpu"
    if central and job.backend != "tensorflow":
        return {
            "status": "skipped",
            "error": f"variables: cpu (central storage) needs TensorFlow; backend {job.backend!r}",
        }
    select_backend(job.backend)
    lr = float(job.options.get("learning_rate", DEFAULT_LEARNING_RATE))
    global_batch = job.batch
    default_wd = TF_CNN_WEIGHT_DECAY if job.model in WEIGHT_DECAY_MODELS else 0.0
    wd = float(job.options.get("weight_decay", default_wd))
    placement: dict[str, Any] = {"variables": "device", "compute_devices": None}
    if central:
        import tensorflow as tf

        from workloads.step import build_central_step, compute_devices

        devices = compute_devices(int(job.options.get("devices", 2)))
        with tf.device("/CPU:0"):
            model = spec.build(size)
        step = build_central_step(model, devices, make_optimizer(lr), weight_decay=wd)
        global_batch = job.batch * len(devices)
        placement = {"variables": "cpu (central storage)", "compute_devices": devices}
    else:
        model = spec.build(size)
        step = build_train_step(model, make_optimizer(lr), weight_decay=wd)
    get_batch = DATA_SOURCES[job.data](spec, global_batch, size, job.options)
    run_step = blocking(step, get_batch)
    sampler = Sampler()
    timing = timed_loop(run_step, job.warmup, job.steps, on_step=job.on_step, window=sampler)
    step.finish()
    metrics: dict[str, float] = dict(timing.summary())
    metrics.update(sampler.summary())
    return {
        "images_per_sec": timing.images_per_sec(global_batch),
        "step_times_s": timing.step_times_s,
        "batch_size": job.batch,
        "global_batch": global_batch,
        "metrics": metrics,
        "params": {
            "image_size": size,
            "input_shape": list(spec.input_shape(size)),
            "num_classes": spec.num_classes,
            "param_count": int(model.count_params()),
            "optimizer": "sgd",
            "learning_rate": lr,
            "weight_decay": wd,
            "data_format": "NHWC",
            "backend": job.backend,
            "devices": device_summary(),
            "warmup_times_s": timing.warmup_times_s,
            # the timed window in wall-clock time (time.time()), for concurrent jobs
            "timed_window_unix": (
                [job.timed_end_unix - timing.wall_s, job.timed_end_unix]
                if job.timed_end_unix is not None
                else None
            ),
            "nvml_samples": sampler.samples[-600:],
            "nvml_throttle_reasons": sampler.throttle_reasons(),
            "partition": partition,
            "variable_placement": placement,
            "input_overlap": getattr(get_batch, "overlap", None),
        },
    }
