"""An arm's ``config`` (stack keys it sets over its stack's) and ``rebuild: every-unit``: the
vGPU study's factors as arms of one stack (infra/study/arm_config.py).

The lab arms run against the DOUBLE of pulumi.automation (tests/lifecycle): the Pulumi CLI and
engine cannot run here. The stack files it copies and the calls it gets are real.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from infra.cli import main
from infra.config import raw_from_stack_file, validate
from infra.study.arm_config import arm_stack_config
from infra.study.driver import Driver, RunOptions
from infra.study.model import OWNER_KEY, load_study, stack_paths
from tests.lifecycle.test_automation_double import AutoDouble
from tests.study.helpers import write_study
from tests.study.test_lab_double import project
from workloads.records import make_record
from workloads.vgpu_factors import parse

VGPU = {
    "mode": "vgpu",
    "gpu_host": None,
    "pci_device_ids": None,
    "gpus_per_vm": None,
    "gpu_bar_gb": None,
    "vgpu_profile": "grid_p100-16q",
}


def test_the_vmware_vgpu_study_has_policy_profile_and_knowledge_worker_arms() -> None:
    """studies/vmware-vgpu.yaml: each factor of the paper is an arm of the vsphere-gpu stack
    (copied as study-vmware-vgpu-<arm> with a lab of its own), one lab at a time."""
    study = load_study("vmware-vgpu")
    assert study.rebuild == "every-unit" and study.baseline == "native-docker"
    assert "vmware_vgpu_containers/mixed_workloads" in study.claims
    base = raw_from_stack_file(stack_paths()["vsphere-gpu"])
    factors = {}
    for arm in study.arms:
        if not arm.config:
            continue
        assert arm.stack == f"study-vmware-vgpu-{arm.name}" and arm.topology == "vsphere-gpu"
        cfg = validate(arm_stack_config(base, arm.config)).args
        assert cfg.lab == f"vs-lab-{arm.name}" and cfg.mode == "vgpu"
        assert cfg.vgpu_policy_apply is True
        factors[arm.name] = (cfg.vgpu_policy, cfg.vgpu_profile, cfg.vgpu_vms_per_gpu,
                             cfg.host_count, cfg.kw_vm_count)  # fmt: skip
    print(json.dumps(factors, indent=1))
    assert factors == {
        "vgpu": ("best-effort", "grid_p100-16q", 1, 1, 0),
        "vgpu-equal": ("equal-share", "grid_p100-16q", 1, 1, 0),
        "vgpu-fixed": ("fixed-share", "grid_p100-16q", 1, 1, 0),
        "vgpu-2pg": ("best-effort", "grid_p100-8q", 2, 2, 0),
        "vgpu-4pg": ("best-effort", "grid_p100-4q", 4, 4, 0),
        "vgpu-kw32": ("best-effort", "grid_p100-16q", 1, 1, 32),
        "vgpu-kw64": ("best-effort", "grid_p100-16q", 1, 1, 64),
        "vgpu-kw96": ("best-effort", "grid_p100-16q", 1, 1, 96),
    }


BAD_CONFIG = [
    ({"kw_vms": 3}, "arms[1].config.kw_vms: not a gpulab stack key"),
    ({"suite": "smoke"}, "arms[1].config.suite: the study sets it for each unit"),
    ({"topology": "local"}, "arms[1].config.topology: the arm's stack decides it"),
    ({"vsphere_password": "x"}, "arms[1].config.vsphere_password: a secret: keep it in the"),
    ({**VGPU, "vgpu_policy": "round-robin"}, "arms[1].config: gpulab:vgpu_policy must be one of"),
    ({"vgpu_policy": "equal-share"}, "arms[1].config: gpulab:vgpu_policy is only used with"),
    ({**VGPU, "kw_vm_count": 10_000}, "arms[1].config: gpulab:kw_vm_count must be"),
    ([1, 2], "arms[1].config: a mapping of 1 to 64 gpulab keys"),
    ({}, "arms[1].config: a mapping of 1 to 64 gpulab keys"),
]


@pytest.mark.parametrize(("config", "line"), BAD_CONFIG, ids=[b[1][:40] for b in BAD_CONFIG])
def test_a_bad_arm_config_is_one_line_naming_the_key_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: Any, line: str
) -> None:
    arms = [
        {"name": "a", "stack": "vsphere-gpu", "exec_env": "native"},
        {"name": "b", "stack": "vsphere-gpu", "exec_env": "native", "config": config},
    ]
    path = write_study(tmp_path, arms=arms)
    rc = main(["study", "run", str(path), "--results-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err.strip()
    print(err)
    assert rc == 2 and "\n" not in err and "Traceback" not in err
    assert f"study {path}: {line}" in err
    assert not (tmp_path / "results").exists()


def test_an_arm_lab_name_that_cannot_be_made_asks_for_config_lab(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arms = [{"name": "a-very-long-arm-name-for-a-lab", "stack": "vsphere-gpu",
             "exec_env": "native", "config": {"kw_vm_count": 2}}]  # fmt: skip
    path = write_study(tmp_path, arms=arms)
    rc = main(["study", "run", str(path), "--results-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert rc == 2 and "arms[0].config.lab: the arm's own lab name 'vs-lab-a-very-long" in err
    assert "set config.lab" in err and not (tmp_path / "results").exists()


def test_config_arms_measure_copies_of_their_stack_one_lab_at_a_time_double(
    tmp_path: Path,
) -> None:
    """Two arms of one stack file differing by a key: each unit copies it with the arm's
    keys, its own lab name and the study's mark, builds it (up) and destroys it (down) before
    the next unit builds the other; the stack's own file is left as it was."""
    auto = AutoDouble()
    results = tmp_path / "results"
    proj = project(tmp_path)
    base = (proj / "Pulumi.nova-pci.yaml").read_text()

    def during_up(on_output: Any, on_event: Any) -> None:
        stack = next(c[1] for c in reversed(auto.calls) if c[0] == "up")
        run = f"run{sum(1 for c in auto.calls if c[0] == 'up')}"
        host = results / stack / run / "gpu-0"
        host.mkdir(parents=True)
        rec = make_record(run_id=run, suite="smoke", experiment="smoke-mnist_cnn",
                          model="mnist_cnn", arm="native", topology="nova-pci",
                          images_per_sec=10.0)  # fmt: skip
        (host / "records.jsonl").write_text(json.dumps(rec) + "\n")

    auto.during_up = during_up
    write_study(
        tmp_path,
        rebuild="every-unit",
        arms=[
            {"name": "one", "stack_file": str(proj / "Pulumi.nova-pci.yaml"),
             "exec_env": "native", "config": {"host_count": 1}},
            {"name": "two", "stack_file": str(proj / "Pulumi.nova-pci.yaml"),
             "exec_env": "native", "config": {"host_count": 2, "numa_nodes": None}},
        ],
    )  # fmt: skip
    driver = Driver(
        load_study(str(tmp_path / "t.yaml")),
        results,
        RunOptions(auto=auto, repo=proj),
        Console(file=io.StringIO()),
    )
    j = driver.run()
    assert j.counts()["done"] == 4
    lifecycle = [(c[0], c[1]) for c in auto.calls if c[0] in ("up", "destroy")]
    assert lifecycle == [
        ("up", "study-t-one"), ("destroy", "study-t-one"),
        ("up", "study-t-two"), ("destroy", "study-t-two"),
        ("up", "study-t-two"), ("destroy", "study-t-two"),
        ("up", "study-t-one"), ("destroy", "study-t-one"),
    ]  # fmt: skip
    assert j.data["teardown"]["stacks"] == []  # nothing left up for the end
    for arm, count in (("one", 1), ("two", 2)):
        doc = yaml.safe_load((proj / f"Pulumi.study-t-{arm}.yaml").read_text())["config"]
        assert doc[OWNER_KEY] == f"t/{arm}" and doc["gpulab:host_count"] == count
        assert doc["gpulab:lab"] == f"{yaml.safe_load(base)['config']['gpulab:lab']}-{arm}"
    two = yaml.safe_load((proj / "Pulumi.study-t-two.yaml").read_text())["config"]
    assert "gpulab:numa_nodes" not in two and "numa_nodes" not in two
    assert (proj / "Pulumi.nova-pci.yaml").read_text() == base
    assert j.data["arms"]["two"]["config"]["host_count"] == 2


