"""One timed training measurement with the runner's own step: the part every training
scenario shares (``single``, ``fathom``).

The loop is workloads.timing's (W warm-up steps waited for, then T steps with a host sync
every K); the window around the timed steps reads NVML's throttle counters (and samples NVML
when asked); the losses come back once, after the window, for the finiteness check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workloads.timing import LoopTiming, finite_losses, record_fields, timed_loop


@dataclass
class Timed:
    """A finished timed loop and what goes into its record."""

    timing: LoopTiming
    window: Any  # workloads.fingerprint.throttle.TimedWindow
    fields: dict[str, Any]  # top-level record fields (sync_every, startup_s, ...)
    params: dict[str, Any]
    metrics: dict[str, float]
    error: str | None = None  # a loss that is not finite
    losses: list[float] = field(default_factory=list, repr=False)


def loss_check(losses: list[float]) -> tuple[dict[str, Any], str | None]:
    """``params.losses`` and the error when a loss is not finite (a diverged run)."""
    bad = finite_losses(losses)
    info: dict[str, Any] = {
        "fetched": len(losses),
        "first": losses[0] if losses and bad != 1 else None,
        "last": losses[-1] if losses and bad is None else None,
        "first_nonfinite_step": bad,
    }
    err = None
    if bad is not None:
        err = (
            f"the loss of timed step {bad} of {len(losses)} is not finite ({losses[bad - 1]!r}): "
            "the training diverged"
        )
    return info, err


def timed_training(
    job: Any,
    step: Any,
    get_batch: Callable[[], tuple[Any, Any]],
    sample: bool = False,
    nvml: Any = None,
) -> Timed:
    """Run ``job``'s warm-up and timed steps of ``step`` (a workloads.step.TrainStep) on
    ``get_batch``; ``step.finish()`` is called after the losses are fetched."""
    from workloads.fingerprint.throttle import TimedWindow
    from workloads.step import dispatching

    window = TimedWindow(sample=sample, nvml=nvml)
    timing = timed_loop(
        dispatching(step, get_batch),
        job.warmup,
        job.steps,
        on_step=job.on_step,
        window=window,
        sync=step.sync,
        sync_every=job.sync_every,
    )
    losses = step.fetch(timing.handles)
    timing.handles.clear()  # the device values are no longer needed
    step.finish()
    info, err = loss_check(losses)
    params: dict[str, Any] = {
        "timing": timing.params(float(job.min_timed_s)),
        "nvml_window": window.counters.result(),
        "warmup_times_s": timing.warmup_times_s,
        "losses": info,
        # the timed window in wall-clock time (time.time()), for concurrent jobs
        "timed_window_unix": (
            [job.timed_end_unix - timing.wall_s, job.timed_end_unix]
            if getattr(job, "timed_end_unix", None) is not None
            else None
        ),
    }
    if getattr(job, "barrier_wait_s", None) is not None:
        params["barrier_wait_s"] = job.barrier_wait_s  # after the warm-up, before the window
    metrics: dict[str, float] = dict(timing.summary())
    if window.sampler is not None:
        metrics.update(window.sampler.summary())
    return Timed(
        timing, window, record_fields(timing, job.launched_at), params, metrics, err, losses
    )
