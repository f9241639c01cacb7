"""What workload_env installs on a GPU host resolves against the real package index for that
host's Python and platform, and brings the CUDA and cuDNN wheels TensorFlow names, at the
versions it names; a host without a GPU gets the CPU-only wheel and none of them.

The pip set is the role's own ``workload_env_requirements`` (vars/main.yml), rendered by
Ansible's templating for a host of each supported distribution where gpu_facts found an H200
(or none). pip resolves it without installing anything (``pip install --dry-run --report``,
``--only-binary=:all:``) for the distribution's Python (``--python-version``) and glibc (every
``manylinux_2_17`` .. ``manylinux_2_<glibc>`` tag), from the configured index with this
machine's own config files set aside (its local wheel directories and caps are not a host's).

Needs the package index: marked ``network``. Without it the test skips on a developer machine
and FAILS in CI (CI=true), which has it (tests.parts.need)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from infra.config.vendor_check import render
from infra.vendor_packages import DISTROS, Distro
from tests.parts import need

pytestmark = [pytest.mark.network, pytest.mark.slow]

H200 = ("2335",)
# TensorFlow's CUDA libraries that a GPU host cannot compute without.
ESSENTIAL = ("nvidia-cudnn-cu12", "nvidia-cublas-cu12", "nvidia-cuda-runtime-cu12")


def pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "PIP_CONSTRAINT")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no config file: no local wheel directories or caps
    return env


def resolve(distro: Distro, requirements: list[str]) -> dict[str, Any]:
    """pip's installation report for ``requirements`` on a host of ``distro``."""
    py = distro.python.replace(".", "")
    glibc_minor = int(distro.glibc.split(".")[1])
    platforms = [f"manylinux_2_{m}_x86_64" for m in range(17, glibc_minor + 1)]
    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
            "--ignore-installed", "--only-binary=:all:", "--python-version", distro.python,
            "--implementation", "cp", "--abi", f"cp{py}",
            *(f"--platform={p}" for p in [*platforms, "manylinux2014_x86_64"]),
            *requirements]  # fmt: skip
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=pip_env(),
                       check=False)  # fmt: skip
    offline = ("NewConnectionError", "Network is unreachable", "Temporary failure in name",
               "Max retries exceeded", "ConnectTimeout", "ProxyError")  # fmt: skip
    need(
        not (r.returncode != 0 and any(o in r.stderr for o in offline)),
        "the package index (pip could not reach it: " + r.stderr.strip()[-200:] + ")",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def resolved(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {canonicalize_name(i["metadata"]["name"]): i["metadata"] for i in report["install"]}


@pytest.mark.parametrize("distro", list(DISTROS))
def test_gpu_host_gets_tensorflow_with_the_cuda_and_cudnn_wheels_it_names(distro: str) -> None:
    d = DISTROS[distro]
    reqs = render("workload_env", "workload_env_requirements", distro, None, H200)
    assert reqs[0].startswith("tensorflow[and-cuda]"), reqs
    got = resolved(resolve(d, reqs))
    tf = got["tensorflow"]
    cuda_reqs = [
        Requirement(text)
        for text in tf.get("requires_dist", [])
        if Requirement(text).marker is not None
        and Requirement(text).marker.evaluate({"extra": "and-cuda"})  # type: ignore[union-attr]
        and not Requirement(text).marker.evaluate({"extra": ""})  # type: ignore[union-attr]
    ]
    names = {canonicalize_name(r.name) for r in cuda_reqs}
    assert set(ESSENTIAL) <= names, names  # TensorFlow names them under its and-cuda extra
    for req in cuda_reqs:  # each one is in the set, at a version TensorFlow accepts
        name = canonicalize_name(req.name)
        assert name in got, (name, sorted(got))
        assert req.specifier.contains(got[name]["version"], prereleases=True), (req, got[name])
    shown = ", ".join(f"{n} {got[n]['version']}" for n in sorted(names))
    print(f"\n{d.title} (Python {d.python}, glibc {d.glibc}): tensorflow {tf['version']}: {shown}")


def test_cpu_host_gets_the_cpu_wheel_and_no_cuda_libraries() -> None:
    d = DISTROS["debian12"]
    reqs = render("workload_env", "workload_env_requirements", "debian12", None, ())
    assert reqs[0].startswith("tensorflow-cpu"), reqs
    got = resolved(resolve(d, reqs))
    assert "tensorflow-cpu" in got and "tensorflow" not in got
    assert [n for n in got if n.startswith("nvidia-cu")] == []
