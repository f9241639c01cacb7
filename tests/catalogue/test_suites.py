"""The seed papers' suites load, name published claims, and reject bad catalogue entries."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from workloads.errors import InputError
from workloads.suites import load_suite, parse_suite

REFERENCE = (
    Path(__file__).resolve().parents[2] / "workloads" / "reference" / "published-results.yaml"
)
SUITES = ("closer2018", "vmware-mnist", "ibm-containers", "bitfusion-sharing")


def _claim_ids() -> set[str]:
    doc = yaml.safe_load(REFERENCE.read_text())
    return {f"{paper}/{c['id']}" for paper, body in doc.items() for c in body.get("claims", [])}


@pytest.mark.parametrize("name", SUITES)
def test_suite_loads_and_names_published_claims(name: str) -> None:
    suite = load_suite(name)
    known = _claim_ids()
    named = {c for e in suite.entries for c in e.claims}
    assert named, f"suite {name} names no claim"
    assert named <= known, named - known


def test_closer2018_is_the_papers_whole_matrix() -> None:
    suite = load_suite("closer2018")
    cells = {(e.experiment, e.model, e.data, e.scenario) for e in suite.entries}
    for model in ("inception_v3", "resnet50", "alexnet"):
        assert ("single_synthetic", model, "synthetic", "single") in cells
        assert ("single_real", model, "real", "single") in cells
        assert ("distributed_synthetic", model, "synthetic", "distributed") in cells
        assert ("distributed_real", model, "real", "distributed") in cells
        assert ("shared", model, "synthetic", "shared") in cells
    batches = {e.model: e.batch for e in suite.entries if e.experiment == "single_synthetic"}
    assert batches == {"inception_v3": 32, "resnet50": 32, "alexnet": 512}
    assert all((e.warmup, e.steps) == (10, 100) for e in suite.entries)
    dist = [e for e in suite.entries if e.scenario == "distributed"]
    assert all(e.options["mode"] == "ps" and e.options["workers"] == 2 for e in dist)
    shared = [e for e in suite.entries if e.scenario == "shared"]
    assert all(
        (e.options["background_model"], e.options["background_batch"]) == ("alexnet", 512)
        for e in shared
    )


def test_ibm_and_bitfusion_cover_their_workloads() -> None:
    ibm = load_suite("ibm-containers")
    assert {e.model for e in ibm.entries if e.scenario == "kernel"} == {
        "gemm",
        "conv",
        "rnn",
        "allreduce",
        "bandwidth",
    }
    assert {e.model for e in ibm.entries if e.scenario == "fathom"} == {
        "seq2seq",
        "memnet",
        "speech",
        "autoenc",
        "residual",
        "vgg",
        "alexnet",
        "deepq",
    }
    bf = load_suite("bitfusion-sharing")
    assert all(e.scenario == "sharing" and e.options["jobs"] == 4 for e in bf.entries)
    assert all(e.repeats == 5 for e in bf.entries)


def _entry(**fields: object) -> dict:
    return {"experiments": [{"experiment": "x", **fields}]}


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ({"model": "gemm", "scenario": "kernel", "options": {"sizes": "huge"}}, "sizes"),
        ({"model": "fft", "scenario": "kernel"}, "fft"),
        ({"model": "bert", "scenario": "fathom"}, "bert"),
        ({"model": "mnist_cnn", "scenario": "distributed", "options": {"mode": "ring"}}, "mode"),
        (
            {"model": "alexnet", "scenario": "shared", "options": {"background_batch": -1}},
            "background_batch",
        ),
        ({"model": "alexnet", "scenario": "sharing", "options": {"jobs": "four"}}, "jobs"),
        ({"model": "mnist_cnn", "scenario": "mnist_epochs", "options": {"epochs": 0}}, "epochs"),
        ({"model": "alexnet", "scenario": "mnist_epochs"}, "alexnet"),
        ({"model": "alexnet", "data": "imagenet"}, "imagenet"),
    ],
)
def test_bad_catalogue_entries_are_one_clear_error(entry: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        parse_suite(_entry(**entry), "bad")


def test_same_experiment_twice_with_the_same_model_is_rejected() -> None:
    doc = {
        "experiments": [
            {"experiment": "shared", "model": "alexnet", "batch": 32},
            {"experiment": "shared", "model": "alexnet", "batch": 32},
        ]
    }
    with pytest.raises(InputError, match="appears twice"):
        parse_suite(doc, "dup")
    doc["experiments"][1]["batch"] = 512
    assert len(parse_suite(doc, "ok").entries) == 2


def test_catalogue_smoke_covers_every_catalogue_scenario() -> None:
    from workloads.scenarios import SCENARIOS

    suite = load_suite("catalogue-smoke")
    assert {e.scenario for e in suite.entries} == set(SCENARIOS) - {"single"}
    assert {e.options.get("mode") for e in suite.entries if e.scenario == "distributed"} == {
        "ps",
        "allreduce",
    }


SEED_SUITES = ("closer2018", "vmware-mnist", "ibm-containers", "bitfusion-sharing")


@pytest.mark.parametrize("name", SEED_SUITES)
def test_seed_suites_state_their_deviations_and_five_repeats(name: str) -> None:
    suite = load_suite(name)
    assert suite.deviations and all(len(d) > 20 for d in suite.deviations)
    assert all(e.repeats >= 5 for e in suite.entries)


def test_closer2018_uses_the_papers_setups() -> None:
    suite = load_suite("closer2018")
    by = {(e.experiment, e.model): e for e in suite.entries}
    single = by[("single_synthetic", "resnet50")]
    assert single.options == {"variables": "cpu", "devices": 2}
    dist = by[("distributed_synthetic", "alexnet")]
    assert dist.options["mode"] == "ps" and dist.options["sync"] is True
    sh = by[("shared", "resnet50")].options
    assert (
        sh["foreground_env"]["CUDA_VISIBLE_DEVICES"] != sh["background_env"]["CUDA_VISIBLE_DEVICES"]
    )
    assert sh["order"] == "alternate"


def test_bitfusion_sharing_names_a_partition() -> None:
    e = load_suite("bitfusion-sharing").entries[0]
    assert e.options["partition"] == "auto" and e.options["share"] == 0.25


@pytest.mark.parametrize("bad", ["one line", [""], [1], {"a": "b"}])
def test_bad_deviations_are_refused(bad: object) -> None:
    doc = {"experiments": [{"experiment": "x", "model": "alexnet"}], "deviations": bad}
    with pytest.raises(InputError, match="'deviations' must be a list"):
        parse_suite(doc, "t")


def test_records_carry_the_suite_deviations(tmp_path: Path) -> None:
    """Every record of a run carries its suite's deviations (params.suite_deviations)."""
    from workloads.bench import run_bench

    doc = {
        "experiments": [{"experiment": "x", "model": "mnist_cnn", "repeats": 1}],
        "deviations": ["not the paper's GPU"],
    }
    res = run_bench(parse_suite(doc, "t"), tmp_path / "o.jsonl", python="/bin/true")
    assert res.records[0]["params"]["suite_deviations"] == ["not the paper's GPU"]
