"""``gpulab doctor``: what this machine can run, and the fix for each thing it lacks.

Each check looks where gpulab itself looks: Python modules in this interpreter (found, not
imported: TensorFlow's import alone takes seconds), commands on ``PATH`` (``ansible-playbook``
in this interpreter's ``bin/`` first, as gpulab's Ansible runs use it; the Pulumi CLI also in
``~/.pulumi/bin``, as ``gpulab up`` finds it), the results root's file system for free space.

Required for local runs (``gpulab bench``, ``gpulab run local``, ``gpulab study run --on-local``):
Python >= 3.11, Keras with a backend (TensorFlow, JAX or PyTorch), free disk. The rest says
what else works: a GPU, the docker and apptainer arms, labs (Pulumi CLI, Ansible and its
collections). Exit 0 when every required check passes, 1 otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from infra.cli.options import JsonOpt, add_examples, bounded

LOCAL = "local runs"
PROBE_TIMEOUT_S = 15
MIN_PYTHON = (3, 11)
KERAS_BACKENDS = (("tensorflow", ("tensorflow", "tensorflow-cpu")), ("jax", ("jax",)),
                  ("torch", ("torch",)))  # fmt: skip
# The collections of collections/requirements.yml (its list when the checkout has it).
COLLECTIONS = ("kubernetes.core", "community.general")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    found: str  # what was found (a version, a path), or why not
    needed_for: str
    required: bool = False
    fix: str = ""  # what to do when not ok

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "required": self.required,
                "found": self.found, "needed_for": self.needed_for,
                "fix": "" if self.ok else self.fix}  # fmt: skip


def _run(argv: list[str]) -> tuple[int, str]:
    """(exit code, the first line of stdout, else the last of stderr) of a probe command."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                           stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    out = r.stdout.strip().splitlines()
    err = r.stderr.strip().splitlines()
    line = (out[0] if out and r.returncode == 0 else (err or out or [""])[-1]).strip()
    return r.returncode, line


def _module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _version(dists: tuple[str, ...]) -> str:
    from importlib.metadata import PackageNotFoundError, version

    for dist in dists:
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return "?"


def check_python() -> Check:
    v = sys.version_info
    return Check(
        "Python", v[:2] >= MIN_PYTHON, f"{v.major}.{v.minor}.{v.micro} ({sys.executable})",
        LOCAL, required=True,
        fix=f"install Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer and gpulab into it "
        "(gpulab docs install)",
    )  # fmt: skip


def check_keras() -> Check:
    backends = [f"{name} {_version(dists)}" for name, dists in KERAS_BACKENDS if _module(name)]
    keras = _module("keras")
    found = ", ".join(backends) or "no TensorFlow, JAX or PyTorch"
    return Check(
        "Keras backend (TensorFlow/JAX/PyTorch)", keras and bool(backends),
        (f"keras {_version(('keras',))}; " if keras else "no keras; ") + found,
        LOCAL, required=True,
        fix="pip install 'gpulab[cpu]' (Keras on TensorFlow for the CPU) or 'gpulab[gpu]' "
        "(TensorFlow with CUDA); Keras on JAX or PyTorch works too (--keras-backend jax|torch)",
    )  # fmt: skip


def check_gpu() -> Check:
    fix = ("no NVIDIA GPU and driver seen: measurements run on the CPU; on a GPU machine "
           "install the NVIDIA driver (lab hosts get it from the nvidia_driver role: gpulab "
           "docs ansible)")  # fmt: skip
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return Check("GPU and driver (nvidia-smi)", False, "nvidia-smi not on PATH",
                     "GPU measurements", fix=fix)  # fmt: skip
    rc, line = _run([smi, "--query-gpu=name,driver_version,memory.total",
                     "--format=csv,noheader"])  # fmt: skip
    return Check("GPU and driver (nvidia-smi)", rc == 0 and bool(line),
                 line if rc == 0 else f"nvidia-smi failed: {line}", "GPU measurements",
                 fix=fix)  # fmt: skip


