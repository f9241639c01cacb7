"""Every Fathom-style model trains at tiny size on the CPU through the runner's own step."""

from __future__ import annotations

import math

import pytest

from workloads import fathom
from workloads.errors import InputError
from workloads.records import make_record
from workloads.scenarios import Job


@pytest.mark.tf
@pytest.mark.parametrize("name", fathom.FATHOM_MODELS)
def test_fathom_model_trains_and_is_timed(name: str) -> None:
    job = Job(
        suite="t",
        experiment="fathom",
        model=name,
        scenario="fathom",
        batch=4,
        steps=3,
        warmup=1,
        options={"size": "tiny"},
    )
    fields = fathom.run(job)
    assert fields["params"]["fathom_port"] == "Fathom-like"
    assert fields["params"]["fathom_differences"][0] == fathom.DIFFERENCES[name][0]
    rec = make_record(
        run_id="r", suite="t", experiment="fathom", model=name, scenario="fathom", **fields
    )
    assert len(rec["step_times_s"]) == 3 and all(t > 0 for t in rec["step_times_s"])
    wall = rec["metrics"]["timed_wall_s"]
    assert math.isclose(wall, sum(rec["step_times_s"]), rel_tol=1e-6)
    assert math.isclose(rec["images_per_sec"], 4 * 3 / wall, rel_tol=1e-9)
    assert rec["params"]["param_count"] > 0 and rec["params"]["size"] == "tiny"


@pytest.mark.tf
def test_fathom_losses_are_finite_and_fall() -> None:
    import keras

    from workloads.step import build_train_step, make_optimizer

    for name in ("speech", "autoenc", "deepq", "memnet"):
        work = fathom.build(name, 8, "tiny")
        step = build_train_step(work.model, make_optimizer(0.01), work.loss)
        losses = [float(step(work.inputs, work.targets)) for _ in range(6)]
        assert all(math.isfinite(v) for v in losses), (name, losses)
        assert losses[-1] < losses[0], (name, losses)
    assert keras.backend.backend() == "tensorflow"


def test_full_size_parameter_counts() -> None:
    # DQN (Mnih et al. 2015) with 18 actions; ResNet-34 on ImageNet: 21.8 M
    assert fathom.build("deepq", 1, "full").model.count_params() == 1_693_362
    assert fathom.build("residual", 1, "full").model.count_params() == pytest.approx(
        21.8e6, rel=0.01
    )


def test_fathom_bad_input() -> None:
    with pytest.raises(InputError, match="'size'"):
        fathom.check_options({"size": "medium"})
    with pytest.raises(InputError, match="'epochs'"):
        fathom.check_options({"epochs": 3})
    with pytest.raises(InputError, match="'googlenet'"):
        fathom.build("googlenet", 1)


def test_fathom_models_are_named_fathom_like_with_their_differences() -> None:
    from workloads import fathom

    assert set(fathom.DIFFERENCES) == set(fathom.FATHOM_MODELS)
    assert fathom.PORT == "Fathom-like"
    assert all(fathom.DIFFERENCES[m] for m in fathom.FATHOM_MODELS)
