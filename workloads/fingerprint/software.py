"""Framework, backend and library versions, and the runner's git revision."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from workloads.paths import PACKAGES_DIR

PACKAGES = (
    "tensorflow",
    "tensorflow-cpu",
    "keras",
    "jax",
    "jaxlib",
    "torch",
    "numpy",
    "nvidia-ml-py",
    "pyyaml",
)


def package_versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def backend_info() -> dict[str, Any]:
    """The Keras backend in use and its CUDA/cuDNN build, only for modules already imported."""
    info: dict[str, Any] = {"keras_backend": None}
    mods = {k: v for k, v in sys.modules.items() if v is not None}  # None: kept out
    try:
        if "keras" in mods:
            info["keras_backend"] = mods["keras"].backend.backend()
        if "tensorflow" in mods:
            build = dict(mods["tensorflow"].sysconfig.get_build_info())
            info["tensorflow_build"] = {
                k: str(build[k])
                for k in ("cuda_version", "cudnn_version", "is_cuda_build")
                if k in build
            }
        if "torch" in mods:
            torch = mods["torch"]
            info["torch_cuda"] = torch.version.cuda
            info["torch_cudnn"] = torch.backends.cudnn.version()
        if "jax" in mods:
            info["jax_platform"] = mods["jax"].default_backend()
    except Exception as exc:  # version probes must never fail a record
        info["error"] = f"{type(exc).__name__}: {exc}"
    return info


def git_revision(repo: Path = PACKAGES_DIR) -> dict[str, Any]:
    """HEAD of the runner's checkout; ``$GPULAB_GIT_REV`` when the code was copied without .git."""
    try:
        rev = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if rev.returncode == 0:
            status = subprocess.run(
                ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            # A status that fails (no work tree, a broken index) says nothing of the tree.
            dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
            return {"revision": rev.stdout.strip(), "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        pass
    env = os.environ.get("GPULAB_GIT_REV")
    return {"revision": env or None, "dirty": None}


def collect_software() -> dict[str, Any]:
    from workloads import __version__

    return {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "gpulab_runner": __version__,
        "packages": package_versions(),
        "backend": backend_info(),
        "git": git_revision(),
    }
