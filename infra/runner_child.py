"""The runner as a child of gpulab (``gpulab run local``, study units): started so that it
never outlives gpulab, its output shown with a records counter, stopped with gpulab.

The child runs in its own process group and dies with gpulab (:mod:`infra.procs`). On a stop
signal (:class:`infra.signals.Stopped`, or any error while it runs) the child's group gets
SIGINT or SIGTERM, then SIGKILL after :data:`STOP_GRACE_S` (at once on a second signal); its
output is kept to the end, and the exception goes on once the child is gone. Each child is
entered in the registry of runners (:mod:`infra.runners`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra import runners
from infra.procs import ProcessRef, die_with_parent, signal_group
from infra.signals import deferred, signum_of


def count_records(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return sum(1 for line in fh if line.strip())
    except FileNotFoundError:
        return 0


# How long a runner has to stop after the signal gpulab passes on (it stops its own measuring
# child within 10 s and writes that record as interrupted) before its process group is killed.
STOP_GRACE_S = 25.0
# The signal the runner gets for each stop signal gpulab gets (it handles SIGINT and SIGTERM).
FORWARD: dict[int, int] = {signal.SIGINT: signal.SIGINT, signal.SIGTERM: signal.SIGTERM}


@dataclass
class Child:
    """A runner child as it started: its process, and its entry among the runners here."""

    proc: subprocess.Popen[str]
    ref: ProcessRef
    entry: Path | None = None
    container: str = ""  # the docker arm's container
    started: float = field(default_factory=time.time)  # wall clock, just after it started


def stream(
    cmd: list[str],
    log: Path,
    out_file: Path,
    label: str,
    console: Any,
    env: dict[str, str] | None = None,
    on_start: Callable[[Child], None] | None = None,
) -> int:
    """Run ``cmd``, showing its output and a records counter; returns its exit code (see the
    module). ``on_start`` gets the child as soon as it runs (the study journal records it)."""
    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    before = count_records(out_file)
    with (
        log.open("a") as fh,
        Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress,
    ):
        task = progress.add_task(f"{label}: starting", total=None)

        def show(line: str) -> None:
            fh.write(line)
            fh.flush()
            text = line.rstrip()
            if text:
                progress.console.print(
                    f"  [dim]{label}[/dim] {escape(text)}", highlight=False, soft_wrap=True
                )
            n = count_records(out_file) - before
            progress.update(task, description=f"{label}: {n} record(s)")

        proc: subprocess.Popen[str] | None = None
        child: Child | None = None
        try:
            runners.sweep()  # runners gone since the last look ended before this one starts
            with deferred():  # a signal here waits until the child is known (and so stopped)
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,  # in a group of its own it may not read the tty
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    bufsize=1,
                    env=env,
                    process_group=0,
                    preexec_fn=die_with_parent(),
                )
                child = Child(proc, ProcessRef.of(proc.pid))
                what = f"{label}: {' '.join(cmd[-12:])}"
                child.entry = runners.register(child.ref, what, out_file)
            if on_start is not None:
                on_start(child)
            assert proc.stdout is not None
            for line in proc.stdout:
                show(line)
            return proc.wait()
        except BaseException as exc:
            if proc is not None:
                _stop_child(proc, exc, show)
            raise
        finally:
            if child is not None:
                runners.finish(child.entry)


def _stop_child(
    proc: subprocess.Popen[str], exc: BaseException, show: Callable[[str], None]
) -> None:
    """Stop the runner child's group (see :func:`stream`) and wait until it is gone."""
    sig = FORWARD.get(signum_of(exc), signal.SIGTERM)
    signal_group(proc.pid, sig if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM)
    timer = threading.Timer(STOP_GRACE_S, signal_group, (proc.pid, signal.SIGKILL))
    timer.daemon = True
    timer.start()
    try:
        while True:
            try:
                if proc.stdout is not None and not proc.stdout.closed:
                    for line in proc.stdout:
                        with contextlib.suppress(Exception):
                            show(line)
                # ended, not reaped: its pid (the group's id) cannot be reused meanwhile
                os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
                break
            except KeyboardInterrupt:  # asked again: stop it now
                signal_group(proc.pid, signal.SIGKILL)
            except (OSError, ValueError):  # already reaped, or its output closed
                break
    finally:
        timer.cancel()
    signal_group(proc.pid, signal.SIGKILL)  # whatever is left in its group
    proc.wait()
