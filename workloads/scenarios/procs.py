"""Child processes with a kill deadline, for the multi-process scenarios.

A distributed TensorFlow worker whose peers never come hangs forever and ignores SIGTERM, and
parameter servers never exit by themselves: every process here runs in its own session (so its
whole group can be signalled), dies with its parent (PR_SET_PDEATHSIG), and is SIGKILLed once
its deadline passes. :meth:`ProcGroup.close` leaves no process behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workloads import zygote
from workloads.paths import python_path

TERM_GRACE_S = 2.0


# Several framework processes share a GPU here: none may grab all of its memory at start.
SHARE_GPU_ENV = {"TF_FORCE_GPU_ALLOW_GROWTH": "true", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def gpu_count() -> int:
    """NVIDIA GPUs NVML sees (0 without a driver); honours CUDA_VISIBLE_DEVICES when set."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([v for v in visible.split(",") if v.strip() and v.strip() != "-1"])
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in SHARE_GPU_ENV.items():
        env.setdefault(key, value)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = python_path(env)
    env.update(extra or {})
    return env


@dataclass
class Proc:
    name: str
    popen: Any  # a subprocess.Popen, or a process forked from the zygote (workloads.zygote)
    log: Path
    started: float
    killed: bool = False

    @property
    def pid(self) -> int:
        return int(self.popen.pid)

    def tail(self, lines: int = 3, limit: int = 500) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        keep = [ln for ln in text.splitlines() if ln.strip() and "absl::InitializeLog" not in ln]
        return " | ".join(keep[-lines:])[-limit:]


@dataclass
class ProcGroup:
    """Processes started together and stopped together."""

    log_dir: Path
    procs: list[Proc] = field(default_factory=list)

    def start(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str] | None = None,
        stdin: str | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> Proc:
        """Start ``argv``; ``pass_fds`` stay open in the child (e.g. a barrier's pipe ends)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name.replace(':', '-')}.log"
        with open(log, "wb") as fh:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=child_env(env),
                start_new_session=True,
                preexec_fn=zygote.die_with_parent,
                pass_fds=pass_fds,
            )
        if stdin is not None and popen.stdin is not None:
            with contextlib.suppress(BrokenPipeError):  # a child that exits at once
                popen.stdin.write(stdin.encode())
            with contextlib.suppress(BrokenPipeError):
                popen.stdin.close()
        proc = Proc(name, popen, log, time.time())
        self.procs.append(proc)
        return proc

    def start_measure(
        self,
        name: str,
        env: dict[str, str] | None,
        stdin: str,
        pass_fds: tuple[int, ...] = (),
    ) -> Proc:
        """A measuring process (``python -m workloads _measure``), forked from the run's
        zygote when one answers (workloads/zygote.py), else started as its own interpreter."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name.replace(':', '-')}.log"
        stdin_r, writer = zygote.pipe_in()
        try:
            with open(log, "wb") as fh:
                forked = zygote.spawn(child_env(env), stdin_r, fh.fileno(), fh.fileno(), pass_fds)
        finally:
            os.close(stdin_r)
        if forked is None:
            writer.close()
            return self.start(
                name, [sys.executable, "-m", "workloads", "_measure"], env, stdin, pass_fds
            )
        with contextlib.suppress(BrokenPipeError):  # a child that exits at once
            writer.write(stdin)
        with contextlib.suppress(BrokenPipeError):
            writer.close()
        proc = Proc(name, forked, log, time.time())
        self.procs.append(proc)
        return proc

    def start_python(
        self, name: str, module: str, args: list[str], env: dict[str, str] | None = None
    ) -> Proc:
        return self.start(name, [sys.executable, "-m", module, *args], env)

    def wait(self, procs: list[Proc], deadline: float) -> bool:
        """Wait until every one of ``procs`` exits or ``deadline`` (time.monotonic) passes."""
        while time.monotonic() < deadline:
            if all(p.popen.poll() is not None for p in procs):
                return True
            time.sleep(0.1)
        return all(p.popen.poll() is not None for p in procs)

    def kill(self, proc: Proc, term_first: bool = False) -> None:
        """Stop ``proc``'s process group: optional SIGTERM with a grace period, then SIGKILL."""
        if proc.popen.poll() is not None:
            return
        if term_first:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.popen.wait(timeout=TERM_GRACE_S)
                return
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.killed = True
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(timeout=10)

    def close(self) -> list[str]:
        """SIGKILL every process still running; the names of those that had to be killed."""
        killed = []
        for proc in self.procs:
            if proc.popen.poll() is None:
                self.kill(proc)
                killed.append(proc.name)
        return killed

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def __enter__(self) -> ProcGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
