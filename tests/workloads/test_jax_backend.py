"""The runner on the Keras JAX backend for real (what GPU machines without TensorFlow use):
the same models and the runner's own step, each repetition its own process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "size"), [("mnist_cnn", None), ("alexnet", 67)])
def test_models_run_on_the_jax_backend(tmp_path: Path, model: str, size: int | None) -> None:
    out = tmp_path / "r.jsonl"
    args = [
        sys.executable,
        "-m",
        "workloads",
        "bench",
        "--model",
        model,
        "--batch",
        "4",
        "--steps",
        "3",
        "--warmup",
        "1",
        "--repeats",
        "1",
        "--keras-backend",
        "jax",
        "--out",
        str(out),
    ]
    if size:
        args += ["--image-size", str(size)]
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [rec] = [json.loads(line) for line in out.read_text().splitlines()]
    assert rec["status"] == "ok", rec.get("error")
    assert rec["model"] == model and rec["steps"] == 3 and len(rec["step_times_s"]) == 3
    assert rec["images_per_sec"] == pytest.approx(4 * 3 / sum(rec["step_times_s"]), rel=0.05)
    software = rec["fingerprint"]["software"]
    assert software["backend"]["keras_backend"] == "jax"
    assert "jax" in software["packages"]


@pytest.mark.slow
def test_jax_steps_dispatch_asynchronously_and_sync_every_k(tmp_path: Path) -> None:
    """JAX dispatch is asynchronous: the loop waits (block_until_ready on the loss and the
    carried state) only at the end of each block of K steps, and fetches the losses once."""
    out = tmp_path / "r.jsonl"
    args = [
        sys.executable, "-m", "workloads", "bench", "--model", "mnist_cnn", "--batch", "8",
        "--steps", "5", "--warmup", "2", "--repeats", "1", "--keras-backend", "jax",
        "--sync-every", "2", "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [rec] = [json.loads(line) for line in out.read_text().splitlines()]
    assert rec["status"] == "ok", rec.get("error")
    assert rec["sync_every"] == 2 and rec["params"]["timing"]["block_steps"] == [2, 2, 1]
    assert len(rec["block_times_s"]) == 3 and len(rec["step_times_s"]) == 3
    assert rec["params"]["losses"]["fetched"] == 5
    assert rec["params"]["losses"]["first_nonfinite_step"] is None
    assert rec["images_per_sec"] == pytest.approx(8 * 5 / rec["timed_s"])
    assert rec["fingerprint"]["software"]["backend"]["keras_backend"] == "jax"
