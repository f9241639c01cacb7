"""A study's lab arms through the Automation API path of `gpulab up`, against the DOUBLE of
pulumi.automation (tests/lifecycle): the stack config each arm sets, up for the first unit,
measure for the next, down + up when the study rebuilds, down at the end, and a failed up
recorded as a failed unit with the teardown still run."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import yaml
from pulumi.automation import CommandError, CommandResult
from rich.console import Console

from infra.paths import PROJECT
from infra.study.driver import Driver, RunOptions
from infra.study.model import load_study, stack_paths
from tests.lifecycle.test_automation_double import AutoDouble
from tests.study.helpers import write_study
from workloads.records import make_record

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGpulabstudytestkeyxxxxxxxxxxxxxxxxxxxxxxxx t@t"


def project(tmp_path: Path) -> Path:
    proj = tmp_path / "project"
    proj.mkdir()
    shutil.copy(PROJECT / "Pulumi.yaml", proj)
    doc = yaml.safe_load(stack_paths()["nova-pci"].read_text())
    doc["config"]["gpulab:ssh_public_key"] = KEY  # the example's placeholder is refused
    (proj / "Pulumi.nova-pci.yaml").write_text(yaml.safe_dump(doc))
    return proj


def engine(auto: AutoDouble, results: Path) -> None:
    """What the workload run does on each up: one run directory with a host's records."""
    n = {"runs": 0}

    def during_up(on_output, on_event) -> None:  # type: ignore[no-untyped-def]
        n["runs"] += 1
        host = results / "nova-pci" / f"run{n['runs']}" / "gpu-0"
        host.mkdir(parents=True)
        rec = make_record(
            run_id=f"run{n['runs']}",
            suite="smoke",
            experiment="smoke-mnist_cnn",
            model="mnist_cnn",
            arm="docker",
            topology="nova-pci",
            images_per_sec=10.0,
        )
        (host / "records.jsonl").write_text(json.dumps(rec) + "\n")

    auto.during_up = during_up


def run(tmp_path: Path, auto: AutoDouble, **doc: object) -> Driver:
    write_study(
        tmp_path,
        arms=[
            {"name": "vm", "stack": "nova-pci", "exec_env": "native"},
            {"name": "cvm", "stack": "nova-pci", "exec_env": "docker"},
        ],
        **doc,
    )
    opts = RunOptions(auto=auto, repo=project(tmp_path))
    return Driver(
        load_study(str(tmp_path / "t.yaml")),
        tmp_path / "results",
        opts,
        Console(file=io.StringIO()),
    )


def ops(auto: AutoDouble) -> list[tuple]:
    return [c for c in auto.calls if c[0] in ("up", "destroy", "set_config")]


def test_lab_arms_up_measure_rebuild_down_double(tmp_path: Path) -> None:
    auto = AutoDouble()
    engine(auto, tmp_path / "results")
    j = run(tmp_path, auto, rebuild="between-repeats").run()
    assert j.counts()["done"] == 4
    calls = ops(auto)
    kinds = [c[0] if c[0] != "set_config" else c[2] for c in calls]
    envs = [c[3] for c in calls if c[0] == "set_config" and c[2] == "gpulab:execution_envs"]
    assert envs == ['["native", "docker"]'] * 4  # the site prepares both, for every unit
    measured = [c[3] for c in calls if c[0] == "set_config" and c[2] == "gpulab:measure_envs"]
    assert measured == ['["native"]', '["docker"]', '["docker"]', '["native"]']
    each = ["gpulab:suite", "gpulab:execution_envs", "gpulab:measure_envs"]
    assert kinds == [
        # repeat 1: vm builds the lab (up), cvm measures it again (measure_id, up)
        *each, "up",
        *each, "gpulab:measure_id", "up",
        # repeat 2: rebuilt first (down + up), then measured; at the end, down
        *each, "destroy", "up",
        *each, "gpulab:measure_id", "up",
        "destroy",
    ]  # fmt: skip
    recs = [json.loads(ln) for f in j.record_files() for ln in f.read_text().splitlines()]
    assert [r["arm"] for r in recs] == ["vm", "cvm", "cvm", "vm"]  # the study's arm labels
    assert {r["params"]["lab_arm"] for r in recs} == {"docker"}
    assert j.data["teardown"]["stacks"] == [
        {"stack": "nova-pci", "status": "destroyed", "reason": ""}
    ]


def test_failed_up_is_a_failed_unit_and_teardown_still_runs_double(tmp_path: Path) -> None:
    auto = AutoDouble()
    auto.fail["up"] = CommandError(
        CommandResult("", "error: update failed: ssh: connect to host 10.0.0.5 refused", 255)
    )
    j = run(tmp_path, auto, repeats=1).run()
    assert j.counts()["failed"] == 2
    reason = j.data["units"]["vm#1"]["reason"]
    assert reason.startswith("up nova-pci failed:") and "10.0.0.5" in reason
    assert ops(auto)[-1][0] == "destroy"  # what the failed up left is torn down
    assert j.data["teardown"]["stacks"][0]["status"] == "destroyed"
