"""``gpulab:measure_envs``: the execution environments the workload runs measure in, a subset of
``gpulab:execution_envs`` (what the site run prepares; default: all of them).

Validation is the real config model (no mock). The program is built under Pulumi's MOCK
runtime (no engine here) with the name-stable cloud mocks of
tests/topologies/test_site_inputs_stable.py, so two builds differ only where the config does.
The last tests drive the end-to-end engine double (tests/e2e/engine.py) with its recording
provider in place of the provider host (no play runs): what a switch of the measured
environment does to the site run (same) and to the workload runs (run).
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import ConfigError, validate
from infra.dynamic import execution_envs, measure_envs
from infra.dynamic.ansible_run import AnsibleRunProvider
from tests.pulumi.mocks import stack_raw
from tests.topologies.test_site_inputs_stable import RecordingProvider, program_dynamic_inputs

DYNAMIC = "pulumi-python:dynamic/gpulab:"
BOTH = {"execution_envs": ["native", "docker"]}


def problems(topology: str, **overrides: Any) -> list[str]:
    with pytest.raises(ConfigError) as err:
        validate(stack_raw(topology, **overrides))
    return err.value.problems


# -- the key --------------------------------------------------------------------------------


def test_measure_envs_default_is_every_prepared_environment() -> None:
    cfg = validate(stack_raw("nova-pci", **BOTH))
    assert cfg.measure_envs == ()
    assert measure_envs(cfg) == execution_envs(cfg) == ["native", "docker"]
    k8s = validate(stack_raw("magnum-k8s"))  # the topology's default: k8s
    assert measure_envs(k8s) == execution_envs(k8s) == ["k8s"]


def test_measure_envs_picks_a_subset_in_the_prepared_order() -> None:
    cfg = validate(stack_raw("nova-pci", **BOTH, measure_envs=["docker"]))
    assert execution_envs(cfg) == ["native", "docker"] and measure_envs(cfg) == ["docker"]
    cfg = validate(stack_raw("nova-pci", **BOTH, measure_envs=["docker", "native"]))
    assert measure_envs(cfg) == ["native", "docker"]  # execution_envs' order: they run so
    # an alias on either side: singularity is apptainer
    cfg = validate(
        stack_raw("nova-pci", execution_envs=["native", "apptainer"], measure_envs=["singularity"])
    )
    assert measure_envs(cfg) == ["apptainer"]


def test_measure_envs_outside_execution_envs_is_one_line_naming_the_key() -> None:
    assert problems("nova-pci", execution_envs=["native"], measure_envs=["native", "docker"]) == [
        "gpulab:measure_envs names docker, which gpulab:execution_envs does not prepare "
        "(it prepares native): add it there or measure less"
    ]
    # against the topology's default when execution_envs is absent
    assert problems("magnum-k8s", measure_envs=["native"]) == [
        "gpulab:measure_envs names native, which gpulab:execution_envs does not prepare "
        "(it prepares k8s): add it there or measure less"
    ]


def test_measure_envs_unknown_environment_is_refused_by_type() -> None:
    (line,) = problems("nova-pci", **BOTH, measure_envs=["lxc"])
    assert line.startswith("gpulab:measure_envs must be a list of native, docker, apptainer")


def test_measure_envs_outside_execution_envs_refused_by_the_program_too() -> None:
    """A config built without validation (a double of LabConfig) still cannot measure an
    environment the site did not prepare."""
    from types import SimpleNamespace as NS

    cfg = NS(topology="nova-pci", args=NS(), execution_envs=("native",), measure_envs=("docker",))
    with pytest.raises(ValueError, match="gpulab:measure_envs names docker"):
        measure_envs(cfg)  # type: ignore[arg-type]


# -- the program: the site run prepares, the workload runs measure -------------------------------


def build(topology: str, **overrides: Any) -> dict[str, dict[str, Any]]:
    """The dynamic resources' inputs by name, of the whole program of an example stack."""
    return program_dynamic_inputs(stack_raw(topology, **overrides), stack="measure")


@pytest.mark.parametrize("topology", ["ironic-bm", "nova-pci"])
def test_switching_the_measured_env_keeps_the_site_inputs_mock(topology: str) -> None:
    lab = "ms"
    native = build(topology, lab=lab, **BOTH, measure_envs=["native"])
    docker = build(topology, lab=lab, **BOTH, measure_envs=["docker"], measure_id="again")
    assert sorted(native) == [f"{lab}-site", f"{lab}-workloads-native"]
    assert sorted(docker) == [f"{lab}-site", f"{lab}-workloads-docker"]
    site_n, site_d = native[f"{lab}-site"], docker[f"{lab}-site"]
    assert site_n["variables"]["gpulab_exec_envs"] == ["native", "docker"]
    # the site run's diff (the provider's own) sees no change: the site play does not re-run
    assert AnsibleRunProvider().changed_inputs(site_n, site_d) == []
    assert native[f"{lab}-workloads-native"]["execution_env"] == "native"
    assert docker[f"{lab}-workloads-docker"]["execution_env"] == "docker"
    # the comparison can fail: what the site prepares is one of its inputs
    only = build(topology, lab=lab, execution_envs=["native"])
    assert AnsibleRunProvider().changed_inputs(site_n, only[f"{lab}-site"]) == ["variables"]


@pytest.mark.integration
def test_engine_double_switch_of_measured_env_keeps_the_site_run() -> None:
    """Three ups of one stack as a study's units make them: native, docker (a measure), native
    again; the site run is created once and then the same, each unit's workload run runs."""
    from tests.e2e.engine import Engine

    provider = RecordingProvider()
    engine = Engine(provider, ["192.0.2.10"], log=lambda _: None)
    raw = stack_raw("ironic-bm", lab="sw", host_count=1, **BOTH)
    units = [("native", ""), ("docker", "m1"), ("native", "m2")]
    steps = []
    for env, measure_id in units:
        result = engine.up("ironic-bm", dict(raw, measure_envs=[env], measure_id=measure_id))
        assert result.error is None, result.error
        steps.append(
            {name: op for name, op, _ in result.steps if "-site" in name or "-work" in name}
        )
    assert steps == [
        {"sw-site": "create", "sw-workloads-native": "create"},
        {"sw-site": "same", "sw-workloads-docker": "create"},
        {"sw-site": "same", "sw-workloads-native": "update"},  # measure_id: triggers
    ]
    assert engine.changed_inputs == {"sw-workloads-native": ["triggers"]}
    engine.down()