def check_nvml() -> Check:
    fix = (
        "the NVIDIA driver's libnvidia-ml.so.1 and the nvidia-ml-py package (a gpulab "
        "dependency): without NVML the records carry no GPU name, clocks or throttling"
    )
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pynvml
        pynvml.nvmlInit()
        try:
            driver = pynvml.nvmlSystemGetDriverVersion()
            count = pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception as exc:  # ImportError, NVMLError_LibraryNotFound, DriverNotLoaded...
        return Check("NVML (GPU details in records)", False,
                     f"{type(exc).__name__}: {exc}"[:120], "GPU details in records",
                     fix=fix)  # fmt: skip
    text = driver.decode() if isinstance(driver, bytes) else str(driver)
    return Check("NVML (GPU details in records)", True, f"driver {text}, {count} GPU(s)",
                 "GPU details in records")  # fmt: skip


def check_docker() -> Check:
    name, needed = "Docker engine", "the docker arm"
    docker = shutil.which("docker")
    if docker is None:
        return Check(name, False, "docker not on PATH", needed,
                     fix="install Docker Engine (https://docs.docker.com/engine/install/); "
                     "or skip the arm: gpulab run local --no-docker")  # fmt: skip
    rc, line = _run([docker, "version", "--format", "{{.Server.Version}}"])
    if rc == 0 and line:
        return Check(name, True, f"server {line} ({docker})", needed)
    return Check(name, False, f"{docker}: daemon not reachable: {line}"[:160], needed,
                 fix="start dockerd, or let your user reach its socket (group docker), or "
                 "set DOCKER_HOST")  # fmt: skip


def check_apptainer() -> Check:
    for command in ("apptainer", "singularity"):
        found = shutil.which(command)
        if found:
            rc, line = _run([found, "--version"])
            if rc == 0:
                return Check("Apptainer", True, f"{line} ({found})", "the apptainer arm")
    return Check("Apptainer", False, "apptainer (or singularity) not on PATH", "the apptainer arm",
                 fix="install Apptainer "
                 "(https://apptainer.org/docs/admin/main/installation.html)")  # fmt: skip


def check_pulumi() -> Check:
    from infra.automation import INSTALL_HINT, find_pulumi

    found = find_pulumi()
    fix = INSTALL_HINT
    if found is None:
        return Check("Pulumi CLI", False, "pulumi not on PATH nor in ~/.pulumi/bin",
                     "labs", fix=fix)  # fmt: skip
    rc, line = _run([found, "version"])
    return Check("Pulumi CLI", rc == 0, f"{line} ({found})" if rc == 0 else
                 f"{found} version failed: {line}", "labs", fix=fix)  # fmt: skip


def _ansible_playbook() -> str | None:
    beside = Path(sys.executable).parent / "ansible-playbook"  # as infra/ansible/runner.py
    return str(beside) if os.access(beside, os.X_OK) else shutil.which("ansible-playbook")


def check_ansible() -> Check:
    fix = "pip install 'ansible-core>=2.17,<2.20' (a dependency of gpulab: reinstall gpulab)"
    found = _ansible_playbook()
    if found is None:
        return Check("Ansible", False, "ansible-playbook not found", "labs", fix=fix)
    rc, line = _run([found, "--version"])
    return Check("Ansible", rc == 0, f"{line} ({found})" if rc == 0 else line,
                 "labs", fix=fix)  # fmt: skip


def _collection_names() -> tuple[str, ...]:
    from infra.paths import PROJECT

    listed = PROJECT / "collections" / "requirements.yml"
    try:
        import yaml

        doc = yaml.safe_load(listed.read_text(encoding="utf-8"))
        return tuple(str(c["name"]) for c in doc["collections"])
    except (OSError, KeyError, TypeError, ValueError):
        return COLLECTIONS


def _collection_dirs() -> list[Path]:
    from infra.paths import PROJECT

    dirs = [PROJECT / "collections", Path.home() / ".ansible" / "collections",
            Path("/usr/share/ansible/collections")]  # fmt: skip
    return [d / "ansible_collections" for d in dirs]


def _collection_version(name: str) -> str | None:
    namespace, coll = name.split(".", 1)
    spec = None
    if _module("ansible_collections"):
        try:
            spec = importlib.util.find_spec(f"ansible_collections.{namespace}.{coll}")
        except (ImportError, ValueError):
            spec = None
    places = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    places += [d / namespace / coll for d in _collection_dirs()]
    for place in places:
        manifest = place / "MANIFEST.json"
        if manifest.is_file():
            try:
                return str(json.loads(manifest.read_text())["collection_info"]["version"])
            except (OSError, ValueError, KeyError):
                return "?"
    return None


