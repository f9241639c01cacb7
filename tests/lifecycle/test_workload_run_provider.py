"""WorkloadRun's provider methods driven for real as plain Python on localhost: the real
playbooks/workloads.yml (workload_run role, local connection) runs the real runner with
TensorFlow and fetches the records; the summary comes back as the resource's outputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from infra.dynamic.workload_run import WorkloadRunProvider, play_vars, suite_file
from infra.hosts import Host

REPO = Path(__file__).resolve().parents[2]
TINY_SUITE = """name: tiny
experiments:
  - experiment: tiny-mnist
    model: mnist_cnn
    batch: 32
    warmup: 1
    steps: 2
"""


def props(tmp_path: Path, suite: str, **extra) -> dict:
    p = {
        "hosts": [Host("localhost", "127.0.0.1", gpu_path="local").to_output()],
        "suite": suite,
        "suite_digest": None,
        "execution_env": "native",
        "arm": "native",
        "topology": "local",
        "lab": "wr-test",
        "results_dir": str(tmp_path / "results"),
        # The runner from this checkout and venv (workload_env would install it at /opt/gpulab).
        "variables": {
            "workload_run_python": sys.executable,
            "workload_run_dir": str(REPO),
            "workload_run_results_dir": str(tmp_path / "host-results"),
        },
        "triggers": [],
    }
    p.update(extra)
    return p


def test_check_and_diff() -> None:
    p = WorkloadRunProvider()
    bad = p.check({}, {"hosts": [], "suite": "", "execution_env": "vm"})
    assert sorted(f.property for f in bad.failures) == ["execution_env", "hosts", "suite"]
    base = {"hosts": [{"name": "a"}], "suite": "smoke", "execution_env": "docker"}
    assert p.check({}, base).failures == []
    outs = dict(base, summary={}, run_id="r1", status="ok")
    assert p.diff("id", outs, dict(base)).changes is False
    assert p.diff("id", outs, dict(base, suite_digest="x")).changes is True
    assert p.diff("id", outs, dict(base, execution_env="native")).changes is True
    assert suite_file("smoke") == REPO / "workloads" / "suites" / "smoke.yaml"


def test_play_vars_are_the_workload_run_roles() -> None:
    import yaml

    defaults = yaml.safe_load((REPO / "playbooks/roles/workload_run/defaults/main.yml").read_text())
    v = play_vars(
        {"suite": "smoke", "execution_env": "docker", "variables": {"x": 1}}, "r1", Path("/f")
    )
    assert {k for k in v if k.startswith("workload_run_")} <= set(defaults)
    assert v["workload_run_arm"] == "docker" and v["workload_run_fetch_dir"] == "/f"


@pytest.mark.slow
@pytest.mark.tf
def test_create_fetches_records_and_summarizes(tmp_path: Path) -> None:
    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE)
    p = WorkloadRunProvider()
    created = p.create(props(tmp_path, str(suite)))
    outs = created.outs
    assert created.id == f"workloads-{outs['run_id']}"
    assert outs["status"] == "ok" and outs["play_status"] == "successful"
    (records,) = outs["records"]
    path = Path(records)
    assert path.parent == tmp_path / "results" / outs["run_id"] / "localhost"
    assert path.is_file()
    s = outs["summary"]
    assert s["counts"]["ok"] == 1 and s["arms"] == ["native"]
    (row,) = s["rows"]
    assert row["model"] == "mnist_cnn" and row["images_per_sec_median"] > 0
    p.delete(created.id, outs)
    assert path.is_file()  # delete keeps the results


@pytest.mark.tf
def test_failed_run_names_host_and_task(tmp_path: Path) -> None:
    from infra.ansible import PlaybookError

    suite = tmp_path / "bad.yaml"
    suite.write_text(TINY_SUITE.replace("mnist_cnn", "no_such_model"))
    with pytest.raises(PlaybookError, match=r"host 'localhost' failed at task") as err:
        WorkloadRunProvider().create(props(tmp_path, str(suite)))
    assert "no_such_model" in str(err.value)
