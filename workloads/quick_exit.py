"""A measuring process ends without the interpreter's teardown.

Once a measuring process (``python -m workloads _measure``, a distributed worker) has written
and flushed its result, all that is left is Python's finalization of the modules TensorFlow and
Keras loaded: 1.3-1.5 s of wall time and about 1 s of CPU a process on a 2-core machine
(benchmarks/runner_startup.py), for nothing the measurement needs. :func:`exit_now` runs the
exit handlers (TensorFlow's autograph removes its temporary files in one; coverage writes its
data in one), flushes the standard streams, then ends the process with ``os._exit`` and the
same status. Only for the processes' entry points (``__main__``): never in a process that
imported this to call a function (a test, the runner's parent)."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    try:
        atexit._run_exitfuncs()  # the documented handlers' runner (Lib/atexit: private name)
    finally:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()
        os._exit(code)