def check_collections() -> Check:
    found = {name: _collection_version(name) for name in _collection_names()}
    missing = [n for n, v in found.items() if v is None]
    shown = ", ".join(f"{n} {v}" if v else f"{n} missing" for n, v in found.items())
    return Check("Ansible collections", not missing, shown, "labs",
                 fix="python collections/install.py (scripts/venv.sh runs it), or "
                 "ansible-galaxy collection install -r collections/requirements.yml")  # fmt: skip


def check_disk(min_free_gb: int) -> Check:
    from infra.paths import results_root

    root = results_root()
    place = next((p for p in (root, *root.parents) if p.exists()), Path("/"))
    free_gb = shutil.disk_usage(place).free / 1e9
    return Check(
        "Free disk (results root)", free_gb >= min_free_gb,
        f"{free_gb:.1f} GB free at {place} (results root {root}; need {min_free_gb} GB)",
        LOCAL, required=True,
        fix=f"free space at {place}, or point $GPULAB_RESULTS at a file system with "
        f"{min_free_gb} GB free",
    )  # fmt: skip


PROBES: tuple[Callable[[], Check], ...] = (
    check_python, check_keras, check_gpu, check_nvml, check_docker, check_apptainer,
    check_pulumi, check_ansible, check_collections,
)  # fmt: skip


def run_checks(min_free_gb: int) -> list[Check]:
    return [probe() for probe in PROBES] + [check_disk(min_free_gb)]


def _print(checks: list[Check], ready: bool) -> None:
    """One line per check (its result, what was found, what it is for) and, under a miss,
    its fix; then what this machine is ready for."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for c in checks:
        word = "ok" if c.ok else ("MISSING" if c.required else "no")
        style = "green" if c.ok else ("red" if c.required else "yellow")
        line = Text(f"{c.name}: {c.found}")
        line.append(f"  [{c.needed_for}{', required' if c.required else ''}]", style="dim")
        grid.add_row(Text(word, style=style), line)
        if not c.ok:
            grid.add_row("", Text(f"fix: {c.fix}"))
    console = Console(highlight=False)
    console.print(grid)
    can, cannot = capabilities(checks)
    console.print(Text(("ready for local runs" if ready else "NOT ready for local runs")
                       + (f"; also ready for: {', '.join(can)}" if can else "")
                       + (f"; not for: {', '.join(cannot)}" if cannot else "")))  # fmt: skip


def capabilities(checks: list[Check]) -> tuple[list[str], list[str]]:
    """(what else this machine can run, what it cannot): each purpose of the optional
    checks, ready when every check for it passed."""
    purposes: dict[str, bool] = {}
    for c in checks:
        if not c.required:
            purposes[c.needed_for] = purposes.get(c.needed_for, True) and c.ok
    return [p for p, ok in purposes.items() if ok], [p for p, ok in purposes.items() if not ok]


def doctor_cmd(
    min_free_gb: Annotated[
        int, bounded("--min-free-gb", 0, 100_000, "Free disk the results root needs, in GB",
                     metavar="GB"),
    ] = 5,
    json_out: JsonOpt = False,
) -> None:  # fmt: skip
    """Check what this machine can run, and how to fix what it lacks.

    Python, Keras and its backend (TensorFlow, JAX or PyTorch), the GPU and its driver
    (nvidia-smi, NVML), Docker, Apptainer, the Pulumi CLI, Ansible and its collections, and
    free disk under the results root; each miss with its fix. Exit 0 when this machine has
    everything local runs need (Python, a Keras backend, free disk), 1 otherwise; the other
    checks say what else it can run (GPU measurements, the docker and apptainer arms, labs)."""
    checks = run_checks(min_free_gb)
    missing = [c.name for c in checks if c.required and not c.ok]
    ready = not missing
    if json_out:
        from infra.cli import output

        can, cannot = capabilities(checks)
        data = {"ready_for_local_runs": ready, "ready_for": can, "not_ready_for": cannot,
                "checks": [c.as_json() for c in checks]}  # fmt: skip
        if ready:
            output.emit(data)
            return
        output.emit_failure(data, f"not ready for local runs: {', '.join(missing)}", 1)
        raise typer.Exit(1)
    _print(checks, ready)
    if not ready:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("doctor")(
        add_examples(doctor_cmd, ["gpulab doctor", "gpulab doctor --json | jq .data.checks"])
    )
