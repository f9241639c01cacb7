"""``gpulab run local``: the lab lifecycle's workload step on this machine, without the engine.

Provisions nothing. Runs a suite with the runner natively (arm ``native``) and, when a Docker
engine is reachable, again inside a container (arm ``docker``: the ``docker`` execution
environment, an image built from ``templates/Dockerfile.j2`` on a base image the user names).
Both arms append to ``results/<stack>/<run-id>.jsonl``; the summary beside it,
``<run-id>.summary.json``, has the stack outputs' shape (``topology``, ``lab``, ``hosts``,
``results`` as made by :mod:`infra.summary`), and each arm's runner output is kept in
``<run-id>.<arm>.log``.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.errors import UsageError
from infra.paths import PROJECT, shown
from infra.paths import results_root as default_results_root
from infra.runner_child import Child, stream
from infra.runner_child import count_records as _count_records
from infra.signals import Stopped, signum_of
from workloads.errors import InputError
from workloads.execenv import Mount, container_name, render_launch
from workloads.files import make_dirs, write_text
from workloads.paths import PACKAGES_DIR, python_path

TEMPLATE = PROJECT / "templates" / "Dockerfile.j2"
HOST_SITE = "/opt/gpulab/site"  # where --docker-python host mounts this venv's site-packages
PYTHON_MODES = ("image", "host")
# What the runner needs beyond the base image's TensorFlow (installed only when missing).
RUNNER_DEPS = ("pyyaml>=6,<7", "nvidia-ml-py>=12,<14")


@dataclass
class DockerEngine:
    """A reachable engine: the docker CLI and the environment that points it at the daemon."""

    cli: str
    env: dict[str, str]
    server_version: str

    def run(self, *args: str, timeout: float | None = None, **kw: Any) -> Any:
        return subprocess.run(
            [self.cli, *args], env=self.env, text=True, capture_output=True, timeout=timeout, **kw
        )


@dataclass
class ArmResult:
    arm: str
    rc: int | None
    records: int
    log: str
    note: str = ""


@dataclass
class LocalRun:
    run_id: str
    records_path: Path
    summary_path: Path
    summary: dict[str, Any]
    arms: list[ArmResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def find_docker(docker_host: str | None = None, timeout: float = 10.0) -> tuple[Any, str]:
    """(DockerEngine, "") when an engine answers, else (None, one line saying why)."""
    cli = shutil.which("docker")
    if cli is None:
        return None, "no docker CLI on PATH"
    env = dict(os.environ)
    if docker_host:
        env["DOCKER_HOST"] = docker_host
    if subprocess.run([cli, "buildx", "version"], env=env, capture_output=True).returncode:
        env.setdefault("DOCKER_BUILDKIT", "0")  # no buildx plugin: the classic builder
    where = env.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        r = subprocess.run(
            [cli, "version", "--format", "{{.Server.Version}}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None, f"no Docker engine answered at {where} within {timeout:.0f} s"
    if r.returncode != 0 or not r.stdout.strip():
        return None, f"no Docker engine reachable at {where}"
    return DockerEngine(cli, env, r.stdout.strip()), ""


def has_nvidia_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None and Path("/dev/nvidiactl").exists()


def default_base_image() -> str:
    """tensorflow/tensorflow:<this TensorFlow's version>[-gpu]: TF and Python in one image."""
    from importlib.metadata import PackageNotFoundError, version

    tf = "latest"
    for dist in ("tensorflow", "tensorflow-cpu"):
        try:
            tf = version(dist)
            break
        except PackageNotFoundError:
            continue
    return f"tensorflow/tensorflow:{tf}{'-gpu' if has_nvidia_gpu() else ''}"


def venv_site_packages() -> str:
    import sysconfig

    return sysconfig.get_paths()["purelib"]


def render_dockerfile(
    base_image: str, python_mode: str, pip_packages: list[str] | tuple[str, ...] = ()
) -> str:
    import jinja2

    env = jinja2.Environment(
        keep_trailing_newline=True, trim_blocks=True, undefined=jinja2.StrictUndefined
    )
    tpl = env.from_string(TEMPLATE.read_text())
    return tpl.render(
        base_image=base_image,
        host_site=HOST_SITE if python_mode == "host" else "",
        runner_deps=shlex.join(RUNNER_DEPS) if python_mode == "image" else "",
        pip_packages=shlex.join(pip_packages),
        python="python3",
    )


