"""The runner against a raw loop of the same graph, both synchronizing the host every K steps.

Each measurement is its own process (benchmarks/gpu/child.py): the runner arm is the runner's
own measurement process (``_measure``, the ``single`` scenario: Keras model, its compiled step,
workloads.timing's loop, NVML window, fingerprint), the raw arm the same Keras model's graph
and initial weights run with the framework's own ops (benchmarks/gpu/raw_tf.py or raw_jax.py),
waiting for the device every K steps and after the last. Two values of K: 1 (a host sync per
step, tf_cnn_benchmarks' per-step fetch) and the K the runner's ``auto`` chooses (blocks of at
least a second at the warm-up's speed; read from one runner measurement first). Pairs are
interleaved: pair i runs K = 1 and K = auto in alternating order, and within each K the runner
and the raw arm in alternating order, so machine noise hits every arm alike.

Prints, per K, the runner and raw images/sec of every pair, the paired ratios runner / raw and
their median, and each arm's K = auto / K = 1 ratio.

Run: ``.venv/bin/python benchmarks/sync_every.py [--backend tensorflow|jax] [--model mnist_cnn
--batch 32 --steps 120 --warmup 5 --pairs 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.gpu.launch import run_child  # noqa: E402  (after sys.path)


def runner(args: argparse.Namespace, k: int | str, seed: int) -> dict[str, Any]:
    job = {
        "suite": "sync-every",
        "experiment": f"runner-k{k}",
        "model": args.model,
        "scenario": "single",
        "batch": args.batch,
        "steps": args.steps,
        "warmup": args.warmup,
        "image_size": args.image_size,
        "backend": args.backend,
        "options": {"seed": seed},
        "timeout_s": 600.0,
        "sync_every": k,
    }
    return run_child("runner", job, {"KERAS_BACKEND": args.backend}, 600.0)


def raw(args: argparse.Namespace, k: int, seed: int) -> dict[str, Any]:
    spec = {
        "framework": args.backend,
        "model": args.model,
        "batch": args.batch,
        "image_size": args.image_size,
        "precision": "fp32",
        "warmup": args.warmup,
        "steps": args.steps,
        "seed": seed,
        "sync_every": k,
    }
    return run_child("raw", spec, {"KERAS_BACKEND": args.backend}, 600.0)


def _ips(fields: dict[str, Any], what: str) -> float:
    if fields.get("status") != "ok" or not fields.get("images_per_sec"):
        raise SystemExit(f"sync_every: {what} failed: {fields.get('error')}")
    return float(fields["images_per_sec"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="tensorflow", choices=("tensorflow", "jax"))
    p.add_argument("--model", default="mnist_cnn")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--image-size", type=int, default=None)
    p.add_argument("--steps", type=int, default=120, help="timed steps per measurement")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--pairs", type=int, default=5)
    args = p.parse_args(argv)

    probe = runner(args, "auto", 1233)
    _ips(probe, "the runner's auto probe")
    k_auto = int(probe["sync_every"])
    print(
        f"{args.model} batch {args.batch} on {args.backend}: W = {args.warmup}, "
        f"T = {args.steps}; auto chose K = {k_auto} (warm step "
        f"{probe['params']['timing']['warm_step_s'] * 1e3:.1f} ms)",
        flush=True,
    )
    ks = [1, k_auto]
    got: dict[tuple[str, int], list[float]] = {(a, k): [] for a in ("runner", "raw") for k in ks}
    for i in range(args.pairs):
        for k in ks if i % 2 == 0 else ks[::-1]:
            arms = ("runner", "raw") if (i + ks.index(k)) % 2 == 0 else ("raw", "runner")
            for arm in arms:
                seed = 1234 + i
                if arm == "runner":
                    fields = runner(args, k, seed)
                    assert fields.get("sync_every") == k, fields.get("sync_every")
                else:
                    fields = raw(args, k, seed)
                got[(arm, k)].append(_ips(fields, f"{arm} K={k} pair {i + 1}"))
                print(f"pair {i + 1} K={k} {arm}: {got[(arm, k)][-1]:,.1f} images/sec", flush=True)
    print()
    print(
        "| K | runner images/sec (pairs) | raw images/sec (pairs) | runner / raw (pairs) | median |"
    )
    print("|---|---|---|---|---:|")
    for k in ks:
        r, w = got[("runner", k)], got[("raw", k)]
        ratios = [a / b for a, b in zip(r, w, strict=True)]
        print(
            f"| {k}{' (auto)' if k == k_auto else ''} | {', '.join(f'{x:,.0f}' for x in r)} | "
            f"{', '.join(f'{x:,.0f}' for x in w)} | {', '.join(f'{x:.3f}' for x in ratios)} | "
            f"{statistics.median(ratios):.3f} |"
        )
    for arm in ("runner", "raw"):
        ratios = [a / b for a, b in zip(got[(arm, k_auto)], got[(arm, 1)], strict=True)]
        print(
            f"{arm}: K = {k_auto} / K = 1 images/sec, paired: "
            f"{', '.join(f'{x:.3f}' for x in ratios)} (median {statistics.median(ratios):.3f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
