"""`gpulab doctor`: each check, its fix, and the exit code, whatever this machine has. The
probes are faked the way a machine differs: stub executables on PATH (nvidia-smi, docker,
apptainer, pulumi) and Python modules hidden from the interpreter (a sitecustomize that makes
them unimportable, as an uninstalled package is)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import envelope

STUBS = {
    "nvidia-smi": 'echo "NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB"',
    "docker": 'echo "27.1.1"',
    "apptainer": 'echo "apptainer version 1.3.4"',
    "pulumi": 'echo "v3.140.0"',
}
DOCKER_DOWN = ('echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock." >&2;'
               " exit 1")  # fmt: skip
HIDE = '''import importlib.abc, sys

class Hide(importlib.abc.MetaPathFinder):
    """These packages are not installed here."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Hide())
'''


def _machine(tmp_path: Path, stubs: dict[str, str], hidden: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment of a machine that has ``stubs`` on PATH and lacks ``hidden``."""
    bindir, home, site = tmp_path / "bin", tmp_path / "home", tmp_path / "site"
    for d in (bindir, home, site):
        d.mkdir(exist_ok=True)
    for name, body in stubs.items():
        path = bindir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": str(bindir), "HOME": str(home)}
    if hidden:
        (site / "sitecustomize.py").write_text(HIDE.format(hidden=set(hidden)))
        env["PYTHONPATH"] = str(site)
    return env


def _checks(gpulab: Any, env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    r = gpulab("doctor", "--json", *args, env=env)
    data = envelope(r.stdout, r.returncode)["data"]
    return r.returncode, {c["name"].split(" (")[0]: c for c in data["checks"]} | {"": data}


def test_a_machine_with_everything_a_lab_needs(gpulab, tmp_path: Path) -> None:
    rc, checks = _checks(gpulab, _machine(tmp_path, STUBS))
    assert rc == 0 and checks[""]["ready_for_local_runs"]
    assert checks["GPU and driver"]["found"] == "NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB"
    assert checks["Docker engine"]["ok"] and "server 27.1.1" in checks["Docker engine"]["found"]
    assert checks["Apptainer"]["found"].startswith("apptainer version 1.3.4")
    assert checks["Pulumi CLI"]["ok"] and checks["Pulumi CLI"]["found"].startswith("v3.140.0")
    assert checks["Ansible"]["ok"] and checks["Ansible collections"]["ok"]
    assert {"GPU measurements", "the docker arm", "the apptainer arm", "labs"} <= set(
        checks[""]["ready_for"]
    )


def test_a_bare_machine_still_runs_locally_and_says_how_to_get_the_rest(
    gpulab, tmp_path: Path
) -> None:
    rc, checks = _checks(gpulab, _machine(tmp_path, {"docker": DOCKER_DOWN}))
    assert rc == 0  # nothing required is missing: a CPU, a Keras backend, disk
    gpu, docker = checks["GPU and driver"], checks["Docker engine"]
    assert not gpu["ok"] and gpu["found"] == "nvidia-smi not on PATH"
    assert "measurements run on the CPU" in gpu["fix"]
    assert not docker["ok"] and "daemon not reachable: Cannot connect" in docker["found"]
    assert "start dockerd" in docker["fix"]
    assert "https://apptainer.org" in checks["Apptainer"]["fix"]
    assert "https://get.pulumi.com" in checks["Pulumi CLI"]["fix"]
    assert set(checks[""]["not_ready_for"]) >= {"GPU measurements", "the apptainer arm", "labs"}
    assert all(c["fix"] == "" for c in checks[""]["checks"] if c["ok"])


@pytest.mark.parametrize(
    ("hidden", "args", "failing"),
    [
        (("tensorflow", "jax", "torch"), (), "Keras backend"),
        (("keras",), (), "Keras backend"),
        ((), ("--min-free-gb", "100000"), "Free disk"),
    ],
)
def test_a_machine_that_cannot_run_locally_exits_1(
    gpulab, tmp_path: Path, hidden: tuple[str, ...], args: tuple[str, ...], failing: str
) -> None:
    rc, checks = _checks(gpulab, _machine(tmp_path, STUBS, hidden), *args)
    assert rc == 1 and not checks[""]["ready_for_local_runs"]
    bad = checks[failing]
    assert bad["required"] and not bad["ok"] and bad["fix"]
    if failing == "Keras backend":
        assert "pip install 'gpulab[cpu]'" in bad["fix"]
    text = gpulab("doctor", *args, env=_machine(tmp_path, STUBS, hidden))
    assert text.returncode == 1 and "NOT ready for local runs" in text.stdout


def test_the_json_failure_names_what_is_missing(gpulab, tmp_path: Path) -> None:
    r = gpulab("doctor", "--json", env=_machine(tmp_path, {}, ("tensorflow", "jax", "torch")))
    data = json.loads(r.stdout)
    assert r.returncode == 1 and data["error"] == {
        "message": "not ready for local runs: Keras backend (TensorFlow/JAX/PyTorch)",
        "code": 1,
    }
