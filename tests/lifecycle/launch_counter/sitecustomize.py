"""Counts runner processes for the first-run tests (tests/lifecycle/first_run.py): every Python
interpreter started with this directory on ``PYTHONPATH`` (the runner passes its own
``PYTHONPATH`` on to every process it starts, workloads.paths.python_path) appends its command
line to ``$GPULAB_TEST_LAUNCHES``, one line per process (one ``write`` in append mode)."""

import os

_path = os.environ.get("GPULAB_TEST_LAUNCHES")
if _path:
    try:
        with open("/proc/self/cmdline", "rb") as _fh:
            _argv = [a.decode(errors="replace") for a in _fh.read().split(b"\0") if a]
        _fd = os.open(_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(_fd, (f"{os.getpid()} " + " ".join(_argv[1:]) + "\n").encode())
        finally:
            os.close(_fd)
    except OSError:
        pass
