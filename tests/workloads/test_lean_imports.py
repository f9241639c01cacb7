"""A measuring process keeps out the packages its backend never uses (workloads/lean_imports.py):
TensorFlow would import JAX, and Keras matplotlib, only because they are installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lifecycle.first_run import COUNTER_DIR, imports, measure_launches
from tests.parts import REPO

PROBE = r"""
import json, sys
from workloads.lean_imports import keep_out
import json as already  # imported before: left alone
sys.modules.pop("yaml", None)
out = {"kept": keep_out(sys.argv[1]), "again": keep_out(sys.argv[1])}
for name in ("jax", "matplotlib", "matplotlib.pyplot", "json"):
    try:
        __import__(name)
        out[name] = "imported"
    except ImportError as exc:
        out[name] = type(exc).__name__
from workloads.fingerprint.software import backend_info
out["backend"] = backend_info()
print(json.dumps(out))
"""


def probe(backend: str) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, backend], cwd=REPO, capture_output=True,
                       text=True, timeout=120, check=True)  # fmt: skip
    return json.loads(r.stdout)


def test_tensorflow_measurements_keep_jax_and_matplotlib_out() -> None:
    out = probe("tensorflow")
    assert out["kept"] == ["jax", "matplotlib"] and out["again"] == []
    assert out["jax"] == out["matplotlib"] == out["matplotlib.pyplot"] == "ModuleNotFoundError"
    assert out["json"] == "imported"
    # the fingerprint's backend probe reads a kept-out package as not imported, without error
    assert out["backend"] == {"keras_backend": None}


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_other_backends_keep_only_matplotlib_out(backend: str) -> None:
    out = probe(backend)
    assert out["kept"] == ["matplotlib"]
    assert out["matplotlib"] == "ModuleNotFoundError"


def test_an_unknown_backend_keeps_nothing_out() -> None:
    out = probe("numpy")
    assert out["kept"] == []


@pytest.mark.tf
def test_a_tensorflow_measurement_imports_neither_jax_nor_matplotlib(tmp_path: Path) -> None:
    """A real measurement (MNIST CNN, 2 steps): its process imports TensorFlow and Keras, not
    JAX or matplotlib (counted by the launch counter's import hook), and its record's
    backend says TensorFlow with no probe error."""
    log, out = tmp_path / "launches.log", tmp_path / "r.jsonl"
    env = dict(os.environ, GPULAB_TEST_LAUNCHES=str(log), PYTHONPATH=str(COUNTER_DIR))
    r = subprocess.run(
        [sys.executable, "-m", "workloads", "bench", "--model", "mnist_cnn", "--batch", "8",
         "--steps", "2", "--warmup", "1", "--repeats", "1", "--out", str(out),
         "--gpu-path", "local"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    (measuring,) = [int(ln.split()[0]) for ln in measure_launches(log)]
    assert imports(log, "tensorflow") == {measuring}
    assert imports(log, "jax") == imports(log, "matplotlib") == set()
    (rec,) = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert rec["status"] == "ok"
    backend = rec["fingerprint"]["software"]["backend"]
    assert backend["keras_backend"] == "tensorflow" and "error" not in backend
    assert "jax_platform" not in backend


@pytest.mark.tf
@pytest.mark.slow
def test_the_startup_benchmark_prints_both_sides_and_the_ratio() -> None:
    """benchmarks/runner_startup.py as its docstring runs it, with ``--exit`` and ``--fork``
    (one round, one suite; the study part is minutes long and left to the benchmark's own
    runs): the rows of the three parts and its last line's ratios."""
    argv = [sys.executable, "benchmarks/runner_startup.py", "--rounds", "1", "--exit", "--fork",
            "--fork-suites", "local-single"]  # fmt: skip
    r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    heads = ("plain", "kept", "teardown", "exit_now", "exec", "fork")
    rows = {ln.split()[0]: ln.split()[-2:] for ln in lines if ln.startswith(heads)}
    assert set(rows) == set(heads) and all(float(v) > 0 for r in rows.values() for v in r)
    ratios = dict(kv.split("=") for kv in lines[-1].split())
    assert set(ratios) == {
        "ratio_cpu", "ratio_exit_wall", "ratio_exit_cpu", "ratio_fork_wall", "ratio_fork_cpu"
    }  # fmt: skip
    assert all(float(v) > 0 for v in ratios.values())
    assert "suites (local-single), one bench run each" in r.stdout


def test_the_startup_benchmark_refuses_an_unknown_suite_naming_it() -> None:
    argv = [sys.executable, "benchmarks/runner_startup.py", "--fork-suites", "local-single,nope"]
    r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown suite nope" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
