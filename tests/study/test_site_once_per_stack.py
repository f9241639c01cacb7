"""A study prepares each stack's execution environments once and measures one per unit:
``gpulab:execution_envs`` is the environments of every arm of the study on that stack (the
study file's order, aliases resolved), the same for every unit, and ``gpulab:measure_envs`` is
the unit's arm's. So the site run's inputs do not change between arms of a stack, and the
site play runs once per stack, not once per switch between native and docker.

Mocked: pulumi.automation (the DOUBLE of tests/lifecycle: set_config writes the project's
stack file, as ``pulumi config set`` does; up runs no engine) and, to see what each unit's
stack config makes of the program, Pulumi's MOCK runtime with the name-stable cloud mocks of
tests/topologies/test_site_inputs_stable.py (no cloud, no play).
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from infra.config import raw_from_stack_file
from infra.dynamic.ansible_run import AnsibleRunProvider
from infra.errors import UsageError
from infra.paths import PROJECT
from infra.study.driver import Driver, RunOptions
from infra.study.model import load_study, stack_paths
from tests.lifecycle.test_automation_double import AutoDouble
from tests.study.helpers import write_study
from tests.topologies.test_site_inputs_stable import program_dynamic_inputs
from workloads.records import make_record

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGpulabstudytestkeyxxxxxxxxxxxxxxxxxxxxxxxx t@t"
DYNAMIC = "pulumi-python:dynamic/gpulab:"
ARMS = [  # closer2018's four arms, with an alias on one: singularity is apptainer
    {"name": "cvm", "stack": "nova-pci", "exec_env": "docker"},
    {"name": "bm", "stack": "ironic-bm", "exec_env": "native"},
    {"name": "vm", "stack": "nova-pci", "exec_env": "native"},
    {"name": "sbm", "stack": "ironic-bm", "exec_env": "singularity"},
]
ENV = {"cvm": "docker", "bm": "native", "vm": "native", "sbm": "apptainer"}


def envs(raw: dict[str, Any], key: str) -> list[str]:
    """A list key as the study set it (a JSON string, as ``pulumi config set`` stores it)."""
    value = raw[key]
    return list(json.loads(value) if isinstance(value, str) else value)


def project(tmp_path: Path) -> Path:
    proj = tmp_path / "project"
    proj.mkdir()
    shutil.copy(PROJECT / "Pulumi.yaml", proj)
    for stack in ("nova-pci", "ironic-bm"):
        doc = yaml.safe_load(stack_paths()[stack].read_text())
        doc["config"]["gpulab:ssh_public_key"] = KEY  # the example's placeholder is refused
        (proj / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(doc))
    return proj


def engine(auto: AutoDouble, proj: Path, results: Path) -> list[tuple[str, dict[str, Any]]]:
    """Each up: the stack config it ran with (the stack file), and a run directory of
    records as the workload run writes them. Returns the list the ups fill."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def during_up(on_output, on_event) -> None:  # type: ignore[no-untyped-def]
        stack = [c for c in auto.calls if c[0] == "up"][-1][1]
        raw = raw_from_stack_file(proj / f"Pulumi.{stack}.yaml")
        seen.append((stack, raw))
        host = results / stack / f"run{len(seen)}" / "gpu-0"
        host.mkdir(parents=True)
        rec = make_record(
            run_id=f"run{len(seen)}",
            suite="smoke",
            experiment="smoke-mnist_cnn",
            model="mnist_cnn",
            arm=envs(raw, "measure_envs")[0],
            topology=stack,
            images_per_sec=10.0,
        )
        (host / "records.jsonl").write_text(json.dumps(rec) + "\n")

    auto.during_up = during_up
    return seen


def driver(tmp_path: Path, auto: AutoDouble, proj: Path, **doc: Any) -> Driver:
    write_study(tmp_path, **doc)
    return Driver(
        load_study(str(tmp_path / "t.yaml")),
        tmp_path / "results",
        RunOptions(auto=auto, repo=proj, keep=True),
        Console(file=io.StringIO()),
    )


def dynamic_inputs(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The dynamic resources' inputs by name, of the program built with this stack config."""
    return program_dynamic_inputs(raw, stack="unit")


def test_each_stack_prepares_its_arms_union_once_and_measures_the_units_arm_double(
    tmp_path: Path,
) -> None:
    proj = project(tmp_path)
    auto = AutoDouble()
    seen = engine(auto, proj, tmp_path / "results")
    j = driver(tmp_path, auto, proj, arms=ARMS, order="randomized", seed=3).run()
    assert j.counts()["done"] == 8
    order = j.order()
    # one up per unit (the first on a stack builds it, the others measure it)
    assert [(s, envs(raw, "measure_envs")) for s, raw in seen] == [
        (j.data["arms"][u.arm]["stack"], [ENV[u.arm]]) for u in order
    ]
    prepared = {"nova-pci": ["docker", "native"], "ironic-bm": ["native", "apptainer"]}
    for stack, raw in seen:  # the study file's order, whatever the units' order
        assert envs(raw, "execution_envs") == prepared[stack], stack
    # what the program makes of each unit's config: the same site run for every unit of a
    # stack (its provider's diff finds no change), one workload run in the unit's environment
    sites: dict[str, list[dict[str, Any]]] = {}
    for (stack, raw), u in zip(seen, order, strict=True):
        made = dynamic_inputs(raw)
        lab = raw["lab"]
        assert sorted(made) == [f"{lab}-site", f"{lab}-workloads-{ENV[u.arm]}"], sorted(made)
        assert made[f"{lab}-site"]["variables"]["gpulab_exec_envs"] == prepared[stack]
        sites.setdefault(stack, []).append(made[f"{lab}-site"])
    for stack, inputs in sites.items():
        assert len(inputs) == 4, stack
        for other in inputs[1:]:
            assert AnsibleRunProvider().changed_inputs(inputs[0], other) == [], stack


def test_an_arm_added_later_is_prepared_too_and_an_edit_of_a_finished_arm_is_refused_double(
    tmp_path: Path,
) -> None:
    """A study edit that adds an arm on a built stack: its environment joins what the site
    prepares (the site runs again, once, to prepare it); the finished unit stays done. An
    edit of a finished arm's exec_env is still refused, naming the key."""
    proj = project(tmp_path)
    auto = AutoDouble()
    seen = engine(auto, proj, tmp_path / "results")
    vm = {"name": "vm", "stack": "nova-pci", "exec_env": "native"}
    j = driver(tmp_path, auto, proj, arms=[vm], repeats=1).run()
    assert j.counts()["done"] == 1
    cvm = {"name": "cvm", "stack": "nova-pci", "exec_env": "docker"}
    j = driver(tmp_path, auto, proj, arms=[vm, cvm], repeats=1).run()
    assert j.counts()["done"] == 2 and j.unit(j.order()[0])["attempts"] == 1
    assert [(envs(raw, "execution_envs"), envs(raw, "measure_envs")) for _, raw in seen] == [
        (["native"], ["native"]),
        (["native", "docker"], ["docker"]),
    ]
    first, second = (dynamic_inputs(raw)[f"{raw['lab']}-site"] for _, raw in seen)
    assert AnsibleRunProvider().changed_inputs(first, second) == ["variables"]
    with pytest.raises(UsageError, match=r"arms\[0\]\.exec_env"):
        driver(tmp_path, auto, proj, arms=[{**vm, "exec_env": "docker"}, cvm], repeats=1)