def test_every_unit_downs_a_failed_unit_too_double(tmp_path: Path) -> None:
    from pulumi.automation import CommandError, CommandResult

    auto = AutoDouble()
    auto.fail["up"] = CommandError(CommandResult("", "error: ESXi host h1: reboot: not back", 255))
    write_study(tmp_path, rebuild="every-unit", repeats=1,
                arms=[{"name": "vm", "stack": "nova-pci", "exec_env": "native"}])  # fmt: skip
    driver = Driver(
        load_study(str(tmp_path / "t.yaml")),
        tmp_path / "results",
        RunOptions(auto=auto, repo=project(tmp_path)),
        Console(file=io.StringIO()),
    )
    j = driver.run()
    assert j.data["units"]["vm#1"]["status"] == "failed"
    assert "ESXi host h1: reboot: not back" in j.data["units"]["vm#1"]["reason"]
    assert [c[0] for c in auto.calls if c[0] in ("up", "destroy")] == ["up", "destroy"]


def test_the_sharing_of_a_vgpu_arm_reads_back_as_its_factors() -> None:
    f = parse("vgpu:grid_p100-16q.best-effort.1-per-gpu.kw96")
    assert f is not None and (f.policy, f.vms_per_gpu, f.kw_vms) == ("best-effort", 1, 96)
