"""The software part of the fingerprint (``workloads.fingerprint.software``) pinned on what a
record carries: the installed package versions, the Keras backend and the CUDA/cuDNN builds of
the frameworks already imported, and the runner's git revision and dirty flag.

The frameworks are doubled: importing TensorFlow, PyTorch or JAX for real takes seconds and
would change what the test process has imported, so ``sys.modules`` gets stand-in modules that
answer the calls ``backend_info`` makes as the real ones do (``keras.backend.backend()``,
``tf.sysconfig.get_build_info()`` with a GPU build's keys, ``torch.version.cuda``,
``torch.backends.cudnn.version()``, ``jax.default_backend()``), with the values of a CUDA 12
build. The git revision is read from real repositories made with the git CLI in tmp_path.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

import workloads
from workloads.fingerprint import software
from workloads.fingerprint.software import backend_info, git_revision, package_versions

FRAMEWORKS = ("keras", "tensorflow", "torch", "jax")


def module(name: str, **attrs: Any) -> ModuleType:
    mod = ModuleType(name)
    for key, value in attrs.items():
        setattr(mod, key, value)
    return mod


def keras_double(backend: str = "jax") -> ModuleType:
    return module("keras", backend=SimpleNamespace(backend=lambda: backend))


def tensorflow_double(build: dict[str, Any]) -> ModuleType:
    return module("tensorflow", sysconfig=SimpleNamespace(get_build_info=lambda: build))


TF_GPU_BUILD = {  # tf.sysconfig.get_build_info() of a CUDA wheel (TensorFlow 2.18)
    "cpu_compiler": "/usr/lib/llvm-18/bin/clang",
    "cuda_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
    "cuda_version": "12.5.1",
    "cudnn_version": "9",
    "is_cuda_build": True,
    "is_rocm_build": False,
    "is_tensorrt_build": False,
}


@pytest.fixture
def no_frameworks(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """sys.modules without Keras, TensorFlow, PyTorch and JAX (restored after the test)."""
    for name in FRAMEWORKS:
        monkeypatch.delitem(sys.modules, name, raising=False)
    return monkeypatch


# --- packages and backends ---------------------------------------------------------------------


def test_package_versions_are_the_installed_distributions() -> None:
    got = package_versions()
    assert got["numpy"] == metadata.version("numpy") and got["pyyaml"] == metadata.version("pyyaml")
    assert set(got) <= set(software.PACKAGES)
    for name, version in got.items():
        assert version == metadata.version(name), name


def test_no_framework_imported_reports_only_an_unknown_keras_backend(
    no_frameworks: pytest.MonkeyPatch,
) -> None:
    assert backend_info() == {"keras_backend": None}


def test_every_imported_framework_reports_its_backend_and_cuda_build(
    no_frameworks: pytest.MonkeyPatch,
) -> None:
    no_frameworks.setitem(sys.modules, "keras", keras_double("tensorflow"))
    no_frameworks.setitem(sys.modules, "tensorflow", tensorflow_double(TF_GPU_BUILD))
    torch = module(
        "torch",
        version=SimpleNamespace(cuda="12.4"),
        backends=SimpleNamespace(cudnn=SimpleNamespace(version=lambda: 90100)),
    )
    no_frameworks.setitem(sys.modules, "torch", torch)
    no_frameworks.setitem(sys.modules, "jax", module("jax", default_backend=lambda: "gpu"))
    assert backend_info() == {
        "keras_backend": "tensorflow",
        "tensorflow_build": {
            "cuda_version": "12.5.1",
            "cudnn_version": "9",
            "is_cuda_build": "True",
        },
        "torch_cuda": "12.4",
        "torch_cudnn": 90100,
        "jax_platform": "gpu",
    }


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_each_framework_alone(no_frameworks: pytest.MonkeyPatch, name: str) -> None:
    doubles = {
        "keras": (keras_double("torch"), {"keras_backend": "torch"}),
        "tensorflow": (
            tensorflow_double({"is_cuda_build": False, "is_rocm_build": False}),
            {"keras_backend": None, "tensorflow_build": {"is_cuda_build": "False"}},
        ),
        "torch": (
            module(
                "torch",
                version=SimpleNamespace(cuda=None),  # a CPU wheel
                backends=SimpleNamespace(cudnn=SimpleNamespace(version=lambda: None)),
            ),
            {"keras_backend": None, "torch_cuda": None, "torch_cudnn": None},
        ),
        "jax": (
            module("jax", default_backend=lambda: "cpu"),
            {"keras_backend": None, "jax_platform": "cpu"},
        ),
    }
    double, expected = doubles[name]
    no_frameworks.setitem(sys.modules, name, double)
    assert backend_info() == expected


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_a_package_kept_out_is_not_imported(no_frameworks: pytest.MonkeyPatch, name: str) -> None:
    """``None`` in ``sys.modules`` (workloads/lean_imports.py keeps a package out that way) is a
    package not imported: no probe of it, no error; the others are still read."""
    no_frameworks.setitem(sys.modules, name, None)
    jax = module("jax", default_backend=lambda: "cpu")
    if name != "jax":
        no_frameworks.setitem(sys.modules, "jax", jax)
    expected = {"keras_backend": None} if name == "jax" else {"keras_backend": None,
                                                               "jax_platform": "cpu"}  # fmt: skip
    assert backend_info() == expected


def test_a_probe_that_raises_is_recorded_not_raised(no_frameworks: pytest.MonkeyPatch) -> None:
    """An old TensorFlow without ``tf.sysconfig``: the record says why, the Keras backend read
    before it stays."""
    no_frameworks.setitem(sys.modules, "keras", keras_double("jax"))
    no_frameworks.setitem(sys.modules, "tensorflow", module("tensorflow"))
    info = backend_info()
    assert info["keras_backend"] == "jax"
    assert info["error"] == "AttributeError: module 'tensorflow' has no attribute 'sysconfig'"
    assert "tensorflow_build" not in info


# --- git revision ------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=lab", "-c", "user.email=lab@example.invalid",
         *args],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


def head_of(repo: Path) -> str:
    """HEAD read from the files of .git, not from git: ``ref: refs/heads/<branch>``."""
    ref = (repo / ".git/HEAD").read_text().split()[1]
    return (repo / ".git" / ref).read_text().strip()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout with one commit of a tracked file; $GPULAB_GIT_REV unset."""
    monkeypatch.delenv("GPULAB_GIT_REV", raising=False)
    repo = tmp_path / "runner"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "run.py").write_text("print('v1')\n")
    git(repo, "add", "run.py")
    git(repo, "commit", "-q", "-m", "v1")
    return repo


