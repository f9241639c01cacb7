"""Scenario ``single``: one model trained on one device of one instance (tf_cnn method).

Builds the model at the entry's image size, makes the data on the device (or in host memory,
option ``input: host``), compiles the runner's training step, runs W warm-up + T timed steps
with a host sync every K (workloads.timing) and NVML's throttle counters and sampler over the
timed window (workloads.measure), and returns the record fields. With ``data: real`` the page
cache is dropped first where this process may (workloads.data.page_cache).
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
    "input": str,
}
INPUTS = ("device", "host")
# tf_cnn_benchmarks' models get its default L2 weight decay; the Keras MNIST example has none
WEIGHT_DECAY_MODELS = ("alexnet", "inception_v3", "resnet50")
PLACEMENTS = ("device", "cpu")


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``variables``: ``device`` (default: one device holds and computes) or ``cpu`` (central
    storage: variables on the CPU, the batch split over ``devices`` compute devices; TensorFlow
    only; the entry's batch is per device, so the global batch is batch x devices).
    ``input``: ``device`` (default: tf_cnn's synthetic batch made once on the device) or
    ``host`` (synthetic batches held in host memory, copied to the device every step)."""
    out = with_defaults(options, {}, "single", also=OPTIONS)
    for key, value in out.items():
        typ = OPTIONS[key]
        ok = isinstance(value, typ) or (typ is float and isinstance(value, int))
        if not ok or isinstance(value, bool):
            raise InputError(f"option {key!r} must be {typ.__name__}, got {value!r}")
        if typ is float and (value < 0 if key == "weight_decay" else value <= 0):
            raise InputError(f"option {key!r} must be > 0, got {value!r}")
    if out.get("input", "device") not in INPUTS:
        raise InputError(f"option 'input' must be device or host, got {out['input']!r}")
    if out.get("variables", "device") not in PLACEMENTS:
        raise InputError(f"option 'variables' must be device or cpu, got {out['variables']!r}")
    if out.get("devices", 1) < 1 or ("devices" in out and out.get("variables") != "cpu"):
        raise InputError("option 'devices' must be >= 1 and goes with variables: cpu")
    return out


def run(job: Any) -> dict[str, Any]:
    from workloads.measure import timed_training
    from workloads.models import get_model
    from workloads.scenarios.sources import DATA_SOURCES
    from workloads.step import (
        DEFAULT_LEARNING_RATE,
        TF_CNN_WEIGHT_DECAY,
        build_train_step,
        device_summary,
        make_optimizer,
        select_backend,
    )

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
    cache: dict[str, Any] = {}
    if job.data == "real":  # read from the disk in the timed run, not from the page cache
        from workloads.data.page_cache import drop_page_cache

        cache = drop_page_cache()
    source = DATA_SOURCES[job.data]
    if job.options.get("input") == "host" and job.data == "synthetic":
        from workloads.synthetic import host_source

        source = host_source
    get_batch = source(spec, global_batch, size, job.options)
    done = timed_training(job, step, get_batch, sample=True)
    sampler = done.window.sampler
    out: dict[str, Any] = {
        "images_per_sec": done.timing.images_per_sec(global_batch),
        "step_times_s": done.timing.step_times_s,
        "batch_size": job.batch,
        "global_batch": global_batch,
        "metrics": done.metrics,
        **done.fields,
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
            **done.params,
            "nvml_samples": sampler.samples[-600:],
            "nvml_throttle_reasons": sampler.throttle_reasons(),
            "partition": partition,
            "variable_placement": placement,
            "input_overlap": getattr(get_batch, "overlap", None),
            **cache,
        },
    }
    if done.error:
        out.update(status="failed", error=done.error)
    return out
