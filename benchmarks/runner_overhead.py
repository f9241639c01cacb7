"""Runner overhead: the runner's timed loop against a bare compiled step loop.

Same model, same compiled step, same on-device batch, same process. Trials alternate
(bare, runner, runner, bare, ...) so machine noise hits both alike; the ratio is the median of
the paired ratios runner/bare (each pair run back to back): the fraction of throughput the
runner's method keeps (goal >= 0.99). On a busy machine single trials swing by tens of percent,
so the script also gives the same paired ratio in process CPU time (all threads; much less
sensitive to other processes on the machine) and measures the loop's own bookkeeping per step
with a no-op step: the ratio that bookkeeping alone allows (step time / (step time +
bookkeeping)).

- bare:   ``for _ in range(T): loss = step(images, labels)``, one ``float(loss)`` at the end
  (no per-step synchronization, no clock reads: the cheapest loop there is).
- runner: ``workloads.timing.timed_loop`` over ``workloads.step.dispatching`` with the step's
  own ``sync`` every ``--sync-every`` steps (default: the trial's steps, one sync at the end as
  the bare loop; ``1`` is the per-step fetch of tf_cnn_benchmarks), the loss of every step
  kept, the progress hook writing a protocol line as the measurement process does, and the
  NVML window (throttle counters and sampler).

Run: ``.venv/bin/python benchmarks/runner_overhead.py [--model mnist_cnn --batch 64 ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="mnist_cnn")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--image-size", type=int, default=None)
    p.add_argument("--steps", type=int, default=15, help="steps per trial")
    p.add_argument("--trials", type=int, default=15, help="trials per side")
    p.add_argument("--backend", default=None)
    p.add_argument("--sync-every", type=int, default=None, help="K (default: --steps)")
    args = p.parse_args(argv)
    k = args.sync_every or args.steps

    from workloads.step import (
        blocking,
        build_train_step,
        default_backend,
        dispatching,
        select_backend,
    )

    backend = args.backend or default_backend()
    select_backend(backend)
    from workloads.fingerprint.throttle import TimedWindow
    from workloads.models import get_model
    from workloads.synthetic import synthetic_source
    from workloads.timing import timed_loop

    spec = get_model(args.model)
    size = spec.check_image_size(args.image_size)
    model = spec.build(size)
    step = build_train_step(model)
    get_batch = synthetic_source(spec, args.batch, size, {})
    images, labels = get_batch()
    runner_step = dispatching(step, get_batch)
    warm_step = blocking(step, get_batch)
    sink = open(os.devnull, "w")  # noqa: SIM115 (stands in for the protocol pipe)

    def on_step(phase: str, i: int, n: int) -> None:
        sink.write("@gpulab progress " + json.dumps({"phase": phase, "step": i, "total": n}) + "\n")

    cpu: dict[str, list[float]] = {"bare": [], "runner": []}

    def bare() -> float:
        c0 = time.process_time()
        t0 = time.perf_counter()
        loss = None
        for _ in range(args.steps):
            loss = step(images, labels)
        float(loss)
        wall = time.perf_counter() - t0
        cpu["bare"].append(time.process_time() - c0)
        return args.batch * args.steps / wall

    def runner() -> float:
        c0 = time.process_time()
        t = timed_loop(
            runner_step,
            0,
            args.steps,
            on_step=on_step,
            window=TimedWindow(sample=True),
            sync=step.sync,
            sync_every=k,
        )
        cpu["runner"].append(time.process_time() - c0)
        return t.images_per_sec(args.batch)

    for _ in range(10):  # compile and warm both paths
        warm_step()
    bare_ips: list[float] = []
    runner_ips: list[float] = []
    for i in range(args.trials):
        order = (bare, runner) if i % 2 == 0 else (runner, bare)
        for fn in order:
            (bare_ips if fn is bare else runner_ips).append(fn())
    pair = statistics.median(r / b for r, b in zip(runner_ips, bare_ips, strict=True))
    pair_cpu = statistics.median(b / r for r, b in zip(cpu["runner"], cpu["bare"], strict=True))
    b, r = statistics.median(bare_ips), statistics.median(runner_ips)
    step_s = args.batch / b

    # the loop's own cost per step, with a step that does nothing
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        pass
    empty = time.perf_counter() - t0
    t = timed_loop(lambda: None, 0, n, on_step=on_step, window=TimedWindow(sample=True))
    bookkeeping_s = max(t.wall_s - empty, 0.0) / n
    bound = step_s / (step_s + bookkeeping_s)

    print(
        f"model {args.model} batch {args.batch} image {size}px backend {backend}: "
        f"{args.trials} trials x {args.steps} steps per side, runner K = {k}"
    )
    print(
        f"bare compiled step loop: {b:,.1f} images/sec (median; trials "
        f"{', '.join(f'{x:.0f}' for x in bare_ips)})"
    )
    print(
        f"runner timed loop:       {r:,.1f} images/sec (median; trials "
        f"{', '.join(f'{x:.0f}' for x in runner_ips)})"
    )
    print(
        f"runner bookkeeping: {bookkeeping_s * 1e6:.1f} us per step against a "
        f"{step_s * 1e3:.1f} ms step: ratio allowed by bookkeeping = {bound:.5f}"
    )
    print(f"ratio runner/bare in CPU time = {pair_cpu:.4f} (median of paired trials)")
    verdict = "met" if pair >= 0.99 else "NOT met"
    print(
        f"ratio runner/bare = {pair:.4f} (wall-clock, median of paired trials; goal >= 0.99: "
        f"{verdict})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
