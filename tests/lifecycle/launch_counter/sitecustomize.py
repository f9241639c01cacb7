"""Counts runner processes for the first-run tests (tests/lifecycle/first_run.py): every Python
interpreter started with this directory on ``PYTHONPATH`` (the runner passes its own
``PYTHONPATH`` on to every process it starts, workloads.paths.python_path) appends its command
line to ``$GPULAB_TEST_LAUNCHES``, one line per process (one ``write`` in append mode), and a
line ``<pid> imports <name>`` once one of WATCHED is imported (an audit hook: a process
killed later, as a shared scenario's background job is, has written it already)."""

import os
import sys

_path = os.environ.get("GPULAB_TEST_LAUNCHES")
WATCHED = ("tensorflow", "jax", "matplotlib")


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
    _seen: set = set()

    def _on_import(event: str, args: tuple) -> None:
        # an import event comes for every attempt, also one that fails (a package kept out
        # with None in sys.modules): a package counts once it is a module in sys.modules,
        # seen at any later import (its own submodules' among them)
        if event != "import" or len(_seen) == len(WATCHED):
            return
        for name in WATCHED:
            if name not in _seen and sys.modules.get(name) is not None:
                _seen.add(name)
                _append(f"imports {name}")

    sys.addaudithook(_on_import)
