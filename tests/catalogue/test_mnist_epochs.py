"""The VMware MNIST experiment: the MNIST CNN for E epochs on IDX files the test writes."""

from __future__ import annotations

import pytest

from workloads.data import mnist
from workloads.errors import InputError
from workloads.records import make_record
from workloads.scenarios import Job, mnist_epochs


def _job(data: str, **options: object) -> Job:
    return Job(
        suite="t",
        experiment="mnist_epochs",
        model="mnist_cnn",
        scenario="mnist_epochs",
        data=data,
        batch=64,
        steps=1,
        warmup=0,
        options=dict(options),
    )


@pytest.mark.tf
def test_epochs_on_real_idx_files(tmp_path) -> None:
    mnist.write_mnist_like(tmp_path, train=640, test=200, gz=True)
    fields = mnist_epochs.run(_job("real", epochs=3, data_dir=str(tmp_path), learning_rate=0.1))
    rec = make_record(
        run_id="r",
        suite="t",
        experiment="mnist_epochs",
        model="mnist_cnn",
        scenario="mnist_epochs",
        **fields,
    )
    m = rec["metrics"]
    assert rec["kind"] == "job" and m["epochs"] == 3
    assert rec["params"]["steps_per_epoch"] == 10 and rec["params"]["train_images"] == 640
    assert m["train_wall_s"] == pytest.approx(sum(m[f"epoch_s_{i}"] for i in range(3)), rel=0.05)
    assert rec["images_per_sec"] == pytest.approx(640 * 3 / m["train_wall_s"])
    assert m["test_accuracy"] > 0.5  # the generated digits are learnable: training happened


def test_real_data_needs_a_directory(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("GPULAB_MNIST_DIR", raising=False)
    with pytest.raises(InputError, match="GPULAB_MNIST_DIR"):
        mnist_epochs.run(_job("real", epochs=1))
    with pytest.raises(InputError, match="train-images-idx3-ubyte"):
        mnist_epochs.run(_job("real", epochs=1, data_dir=str(tmp_path)))


@pytest.mark.parametrize(
    ("options", "match"),
    [({"epochs": 0}, "'epochs'"), ({"limit": -5}, "'limit'"), ({"batches": 3}, "'batches'")],
)
def test_option_errors(options: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        mnist_epochs.check_options(options)