def build_image(engine: DockerEngine, base_image: str, python_mode: str, log: Path) -> str:
    """Build the workloads image (tag from the Dockerfile and workloads/ digests)."""
    from infra.dynamic.ansible_run import tree_digest

    dockerfile = render_dockerfile(base_image, python_mode)
    digest = hashlib.sha256(
        (dockerfile + tree_digest(PACKAGES_DIR / "workloads")).encode()
    ).hexdigest()[:12]
    tag = f"gpulab-workloads:{digest}"
    with tempfile.TemporaryDirectory(prefix="gpulab-docker-") as ctx:
        (Path(ctx) / "Dockerfile").write_text(dockerfile)
        shutil.copytree(
            PACKAGES_DIR / "workloads",
            Path(ctx) / "workloads",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
        r = engine.run("build", "--force-rm", "--network", "host", "-t", tag, ctx, timeout=3600)
    with log.open("a") as fh:
        fh.write(f"$ docker build -t {tag} (FROM {base_image})\n{r.stdout}{r.stderr}\n")
    if r.returncode != 0:
        tail = [ln for ln in (r.stderr or r.stdout).splitlines() if ln.strip()]
        raise RuntimeError(f"docker build on {base_image} failed: {(tail or ['?'])[-1]}")
    return tag


def runner_args(
    suite: str, out: str, arm: str, exec_env: str | None = None, sharing: str = "exclusive"
) -> list[str]:
    """The runner's options; the arm is the execution environment (a study passes its own arm
    label and sharing), stated in every record."""
    return [
        "bench",
        "--suite",
        suite,
        "--out",
        out,
        "--topology",
        "local",
        "--arm",
        arm,
        "--gpu-path",
        "local",
        "--exec-env",
        exec_env or arm,
        "--sharing",
        sharing,
    ]


def run_native(
    suite: str,
    out: Path,
    log: Path,
    console: Any,
    label: str = "native",
    sharing: str = "exclusive",
    on_start: Callable[[Child], None] | None = None,
) -> int:
    args = runner_args(suite, str(out), label, "native", sharing)
    cmd = [sys.executable, "-m", "workloads", *args]
    env = dict(os.environ, PYTHONPATH=python_path())
    return stream(cmd, log, out, label, console, env, on_start=on_start)


def run_docker(
    engine: DockerEngine,
    tag: str,
    suite: str,
    out: Path,
    log: Path,
    python_mode: str,
    console: Any,
    name: str,
    label: str = "docker",
    sharing: str = "exclusive",
    on_start: Callable[[Child], None] | None = None,
) -> int:
    # The one docker launcher (workloads.execenv), the same as on a lab host.
    results = out.parent.resolve()
    suite_arg = suite
    mounts = [Mount(str(results), str(results))]
    suite_path = Path(suite)
    if suite_path.suffix in (".yaml", ".yml") and suite_path.is_file():
        mounts.append(Mount(str(suite_path.resolve().parent), "/suite", read_only=True))
        suite_arg = f"/suite/{suite_path.name}"
    if python_mode == "host":
        mounts.append(Mount(venv_site_packages(), HOST_SITE, read_only=True))
    rev = subprocess.run(
        ["git", "-C", str(PACKAGES_DIR), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    runner_env = {"GPULAB_GIT_REV": rev or "unknown"}  # passed into the container by name
    records = str(results / out.name)
    cmd = render_launch(
        "docker",
        inner=[
            "python3",
            "-m",
            "workloads",
            *runner_args(suite_arg, records, label, "docker", sharing),
        ],
        image=tag,
        mounts=mounts,
        env_names=sorted(runner_env),
        name=name,
        user=f"{os.getuid()}:{os.getgid()}",
        gpus="all" if has_nvidia_gpu() else "",
    )
    try:
        env = {**engine.env, **runner_env}
        return stream(cmd, log, out, label, console, env, on_start=on_start)
    finally:
        engine.run("rm", "-f", name, timeout=60)


def _fail_line(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln.lower()]
    return (errs or lines or ["no output"])[-1]


def local_host() -> dict[str, Any]:
    from infra.hosts import Host

    return Host(
        name=socket.gethostname(),
        address="127.0.0.1",
        ssh_user=getpass.getuser(),
        groups=["gpu_hosts"],
        gpu_path="local",
    ).to_output()


def run_local(
    stack: str = "local",
    suite: str = "smoke",
    *,
    docker: bool = True,
    docker_host: str | None = None,
    base_image: str | None = None,
    python_mode: str = "image",
    results_root: Path | None = None,
    console: Any = None,
) -> LocalRun:
    """Run ``suite`` natively and (engine reachable, ``docker``) in a container; summarize."""
    from rich.console import Console

    from infra.summary import summarize_files
    from workloads.records import new_run_id

    console = console or Console(stderr=False)
    if python_mode not in PYTHON_MODES:
        raise UsageError(f"--docker-python {python_mode!r} is not one of {', '.join(PYTHON_MODES)}")
    if not stack or "/" in stack or stack.startswith("."):
        raise UsageError(f"stack name {stack!r} is not a plain name")
    from workloads.suites import load_suite

    load_suite(suite)  # a bad suite is refused here, before any file or directory is made
    results = make_dirs((results_root or default_results_root()) / stack)
    run_id = new_run_id()
    out = results / f"{run_id}.jsonl"
    run = LocalRun(run_id, out, results / f"{run_id}.summary.json", {})

    engine, why = (None, "docker arm turned off (--no-docker)")
    if docker:
        engine, why = find_docker(docker_host)
    if engine is None:
        run.notes.append(f"{why}: running the native arm only")
        console.print(f"[yellow]gpulab: {run.notes[-1]}[/yellow]", soft_wrap=True)
    try:
        _run_arms(run, suite, engine, base_image, python_mode, console)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: the runner has stopped
        sig = signum_of(exc)
        n = _count_records(out)
        raise Stopped(
            sig,
            f"run {run_id} interrupted by {signal.Signals(sig).name}: the runner stopped; "
            f"{n} record(s) kept in {out}",
        ) from None

    summary = summarize_files([out], suite=Path(suite).stem)
    summary["records"] = [shown(out)] if out.is_file() else []
    run.summary = {"topology": "local", "lab": stack, "hosts": [local_host()], "results": summary}
    write_text(run.summary_path, json.dumps(run.summary, indent=2, sort_keys=True) + "\n")
    return run


def _run_arms(
    run: LocalRun,
    suite: str,
    engine: DockerEngine | None,
    base_image: str | None,
    python_mode: str,
    console: Any,
) -> None:
    """The native arm, then (an engine reachable, the native arm not interrupted) docker."""
    run_id, out = run.run_id, run.records_path
    results = out.parent
    console.rule(f"run {run_id}: suite {suite}, arm native")
    log = results / f"{run_id}.native.log"
    rc = run_native(suite, out, log, console)
    run.arms.append(ArmResult("native", rc, _count_records(out), str(log)))
    if rc == 2:  # the runner refused its input: leave nothing of the refused run behind
        line = _fail_line(log).removeprefix("gpulab: error: ")
        log.unlink(missing_ok=True)
        if not _count_records(out):
            out.unlink(missing_ok=True)
        raise InputError(line)

    if engine is not None and rc != 130:
        base = base_image or default_base_image()
        console.rule(f"run {run_id}: suite {suite}, arm docker (on {base})")
        log = results / f"{run_id}.docker.log"
        before = _count_records(out)
        try:
            tag = build_image(engine, base, python_mode, log)
            drc = run_docker(
                engine,
                tag,
                suite,
                out,
                log,
                python_mode,
                console,
                name=container_name(run_id, "docker"),
            )
            note = "" if drc == 0 else f"docker arm exited {drc}: {_fail_line(log)}"
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            drc, note = None, f"docker arm did not run: {exc}"
        run.arms.append(ArmResult("docker", drc, _count_records(out) - before, str(log), note))
        if note:
            run.notes.append(note)
            console.print(f"[red]gpulab: {note}[/red]", soft_wrap=True)
