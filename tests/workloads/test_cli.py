"""Every bad-input case of ``gpulab bench`` (and ``python -m workloads bench``): one line on
stderr naming the key or value, exit code 2, no traceback, nothing run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.cli import main
from tests.parts import REPO


@pytest.fixture
def bad_suite(tmp_path: Path) -> str:
    path = tmp_path / "typo.yaml"
    path.write_text("experiments:\n  - experiment: a\n    model: mnist_cnn\n    stpes: 3\n")
    return str(path)


@pytest.fixture
def unwritable(tmp_path: Path) -> str:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    return str(blocker / "out.jsonl")  # its parent is a regular file


CASES = [
    (["--model", "vgg16"], "unknown --model 'vgg16'"),
    (["--suite", "no-such-suite"], "unknown suite 'no-such-suite'"),
    (["--suite", "{bad_suite}"], "unknown key 'stpes'"),
    (["--model", "mnist_cnn", "--stpes", "3"], "unknown option or argument '--stpes'"),
    (["--model", "mnist_cnn", "--steps", "0"], "--steps must be an integer >= 1, got 0"),
    (["--model", "mnist_cnn", "--batch", "0"], "--batch must be an integer >= 1, got 0"),
    (["--model", "mnist_cnn", "--repeats", "0"], "--repeats must be an integer >= 1, got 0"),
    (["--model", "mnist_cnn", "--warmup", "-1"], "--warmup must be an integer >= 0, got -1"),
    (["--model", "mnist_cnn", "--steps", "ten"], "--steps must be an integer, got 'ten'"),
    (["--model", "alexnet", "--image-size", "64"], "--image-size 64 is too small"),
    (["--suite", "smoke", "--steps", "0"], "--steps must be an integer >= 1, got 0"),
    (["--suite", "smoke", "--batch", "4"], "--batch and --image-size apply to --model only"),
    (["--suite", "smoke", "--model", "alexnet"], "exactly one of --suite NAME or --model MODEL"),
    ([], "exactly one of --suite NAME or --model MODEL"),
    (["--model", "mnist_cnn", "--keras-backend", "mxnet"], "'mxnet' is not one of 'tensorflow'"),
    (["--model", "mnist_cnn", "--sync-every", "0"], "--sync-every must be auto, tf_cnn or an"),
    (["--model", "mnist_cnn", "--sync-every", "often"], "integer >= 1, got 'often'"),
]


def fill(args: list[str], bad_suite: str) -> list[str]:
    return [a.format(bad_suite=bad_suite) for a in args]


@pytest.mark.parametrize(("args", "needle"), CASES)
def test_gpulab_bench_bad_input(args, needle, bad_suite, tmp_path, capsys):
    out = tmp_path / "records.jsonl"
    rc = main(["bench", *fill(args, bad_suite), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("gpulab: error: "), err
    assert needle in err
    assert "Traceback" not in err
    assert not out.exists() or out.read_text() == ""  # nothing ran


def test_gpulab_bench_unwritable_output(unwritable, capsys):
    rc = main(["bench", "--model", "mnist_cnn", "--steps", "1", "--out", unwritable])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert f"output path {unwritable!r} cannot be written" in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "vgg16", "--out", "{tmp}/r.jsonl"], "unknown --model 'vgg16'"),
        (["--model", "mnist_cnn", "--batch", "0", "--out", "{tmp}/r.jsonl"], "--batch must be"),
        (["--suite", "nope", "--out", "{tmp}/r.jsonl"], "unknown suite 'nope'"),
        (["--model", "mnist_cnn", "--out", "{unwritable}"], "cannot be written"),
        (["--model", "mnist_cnn"], "required: --out"),
        (["--model", "mnist_cnn", "--sync-every", "-3", "--out", "{tmp}/r.jsonl"],
         "--sync-every must be auto, tf_cnn or an integer >= 1, got '-3'"),
        (["--model", "mnist_cnn", "--out", "{tmp}/r.jsonl", "ENV GPULAB_SYNC_EVERY=1.5"],
         "--sync-every must be auto, tf_cnn or an integer >= 1, got '1.5'"),
        (["--model", "mnist_cnn", "--out", "{tmp}/r.jsonl", "ENV GPULAB_MIN_TIMED_S=soon"],
         "GPULAB_MIN_TIMED_S must be a number of seconds >= 0, got 'soon'"),
    ],
)  # fmt: skip
def test_python_m_workloads_bad_input(args, needle, tmp_path, unwritable):
    argv = [a.format(tmp=tmp_path, unwritable=unwritable) for a in args if not a.startswith("ENV ")]
    env = dict(os.environ)
    env.update(a[4:].split("=", 1) for a in args if a.startswith("ENV "))  # type: ignore[misc]
    proc = subprocess.run(
        [sys.executable, "-m", "workloads", "bench", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and needle in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
