"""Suite loading and validation: every bad input is an InputError naming the key."""

from __future__ import annotations

import pytest
import yaml

from tests.parts import REPO
from workloads.errors import InputError
from workloads.suites import list_suites, load_suite, model_suite, parse_suite, resolve_suite


def entry(**kw):
    base = {"experiment": "e1", "model": "alexnet"}
    base.update(kw)
    return base


def suite(*entries, **top):
    return {"experiments": list(entries), **top}


def test_smoke_suite_loads_and_is_small():
    s = load_suite("smoke")
    assert "smoke" in list_suites()
    assert s.name == "smoke"
    assert {e.model for e in s.entries} == {"alexnet", "inception_v3", "resnet50", "mnist_cnn"}
    for e in s.entries:
        assert e.scenario == "single" and e.data == "synthetic"
        assert e.steps <= 10 and e.warmup <= 5 and e.repeats == 1
    alexnet = next(e for e in s.entries if e.model == "alexnet")
    assert alexnet.image_size is not None and 127 <= alexnet.image_size < 227


# The CPU-sized suites that the README's main command (studies/local-first-run.yaml), `gpulab
# run local` (smoke) and the catalogue tests run. Their synthetic images are tf_cnn's raw pixels
# (mean 127): at tf_cnn's rate 0.005 a few SGD steps of AlexNet reach a first timed loss of 28 to
# 177 (seeds 0-2, smoke sizes) and now and then inf, which fails the record and the run.
CPU_SUITES = (
    "smoke",
    "catalogue-smoke",
    "studies/suites/local-single.yaml",
    "studies/suites/local-shared.yaml",
    "studies/suites/local-sharing.yaml",
)
TRAINING = ("single", "shared", "sharing", "distributed")


@pytest.mark.parametrize("name", CPU_SUITES)
def test_cpu_suites_train_synthetic_images_at_a_rate_that_does_not_diverge(name):
    from workloads.step import DEFAULT_LEARNING_RATE

    s = load_suite(name)
    trained = [e for e in s.entries if e.scenario in TRAINING and e.data == "synthetic"]
    assert trained, name
    for e in trained:
        rate = e.options.get("learning_rate", DEFAULT_LEARNING_RATE)
        assert rate <= 1e-3, (name, e.experiment, e.model, rate)


def test_defaults_merge_and_model_defaults():
    s = parse_suite(
        suite(
            entry(),
            entry(experiment="e2", model="resnet50", batch=4),
            defaults={"steps": 7, "warmup": 0},
        ),
        "t",
    )
    a, b = s.entries
    assert (a.batch, a.steps, a.warmup, a.repeats) == (512, 7, 0, 3)  # alexnet's batch, 3 repeats
    assert (b.batch, b.steps) == (4, 7)
    assert a.image_size is None and a.options == {} and a.claims == ()
    assert s.measurements == 6
    assert s.process_start == "exec"  # the papers' way, unless a suite says fork
    assert parse_suite(suite(entry(), process_start="fork"), "t").process_start == "fork"


