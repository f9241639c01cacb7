"""What the study's paired-arm comparison treats as the same software (infra/study/fingerprint.py).

Records are built per case (milliseconds): the facts each arm's fingerprints state, the
warnings for an arm that differs from the baseline or from itself, the claims a warning is
attached to, and the report's own pairing check of the measurement settings.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.study.fingerprint import (
    FACTS,
    Warning_,
    arm_values,
    compare,
    paired_setting_warning,
)
from report.table import Arm

FACT_NAMES = [name for name, _ in FACTS]


def fp(
    driver: str = "550.54",
    cuda: str = "12.4",
    cudnn: str = "9.1",
    packages: dict[str, str] | None = None,
    image: str = "sha256:aaa",
    cpu: str = "Xeon 8480",
    gpus: list[Any] | None = None,
) -> dict[str, Any]:
    return {
        "gpu": {
            "driver_version": driver,
            "cuda_driver_version": cuda,
            "gpus": gpus if gpus is not None else [{"name": "H100", "max_sm_clock_mhz": 1980}],
        },
        "software": {
            "packages": packages if packages is not None else {"tensorflow": "2.16.1"},
            "backend": {"tensorflow_build": {"cudnn_version": cudnn}},
        },
        "container": {"image_digest": image},
        "cpu": {"model": cpu},
    }


def rec(fingerprint: Any = None, claims: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"fingerprint": fp() if fingerprint is None else fingerprint, **kw}
    if claims is not None:
        r["claims"] = claims
    return r


def test_every_fact_is_read_from_where_a_record_states_it() -> None:
    vals = arm_values([rec()])
    assert vals == {
        "NVIDIA driver": ["550.54"],
        "CUDA": ["12.4"],
        "cuDNN": ["9.1"],
        "framework": ["tensorflow 2.16.1"],
        "image digest": ["sha256:aaa"],
        "CPU model": ["Xeon 8480"],
        "GPU model": ["H100"],
        "GPU clocks (max SM MHz)": ["1980"],
    }


def test_a_fact_falls_back_to_its_next_source_when_the_first_is_empty() -> None:
    for empty in (None, "", [], {}):
        f = {
            "gpu": {"cuda_driver_version": empty},
            "software": {
                "backend": {
                    "tensorflow_build": {"cuda_version": "12.3", "cudnn_version": empty},
                    "torch_cudnn": "8902",
                }
            },
            "container": {"image_digest": empty, "image_id": "sha256:bbb", "image": "img:1"},
        }
        vals = arm_values([rec(f)])
        assert vals["CUDA"] == ["12.3"], empty
        assert vals["cuDNN"] == ["8902"], empty
        assert vals["image digest"] == ["sha256:bbb"], empty
    only_name = {"container": {"image": "img:1"}}
    assert arm_values([rec(only_name)])["image digest"] == ["img:1"]


def test_a_fact_no_record_states_is_no_value() -> None:
    vals = arm_values([rec({"gpu": "not a mapping", "cpu": {"model": ""}})])
    assert vals == {name: [] for name in FACT_NAMES}
    assert arm_values([{"fingerprint": "text"}, {}]) == {name: [] for name in FACT_NAMES}


def test_gpu_facts_are_the_sorted_distinct_values_of_the_gpus_that_state_them() -> None:
    gpus = [
        {"name": "H100", "max_sm_clock_mhz": 1980},
        {"name": "A100", "max_sm_clock_mhz": 1410},
        {"name": "H100"},
        "not a gpu",
        {"name": ""},
    ]
    vals = arm_values([rec(fp(gpus=gpus))])
    assert vals["GPU model"] == ["A100, H100"]
    assert vals["GPU clocks (max SM MHz)"] == ["1410, 1980"]
    assert arm_values([rec(fp(gpus=[]))])["GPU model"] == []


def test_the_framework_names_every_framework_package_in_a_fixed_order() -> None:
    pk = {"torch": "2.3", "keras": "3.3.3", "numpy": "1.26", "tensorflow-cpu": "2.16", "jax": "0.4"}
    assert arm_values([rec(fp(packages=pk))])["framework"] == [
        "tensorflow-cpu 2.16, keras 3.3.3, jax 0.4, torch 2.3"
    ]
    assert arm_values([rec(fp(packages={"numpy": "1.26"}))])["framework"] == []
    f = fp()
    f["software"]["packages"] = ["tensorflow"]
    assert arm_values([rec(f)])["framework"] == []


def test_an_arms_values_are_distinct_in_the_order_first_seen() -> None:
    recs = [rec(fp(driver="2")), rec(fp(driver="1")), rec(fp(driver="2")), rec({})]
    assert arm_values(recs)["NVIDIA driver"] == ["2", "1"]


def test_arms_with_the_same_software_give_no_warning() -> None:
    per_arm = {"native": [rec(), rec()], "docker": [rec()], "vm": [rec()]}
    assert compare(per_arm, "native", ["c1"]) == []


def test_an_arm_whose_driver_differs_from_the_baselines_is_a_warning() -> None:
    per_arm = {"native": [rec()], "docker": [rec(fp(driver="535.1"))]}
    assert compare(per_arm, "native", ["c1", "c2"]) == [
        Warning_("docker", "NVIDIA driver: 535.1 vs baseline native 550.54", ["c1", "c2"])
    ]


def test_repeats_that_differ_among_themselves_are_a_warning_for_any_arm() -> None:
    per_arm = {
        "native": [rec(fp(cpu="A")), rec(fp(cpu="B"))],
        "docker": [rec(fp(cpu="A")), rec(fp(cpu="B"))],
    }
    assert compare(per_arm, "native", ["c"]) == [
        Warning_("native", "CPU model: repeats differ (A | B)", ["c"]),
        Warning_("docker", "CPU model: repeats differ (A | B)", ["c"]),
    ]


def test_a_baseline_whose_repeats_differ_is_named_whole_in_the_other_arms_warning() -> None:
    per_arm = {
        "native": [rec(fp(image="x")), rec(fp(image="y"))],
        "docker": [rec(fp(image="z"))],
    }
    warnings = compare(per_arm, "native", [])
    assert Warning_("docker", "image digest: z vs baseline native x | y", []) in warnings
    assert len(warnings) == 2


def test_a_fact_one_side_does_not_state_is_not_compared() -> None:
    no_cpu = fp()
    del no_cpu["cpu"]
    assert compare({"native": [rec()], "docker": [rec(no_cpu)]}, "native", []) == []
    assert compare({"native": [rec(no_cpu)], "docker": [rec()]}, "native", []) == []
    assert compare({"docker": [rec()]}, "native", []) == []


@pytest.mark.parametrize(
    ("named", "study_claims", "attached"),
    [
        (None, ["c1", "c2"], ["c1", "c2"]),
        (["c2"], ["c1", "c2", "c3"], ["c2"]),
        (["c3", "c1"], ["c1", "c2", "c3"], ["c1", "c3"]),
        (["other"], ["c1", "c2"], ["c1", "c2"]),
        ([], ["c1"], ["c1"]),
    ],
    ids=["none-named", "one", "study-order", "unknown-claim", "empty-list"],
)
def test_a_warning_is_attached_to_the_claims_the_arms_records_test(
    named: list[str] | None, study_claims: list[str], attached: list[str]
) -> None:
    per_arm = {"native": [rec()], "docker": [rec(fp(cuda="11.8"), claims=named), rec()]}
    (w,) = compare(per_arm, "native", study_claims)
    assert w.arm == "docker"
    assert w.claims == attached


def ok_record(**kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {
        "status": "ok",
        "suite": "s",
        "experiment": "e",
        "model": "resnet50",
        "scenario": "single",
        "batch_size": 32,
        "steps": 10,
        "warmup": 2,
        "topology": "local",
        "arm": "native",
        "run_id": "r1",
        "params": {},
    }
    r.update(kw)
    return r


def test_arms_measured_with_the_same_settings_are_paired() -> None:
    records = [ok_record(), ok_record(arm="docker")]
    assert paired_setting_warning(records, Arm("local", "native"), ["c"]) is None


def test_an_arm_measured_with_other_steps_is_a_warning_on_every_claim() -> None:
    records = [ok_record(), ok_record(arm="docker", steps=20)]
    w = paired_setting_warning(records, Arm("local", "native"), ["c1", "c2"])
    assert w is not None
    assert w.arm == "*"
    assert "steps" in w.text and "not paired" in w.text
    assert w.claims == ["c1", "c2"]


def test_failed_records_are_not_held_to_the_pairing() -> None:
    records = [ok_record(), ok_record(arm="docker", steps=20, status="failed")]
    assert paired_setting_warning(records, Arm("local", "native"), ["c"]) is None