def test_clean_checkout_reports_head_and_not_dirty(checkout: Path) -> None:
    rev = head_of(checkout)
    assert len(rev) == 40
    assert git_revision(checkout) == {"revision": rev, "dirty": False}
    (checkout / "notes.txt").write_text("untracked\n")  # untracked files do not count
    assert git_revision(checkout) == {"revision": rev, "dirty": False}


def test_a_changed_tracked_file_is_dirty(checkout: Path) -> None:
    (checkout / "run.py").write_text("print('v2')\n")
    assert git_revision(checkout) == {"revision": head_of(checkout), "dirty": True}


def test_a_tree_git_cannot_read_is_not_called_clean(checkout: Path, tmp_path: Path) -> None:
    """A bare clone has HEAD but no work tree: ``git status`` fails there, so whether the tree
    is dirty is unknown (null), not "clean"."""
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(checkout), str(bare)], check=True)
    status = subprocess.run(["git", "-C", str(bare), "status", "--porcelain"], capture_output=True)
    assert status.returncode != 0  # what the case is about
    assert git_revision(bare) == {"revision": head_of(checkout), "dirty": None}


def test_without_git_metadata_the_revision_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code copied without .git (a container image): ``$GPULAB_GIT_REV``, else unknown (git is
    kept from looking above tmp_path)."""
    copied = tmp_path / "copied"
    copied.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("GPULAB_GIT_REV", "0123abc")
    assert git_revision(copied) == {"revision": "0123abc", "dirty": None}
    monkeypatch.setenv("GPULAB_GIT_REV", "")
    assert git_revision(copied) == {"revision": None, "dirty": None}
    monkeypatch.delenv("GPULAB_GIT_REV")
    assert git_revision(copied) == {"revision": None, "dirty": None}


def test_no_git_command_falls_back_to_the_environment(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("GPULAB_GIT_REV", "fedcba9")
    assert git_revision(checkout) == {"revision": "fedcba9", "dirty": None}


# --- all of it ---------------------------------------------------------------------------------


def test_collect_software_puts_the_parts_under_their_keys(
    no_frameworks: pytest.MonkeyPatch,
) -> None:
    no_frameworks.setitem(sys.modules, "jax", module("jax", default_backend=lambda: "tpu"))
    got = software.collect_software()
    git_part = got.pop("git")  # this checkout's: others may commit meanwhile, so only its form
    assert got == {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "gpulab_runner": workloads.__version__,
        "packages": package_versions(),
        "backend": {"keras_backend": None, "jax_platform": "tpu"},
    }
    assert set(git_part) == {"revision", "dirty"}