def test_cpu_sized_suites_fork_and_seed_suites_exec():
    """The suites whose measurements are seconds on a CPU fork their measuring processes from
    a zygote; the seed suites start each as its own interpreter, as the papers' runs did."""
    forked = {n for n in list_suites() if load_suite(n).process_start == "fork"}
    assert forked == {"smoke", "catalogue-smoke"}
    for name in ("local-single", "local-shared", "local-sharing"):
        assert load_suite(str(REPO / "studies" / "suites" / f"{name}.yaml")).process_start == "fork"


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        (suite(entry(), bogus=1), "unknown key 'bogus'"),
        (suite(entry(stpes=3)), "unknown key 'stpes'"),
        (suite(entry(), defaults={"stesp": 1}), "unknown key 'stesp' in defaults"),
        (suite(entry(model="vgg")), "unknown model 'vgg'"),
        (suite(entry(scenario="warp")), "unknown scenario 'warp'"),
        (suite(entry(data="tape")), "unknown data source 'tape'"),
        (suite(entry(steps=0)), "steps must be an integer >= 1, got 0"),
        (suite(entry(batch=0)), "batch must be an integer >= 1, got 0"),
        (suite(entry(repeats=0)), "repeats must be an integer >= 1, got 0"),
        (suite(entry(warmup=-1)), "warmup must be an integer >= 0, got -1"),
        (suite(entry(batch="8")), "batch must be an integer"),
        (suite(entry(steps=True)), "steps must be an integer"),
        (suite(entry(image_size=60)), "image_size 60 is too small for model 'alexnet'"),
        (suite(entry(timeout_s=0)), "timeout_s must be a number >= 1"),
        (suite(entry(claims="c1")), "claims must be a list of strings"),
        (suite(entry(options={"sede": 1})), "option 'sede' is unknown for scenario 'single'"),
        (suite(entry(options={"learning_rate": "x"})), "option 'learning_rate' must be float"),
        (suite(entry(options=[1])), "options must be a mapping"),
        (suite({"model": "alexnet"}), "experiment is required"),
        (suite(entry(), entry()), "experiment 'e1' appears twice"),
        ({"experiments": []}, "'experiments' must be a non-empty list"),
        ([1, 2], "must be a YAML mapping"),
        (suite(entry(), process_start="spawn"), "'process_start' must be one of exec, fork"),
    ],
)
def test_bad_suites_name_the_key(doc, needle):
    with pytest.raises(InputError) as err:
        parse_suite(doc, "t")
    assert needle in str(err.value)
    assert str(err.value).startswith("suite 't'")
    assert "\n" not in str(err.value)


def test_entry_errors_name_the_entry():
    with pytest.raises(InputError, match=r"experiments\[1\] \(e2\): steps"):
        parse_suite(suite(entry(), entry(experiment="e2", steps=0)), "t")


def test_files_unknown_suite_and_bad_yaml(tmp_path):
    with pytest.raises(InputError, match=r"unknown suite 'nope' .*smoke"):
        load_suite("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiments: [\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_suite(str(bad))
    good = tmp_path / "mine.yaml"
    good.write_text(yaml.safe_dump(suite(entry(model="mnist_cnn", steps=2))))
    s = load_suite(str(good))
    assert s.name == "mine" and s.entries[0].steps == 2
    with pytest.raises(InputError, match="cannot be read"):
        load_suite(str(tmp_path / "missing.yaml"))


def test_command_line_suites_name_the_option():
    s = model_suite("mnist_cnn", batch=8, steps=3, warmup=1, repeats=2, image_size=None)
    (e,) = s.entries
    assert (e.batch, e.steps, e.warmup, e.repeats) == (8, 3, 1, 2)
    with pytest.raises(InputError, match="--steps must be an integer >= 1, got 0"):
        resolve_suite(None, "alexnet", steps=0)
    with pytest.raises(InputError, match="--image-size 10 is too small"):
        resolve_suite(None, "alexnet", image_size=10)
    with pytest.raises(InputError, match="apply to --model only"):
        resolve_suite("smoke", None, batch=4)
    over = resolve_suite("smoke", None, steps=2, warmup=1, repeats=3)
    assert all((e.steps, e.warmup, e.repeats) == (2, 1, 3) for e in over.entries)
    assert [e.image_size for e in over.entries] == [
        e.image_size for e in load_suite("smoke").entries
    ]


def test_a_suite_name_longer_than_a_file_name_may_be_is_an_unknown_suite() -> None:
    """A name over the file system's 255-byte limit (a study's suite may be 1024 characters)
    is not a file: one line naming an unknown suite, not an OSError traceback."""
    for name in ("a" * 300, "a" * 300 + "/x", "a" * 1024):
        with pytest.raises(InputError, match=r"^unknown suite 'a{10}.*' \(known: .*smoke"):
            load_suite(name)
