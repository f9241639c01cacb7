"""Counts runner processes for the first-run tests (tests/lifecycle/first_run.py): every Python
interpreter started with this directory on ``PYTHONPATH`` (the runner passes its own
``PYTHONPATH`` on to every process it starts, workloads.paths.python_path) appends its command
line to ``$GPULAB_TEST_LAUNCHES``, one line per process (one ``write`` in append mode), and a
line ``<pid> imports tensorflow`` when it first imports TensorFlow (an audit hook: a process
killed later, as a shared scenario's background job is, has written it already)."""

import os
import sys

_path = os.environ.get("GPULAB_TEST_LAUNCHES")


def _append(line: str) -> None:
    try:
        fd = os.open(_path or "", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (f"{os.getpid()} {line}\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


if _path:
    try:
        with open("/proc/self/cmdline", "rb") as _fh:
            _argv = [a.decode(errors="replace") for a in _fh.read().split(b"\0") if a]
    except OSError:
        _argv = []
    _append(" ".join(_argv[1:]))
    _seen = []

    def _on_import(event: str, args: tuple) -> None:
        if not _seen and event == "import" and args and args[0] == "tensorflow":
            _seen.append(True)
            _append("imports tensorflow")

    sys.addaudithook(_on_import)
