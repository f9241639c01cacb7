"""How ``gpulab run local`` launches its arms on a machine without a GPU or an engine: the
docker argv it builds, the engine probe, the native arm's command and the default base image.
Fast: no command of a test starts a container or the runner (``stream`` is replaced)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from infra.local_run import HOST_SITE, find_docker

REPO = Path(__file__).resolve().parents[2]
TINY_SUITE = "name: tiny\nexperiments: []\n"

# The launch on this machine, without an engine or a GPU: a stand-in docker CLI (a shell
# script on PATH) answers the probes, and `stream` is replaced where a command would start.


def fake_docker(
    tmp_path: Path, *, buildx: int, version: str, rc: int = 0, sleep: float = 0
) -> Path:
    """A docker CLI stand-in: `buildx version` exits `buildx`; `version` prints `version` after
    `sleep` seconds and exits `rc`; every call is logged with DOCKER_HOST and DOCKER_BUILDKIT."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "docker"
    cli.write_text(
        "#!/bin/sh\n"
        f'echo "$* host=${{DOCKER_HOST:-}} kit=${{DOCKER_BUILDKIT:-}}" >> {tmp_path}/calls\n'
        f'[ "$1" = buildx ] && echo "buildx answered" && exit {buildx}\n'
        f"/bin/sleep {sleep}\n"
        f"printf '%s\\n' '{version}'\n"
        f"exit {rc}\n"
    )
    cli.chmod(0o755)
    return bin_dir


def test_find_docker_asks_the_engine_for_its_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(fake_docker(tmp_path, buildx=1, version="27.3.1")))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("DOCKER_BUILDKIT", raising=False)
    engine, why = find_docker("tcp://127.0.0.1:2375")
    assert why == "" and engine is not None
    assert engine.cli == str(tmp_path / "bin" / "docker") and engine.server_version == "27.3.1"
    assert engine.env["DOCKER_HOST"] == "tcp://127.0.0.1:2375"
    assert engine.env["DOCKER_BUILDKIT"] == "0"  # no buildx plugin: the classic builder
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == [
        "buildx version host=tcp://127.0.0.1:2375 kit=",
        "version --format {{.Server.Version}} host=tcp://127.0.0.1:2375 kit=0",
    ]
    assert capfd.readouterr() == ("", "")  # the probes print nothing on the user's terminal
    r = engine.run("version", "--format", "x")
    assert r.stdout == "27.3.1\n" and r.returncode == 0


def test_find_docker_keeps_buildkit_where_buildx_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(fake_docker(tmp_path, buildx=0, version="27.3.1")))
    monkeypatch.delenv("DOCKER_BUILDKIT", raising=False)
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/user/docker.sock")
    engine, why = find_docker()
    assert why == "" and engine is not None
    assert "DOCKER_BUILDKIT" not in engine.env
    assert engine.env["DOCKER_HOST"] == "unix:///run/user/docker.sock"


@pytest.mark.parametrize(("rc", "version"), [(1, "27.3.1"), (0, "  ")])
def test_find_docker_without_an_engine_names_where_it_looked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rc: int, version: str
) -> None:
    monkeypatch.setenv("PATH", str(fake_docker(tmp_path, buildx=0, version=version, rc=rc)))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    assert find_docker() == (None, "no Docker engine reachable at unix:///var/run/docker.sock")
    assert find_docker("tcp://h:1") == (None, "no Docker engine reachable at tcp://h:1")


def test_find_docker_gives_up_on_an_engine_that_does_not_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(fake_docker(tmp_path, buildx=0, version="1", sleep=5)))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    engine, why = find_docker(timeout=0.3)
    assert engine is None
    assert why == "no Docker engine answered at unix:///var/run/docker.sock within 0 s"


