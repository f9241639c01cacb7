"""One measurement in its own process: ``python benchmarks/gpu/child.py MODE`` (JSON on stdin).

Modes:
  runner   the runner's own measurement process (``workloads`` ``_measure``: the ``single``
           scenario's build, on-device data, compiled step and timed loop, fingerprint), with
           the Keras dtype policy ``$GPULAB_PRECISION`` (``mixed_bfloat16`` for bf16) set first:
           the runner has no precision option, so this is the one thing added around it.
  raw      the raw framework loop on the same model's initial weights (raw_torch/raw_jax/raw_tf),
           synchronized with the device every ``sync_every`` steps (default: once, at the end)
  kernels  a list of tasks: bf16 matmul peak, host-device bandwidth (workloads.kernels),
           DeepBench RNN cells (workloads.kernels.compute with TensorFlow, cuDNN through PyTorch
           where TensorFlow is absent)

Everything but the result goes to stderr; the result is one ``@gpulab result {json}`` line on
stdout, as the runner's own child protocol (workloads/bench.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from workloads.__main__ import emit_result, protocol_stream  # noqa: E402  (after sys.path)

RAW_CLASSES = {
    "torch": ("benchmarks.gpu.raw_torch", "TorchRaw"),
    "jax": ("benchmarks.gpu.raw_jax", "JaxRaw"),
    "tensorflow": ("benchmarks.gpu.raw_tf", "TfRaw"),
}


def runner(precision_policy: str | None) -> int:
    """The runner's ``_measure`` under a Keras dtype policy (reads the job from stdin)."""
    if precision_policy:
        import keras

        keras.mixed_precision.set_global_policy(precision_policy)
    from workloads.__main__ import main

    return main(["_measure"])


def raw(spec: dict[str, Any]) -> dict[str, Any]:
    import importlib

    from benchmarks.gpu.graph import forward_macs, from_keras
    from workloads.fingerprint.nvml import Sampler
    from workloads.models import get_model
    from workloads.step import device_summary, select_backend

    framework = spec["framework"]
    keras = select_backend(framework)
    keras.utils.set_random_seed(int(spec.get("seed", 1234)))
    mspec = get_model(spec["model"])
    size = mspec.check_image_size(spec.get("image_size"))
    plan = from_keras(mspec.build(size))
    module, cls = RAW_CLASSES[framework]
    loop = getattr(importlib.import_module(module), cls)(
        plan, int(spec["batch"]), spec["precision"], float(spec.get("learning_rate", 0.005))
    )
    warmup, steps, batch = int(spec["warmup"]), int(spec["steps"]), int(spec["batch"])
    k = int(spec.get("sync_every") or steps)  # default: one sync, after the last step
    t0 = time.perf_counter()
    for _ in range(max(1, warmup)):
        loop.step()
    loop.sync()
    warm = time.perf_counter() - t0
    sampler = Sampler()
    with sampler:
        t0 = time.perf_counter()
        for i in range(1, steps + 1):
            loop.step()
            if i % k == 0 and i < steps:
                loop.sync()
        loss = loop.sync()
        wall = time.perf_counter() - t0
    metrics = {"timed_wall_s": wall, "warmup_wall_s": warm, "final_loss": loss}
    metrics.update(sampler.summary())
    return {
        "images_per_sec": batch * steps / wall,
        "metrics": metrics,
        "params": {
            "image_size": size,
            "framework": framework,
            "raw_loop": loop.description,
            "forward_macs_per_image": forward_macs(plan),
            "param_count": plan.param_count(),
            "devices": device_summary(),
            "sync": (
                "once after the timed steps (no per-step host sync)"
                if k >= steps
                else f"every {k} steps and after the last"
            ),
            "sync_every": min(k, steps),
            "nvml_throttle_reasons": sampler.throttle_reasons(),
        },
    }


