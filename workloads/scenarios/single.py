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

OPTIONS = {"seed": int, "learning_rate": float}


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    out = with_defaults(options, {}, "single", also=OPTIONS)
    for key, value in out.items():
        typ = OPTIONS[key]
        ok = isinstance(value, typ) or (typ is float and isinstance(value, int))
        if not ok or isinstance(value, bool):
            raise InputError(f"option {key!r} must be {typ.__name__}, got {value!r}")
        if typ is float and value <= 0:
            raise InputError(f"option {key!r} must be > 0, got {value!r}")
    return out


def run(job: Any) -> dict[str, Any]:
    from workloads.fingerprint.nvml import Sampler
    from workloads.models import get_model
    from workloads.scenarios import DATA_SOURCES
    from workloads.step import (
        DEFAULT_LEARNING_RATE,
        blocking,
        build_train_step,
        device_summary,
        make_optimizer,
        select_backend,
    )
    from workloads.timing import timed_loop

    spec = get_model(job.model)  # bad input fails before the framework import
    size = spec.check_image_size(job.image_size)
    select_backend(job.backend)
    model = spec.build(size)
    lr = float(job.options.get("learning_rate", DEFAULT_LEARNING_RATE))
    step = build_train_step(model, make_optimizer(lr))
    get_batch = DATA_SOURCES[job.data](spec, job.batch, size, job.options)
    run_step = blocking(step, get_batch)
    sampler = Sampler()
    timing = timed_loop(run_step, job.warmup, job.steps, on_step=job.on_step, window=sampler)
    step.finish()
    metrics: dict[str, float] = dict(timing.summary())
    metrics.update(sampler.summary())
    return {
        "images_per_sec": timing.images_per_sec(job.batch),
        "step_times_s": timing.step_times_s,
        "batch_size": job.batch,
        "global_batch": job.batch,
        "metrics": metrics,
        "params": {
            "image_size": size,
            "input_shape": list(spec.input_shape(size)),
            "num_classes": spec.num_classes,
            "param_count": int(model.count_params()),
            "optimizer": "sgd",
            "learning_rate": lr,
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
        },
    }