def test_a_gpu_needs_nvidia_smi_and_the_device(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from infra import local_run

    which = {"nvidia-smi": "/usr/bin/nvidia-smi"}
    monkeypatch.setattr("infra.local_run.shutil.which", lambda name: which.get(name))
    exists = {"/dev/nvidiactl": True}
    monkeypatch.setattr("infra.local_run.Path.exists", lambda self: exists.get(str(self), False))
    assert local_run.has_nvidia_gpu() is True
    exists.clear()
    assert local_run.has_nvidia_gpu() is False  # nvidia-smi without a driver's device
    exists["/dev/nvidiactl"] = True
    which.clear()
    assert local_run.has_nvidia_gpu() is False


def test_the_default_base_image_follows_tensorflow_and_the_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.metadata

    from infra import local_run

    installed = {"tensorflow-cpu": "2.21.0"}

    def version(dist: str) -> str:
        if dist not in installed:
            raise importlib.metadata.PackageNotFoundError(dist)
        return installed[dist]

    monkeypatch.setattr(importlib.metadata, "version", version)
    gpu = {"on": False}
    monkeypatch.setattr(local_run, "has_nvidia_gpu", lambda: gpu["on"])
    assert local_run.default_base_image() == "tensorflow/tensorflow:2.21.0"
    installed["tensorflow"] = "2.20.1"  # the first of the two found wins
    gpu["on"] = True
    assert local_run.default_base_image() == "tensorflow/tensorflow:2.20.1-gpu"
    installed.clear()
    assert local_run.default_base_image() == "tensorflow/tensorflow:latest-gpu"


def test_the_runner_states_the_arm_and_the_environment() -> None:
    from infra.local_run import runner_args

    assert runner_args("smoke", "/r/o.jsonl", "docker") == [
        "bench", "--suite", "smoke", "--out", "/r/o.jsonl", "--topology", "local",
        "--arm", "docker", "--gpu-path", "local", "--exec-env", "docker",
        "--sharing", "exclusive",
    ]  # fmt: skip
    args = runner_args("s.yaml", "/o", "study-arm", "native", "shared")
    assert args[args.index("--arm") + 1] == "study-arm"
    assert args[args.index("--exec-env") + 1] == "native"
    assert args[-2:] == ["--sharing", "shared"]


class Streamed:
    """Stands in for infra.runner_child.stream: records what it was given, starts nothing."""

    def __init__(self, rc: int = 0) -> None:
        self.rc = rc
        self.calls: list[dict[str, object]] = []

    def __call__(self, cmd: list[str], log: Path, out: Path, label: str, console: object,
                 env: dict[str, str] | None = None, on_start: object = None) -> int:  # fmt: skip
        self.calls.append(
            {
                "cmd": cmd,
                "log": log,
                "out": out,
                "label": label,
                "env": env,
                "on_start": on_start,
                "console": console,
            }
        )
        return self.rc


class Engine:
    cli, env = "/usr/bin/docker", {"PATH": "/usr/bin", "DOCKER_HOST": "tcp://h:1"}

    def __init__(self) -> None:
        self.runs: list[tuple[tuple[str, ...], dict[str, object]]] = []

    def run(self, *args: str, **kw: object) -> None:
        self.runs.append((args, kw))


def test_the_native_arm_runs_this_python_with_the_packages_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from infra import local_run
    from workloads.paths import python_path

    streamed = Streamed(rc=3)
    monkeypatch.setattr(local_run, "stream", streamed)

    def hook(_child: object) -> None:
        return None

    out, log = tmp_path / "r.jsonl", tmp_path / "r.log"
    rc = local_run.run_native("smoke", out, log, streamed, "arm-a", "shared", on_start=hook)
    assert rc == 3
    (call,) = streamed.calls
    want = local_run.runner_args("smoke", str(out), "arm-a", "native", "shared")
    assert call["cmd"] == [sys.executable, "-m", "workloads", *want]
    assert (call["log"], call["out"], call["label"], call["on_start"]) == (log, out, "arm-a", hook)
    assert call["console"] is streamed
    env = call["env"]
    assert isinstance(env, dict) and env["PYTHONPATH"] == python_path()
    assert env["PATH"] == os.environ["PATH"]  # the caller's environment, plus the path
    local_run.run_native("smoke", out, log, None)
    assert streamed.calls[1]["cmd"] == [
        sys.executable, "-m", "workloads", *local_run.runner_args("smoke", str(out), "native"),
    ]  # fmt: skip
    assert streamed.calls[1]["label"] == "native"


def test_docker_arm_on_a_machine_without_a_gpu(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No GPU: no --gpus flag (the engine would refuse to start the container); a suite file
    mounted read-only at /suite and named there; the container removed by name afterwards."""
    from infra import local_run

    streamed = Streamed(rc=0)
    monkeypatch.setattr(local_run, "stream", streamed)
    monkeypatch.setattr(local_run, "has_nvidia_gpu", lambda: False)
    suite = tmp_path / "suites" / "mine.yaml"
    suite.parent.mkdir()
    suite.write_text(TINY_SUITE)
    results = tmp_path / "res"
    results.mkdir()
    out, engine = results / "r.jsonl", Engine()

    def hook(_child: object) -> None:
        return None

    console = object()
    rc = local_run.run_docker(
        cast(Any, engine), "img:1", str(suite), out, tmp_path / "log", "image", console,
        "gpulab-r-docker", "arm-b", "shared", on_start=hook,
    )  # fmt: skip
    assert rc == 0
    (call,) = streamed.calls
    cmd = call["cmd"]
    assert isinstance(cmd, list)
    assert not [t for t in cmd if t.startswith("--gpus")]
    assert cmd[:7] == ["docker", "run", "--rm", "--name=gpulab-r-docker", "--ipc=host",
                       "--network=host", f"--user={os.getuid()}:{os.getgid()}"]  # fmt: skip
    assert [t for t in cmd if t.startswith("--volume=")] == [
        f"--volume={results}:{results}",
        f"--volume={suite.parent}:/suite:ro",
    ]
    assert [t for t in cmd if t.startswith("--env=")] == ["--env=HOME=/tmp", "--env=GPULAB_GIT_REV"]
    inner = cmd[cmd.index("img:1") + 1 :]
    assert inner == ["python3", "-m", "workloads", *local_run.runner_args(
        "/suite/mine.yaml", str(results / "r.jsonl"), "arm-b", "docker", "shared")]  # fmt: skip
    assert (call["label"], call["on_start"], call["out"]) == ("arm-b", hook, out)
    assert call["log"] == tmp_path / "log"
    assert call["console"] is console
    yml = suite.with_name("other.yml")
    yml.write_text(TINY_SUITE)
    local_run.run_docker(cast(Any, engine), "img:1", str(yml), out, tmp_path / "log", "image",
                         console, "gpulab-r-docker")  # fmt: skip
    cmd2 = streamed.calls[1]["cmd"]
    assert isinstance(cmd2, list) and cmd2[cmd2.index("--suite") + 1] == "/suite/other.yml"
    env = call["env"]
    assert isinstance(env, dict) and env["DOCKER_HOST"] == "tcp://h:1"
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                         text=True).stdout.strip()  # fmt: skip
    assert env["GPULAB_GIT_REV"] == (rev or "unknown")
    assert engine.runs == [(("rm", "-f", "gpulab-r-docker"), {"timeout": 60})] * 2


def test_docker_arm_with_the_hosts_python_mounts_its_packages(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """--docker-python host: this venv's site-packages read-only at HOST_SITE; a suite named
    (not a file) stays a name; the container is removed even when the run fails."""
    from infra import local_run

    def boom(*_a: object, **_k: object) -> int:
        raise RuntimeError("stream failed")

    monkeypatch.setattr(local_run, "stream", boom)
    monkeypatch.setattr(local_run, "venv_site_packages", lambda: "/venv/site")
    engine = Engine()
    with pytest.raises(RuntimeError, match="stream failed"):
        local_run.run_docker(
            cast(Any, engine), "img:1", "smoke", tmp_path / "r.jsonl", tmp_path / "log", "host",
            None, "gpulab-x",
        )  # fmt: skip
    assert engine.runs == [(("rm", "-f", "gpulab-x"), {"timeout": 60})]
    streamed = Streamed()
    monkeypatch.setattr(local_run, "stream", streamed)
    monkeypatch.setattr(local_run, "has_nvidia_gpu", lambda: True)
    (tmp_path / "smoke").write_text(TINY_SUITE)  # a file without .yaml is no suite file
    monkeypatch.chdir(tmp_path)
    local_run.run_docker(
        cast(Any, engine),
        "img:1",
        "smoke",
        tmp_path / "r.jsonl",
        tmp_path / "log",
        "host",
        None,
        "gpulab-x",
    )
    cmd = streamed.calls[0]["cmd"]
    assert isinstance(cmd, list) and "--gpus=all" in cmd
    assert [t for t in cmd if t.startswith("--volume=")] == [
        f"--volume={tmp_path}:{tmp_path}",
        f"--volume=/venv/site:{HOST_SITE}:ro",
    ]
    assert cmd[cmd.index("--suite") + 1] == "smoke"


def test_the_failure_line_is_the_last_error_or_the_last_line(tmp_path: Path) -> None:
    from infra.local_run import _fail_line

    log = tmp_path / "arm.log"
    log.write_text("start\nERROR: first\n  Error: second  \nlast words\n\n")
    assert _fail_line(log) == "Error: second"
    log.write_text("one\n  two  \n\n")
    assert _fail_line(log) == "two"
    log.write_text("\n \n")
    assert _fail_line(log) == "no output"
    log.write_bytes(b"bad \xff error here\n")
    assert _fail_line(log) == "bad \ufffd error here"


def test_the_dockerfile_installs_the_runner_deps_only_with_the_images_python() -> None:
    from infra.local_run import RUNNER_DEPS, render_dockerfile

    image = render_dockerfile("debian:bookworm", "image", ["a==1", "b c"])
    assert "pip install --no-cache-dir 'pyyaml>=6,<7' 'nvidia-ml-py>=12,<14'" in image
    assert "pip install --no-cache-dir a==1 'b c'" in image
    assert len(RUNNER_DEPS) == 2
    host = render_dockerfile("debian:bookworm", "host")
    assert "pyyaml" not in host and f"PYTHONPATH=/opt/gpulab:{HOST_SITE}" in host
    assert "\nFROM debian:bookworm\n" in host and host.endswith("\n")
    assert "\n\n" not in host  # block tags leave no empty lines (trim_blocks)
    (pythonpath,) = [ln for ln in image.splitlines() if "PYTHONPATH=" in ln]
    assert pythonpath.strip() == "PYTHONPATH=/opt/gpulab"  # no host site in image mode
    assert (
        "pip install --no-cache-dir" not in host
    )  # the host's packages are mounted, nothing installed
    for text in (host, image):
        assert text.endswith('ENTRYPOINT ["python3", "-m", "workloads"]\n')


def test_docker_arm_outside_a_git_checkout_states_an_unknown_revision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from infra import local_run

    streamed = Streamed()
    monkeypatch.setattr(local_run, "stream", streamed)
    monkeypatch.setattr(local_run, "PACKAGES_DIR", tmp_path)  # no repository there
    monkeypatch.setattr(local_run, "has_nvidia_gpu", lambda: False)
    local_run.run_docker(
        cast(Any, Engine()), "img:1", "smoke", tmp_path / "r.jsonl", tmp_path / "log", "image",
        None, "gpulab-x",
    )  # fmt: skip
    env = streamed.calls[0]["env"]
    assert isinstance(env, dict) and env["GPULAB_GIT_REV"] == "unknown"


def test_docker_arm_states_the_checkouts_revision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from infra import local_run

    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    streamed = Streamed()
    monkeypatch.setattr(local_run, "stream", streamed)
    monkeypatch.setattr(local_run, "PACKAGES_DIR", tmp_path)
    local_run.run_docker(
        cast(Any, Engine()), "img:1", "smoke", tmp_path / "r.jsonl", tmp_path / "log", "image",
        None, "gpulab-x",
    )  # fmt: skip
    env = streamed.calls[0]["env"]
    assert isinstance(env, dict) and env["GPULAB_GIT_REV"] == head.strip() != ""


def test_no_docker_cli_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("infra.local_run.shutil.which", lambda _name: None)
    assert find_docker() == (None, "no docker CLI on PATH")