def _rnn_torch(shape: tuple[int, int, int, str], warmup: int, iters: int, mode: str) -> Any:
    import torch

    from workloads.kernels.compute import KernelResult, time_calls

    hidden, batch, steps, cell = shape
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    layer = {"vanilla": torch.nn.RNN, "lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[cell](
        hidden, hidden
    ).to(dev)
    x = torch.randn(steps, batch, hidden, device=dev, requires_grad=mode == "train")

    def fn() -> Any:
        y = layer(x)[0]
        if mode == "train":
            y.backward(torch.ones_like(y))
        return y

    def sync(_: Any) -> None:
        if dev == "cuda":
            torch.cuda.synchronize()

    t = time_calls(fn, warmup, iters, sync)
    gates = {"vanilla": 1, "lstm": 4, "gru": 3}[cell]
    flops = 2.0 * 2 * batch * hidden * hidden * gates * steps * (3 if mode == "train" else 1)
    dims = {"hidden": hidden, "batch": batch, "timesteps": steps, "cell": cell, "mode": mode}
    return KernelResult(
        "rnn",
        dims,
        t,
        iters,
        dev + " (torch cuDNN)" if dev == "cuda" else dev,
        tflops=flops / t / 1e12,
    )


def rnn_framework() -> str | None:
    for name in ("tensorflow", "torch"):
        if importlib.util.find_spec(name) is not None:
            return name
    return None


def task(t: dict[str, Any]) -> dict[str, Any]:
    kind = t["kind"]
    if kind == "peak":
        from benchmarks.gpu.peak import bf16_matmul

        return bf16_matmul(
            t["framework"], int(t["n"]), int(t.get("warmup", 3)), int(t.get("iters", 10))
        )
    if kind == "bandwidth":
        from workloads.kernels import run as kernel_run
        from workloads.scenarios import Job

        job = Job(
            suite="gpu",
            experiment="bandwidth",
            model="bandwidth",
            scenario="kernel",
            warmup=int(t["warmup"]),
            steps=int(t["iters"]),
            options={"iterations": "steps", **t["options"]},
        )
        return kernel_run(job)
    if kind == "rnn":
        from workloads.kernels import shape_id

        framework = rnn_framework()
        if framework is None:
            raise RuntimeError("DeepBench RNN kernels need TensorFlow or PyTorch")
        if framework == "tensorflow":
            from workloads.kernels.compute import rnn as tf_rnn
        results = []
        for hidden, batch, steps in t["shapes"]:
            for cell in t["cells"]:
                shape = (int(hidden), int(batch), int(steps), cell)
                if framework == "tensorflow":  # one row per phase (forward, backward-*)
                    rows = tf_rnn(shape, int(t["warmup"]), int(t["iters"]), mode=t["mode"])
                else:
                    rows = [_rnn_torch(shape, int(t["warmup"]), int(t["iters"]), t["mode"])]
                results.extend({"id": shape_id(res), **res.as_dict()} for res in rows)
        return {"framework": framework, "results": results}
    raise ValueError(f"unknown kernel task {kind!r}")


def kernels(spec: dict[str, Any]) -> dict[str, Any]:
    out = []
    for t in spec["tasks"]:
        try:
            out.append({"kind": t["kind"], "status": "ok", "result": task(t)})
        except Exception as exc:
            traceback.print_exc()
            out.append(
                {
                    "kind": t["kind"],
                    "status": "failed",
                    "error": f"{type(exc).__name__}: {exc}"[:1000],
                }
            )
    return {"tasks": out}


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else ""
    if mode == "runner":
        return runner(os.environ.get("GPULAB_PRECISION"))
    proto = protocol_stream()
    started = time.time()
    spec = json.loads(sys.stdin.read() or "{}")
    try:
        if mode == "raw":
            fields = raw(spec)
        elif mode == "kernels":
            fields = kernels(spec)
        else:
            raise ValueError(f"unknown mode {mode!r} (runner, raw, kernels)")
        fields.setdefault("status", "ok")
    except Exception as exc:
        traceback.print_exc()
        fields = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}
    fields["elapsed_s"] = time.time() - float(spec.get("launched_at") or started)
    emit_result(proto, fields)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
