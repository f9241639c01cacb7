"""``workloads.quick_exit.exit_now``: a measuring process's end without the interpreter's
teardown keeps what the teardown would have done for it: the exit handlers run, buffered
output is written, the status is the process's; and ``python -m workloads _measure`` ends so
(its result arrives, and TensorFlow's autograph leaves no temporary file behind)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parts import REPO

CODE = """
import atexit, sys
from workloads.quick_exit import exit_now
atexit.register(lambda: print("handler", end="", flush=True))
print("buffered ", end="")          # a pipe: block-buffered, not yet written
sys.stderr.write("err")
exit_now(int(sys.argv[1]))
print("never")
"""


def test_exit_handlers_run_buffers_are_written_and_the_status_is_kept() -> None:
    for status in (0, 3):
        r = subprocess.run([sys.executable, "-c", CODE, str(status)], cwd=REPO,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        assert (r.returncode, r.stdout, r.stderr) == (status, "buffered handler", "err")


def test_a_handler_that_raises_still_ends_the_process_with_its_status() -> None:
    code = CODE.replace('print("handler", end="", flush=True)', "1 / 0")
    r = subprocess.run([sys.executable, "-c", code, "5"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 5 and r.stdout == "buffered " and "ZeroDivisionError" in r.stderr


@pytest.mark.tf
@pytest.mark.slow
def test_a_measuring_process_ends_so_its_result_arrives_and_no_temporary_file_stays(
    tmp_path: Path,
) -> None:
    """``python -m workloads _measure`` (the measuring process, as the runner starts it without
    a zygote: its job on stdin) ends through exit_now: its result line arrives, its status is
    0, and TensorFlow's autograph removes its generated module from TMPDIR in its exit handler
    (without the handlers it stays there)."""
    from workloads.scenarios import Job

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    job = Job(suite="t", experiment="e", model="mnist_cnn", batch=8, steps=2, warmup=1)
    r = subprocess.run(
        [sys.executable, "-m", "workloads", "_measure"],
        input=json.dumps(job.to_json()),
        cwd=REPO, env=dict(os.environ, TMPDIR=str(tmp), TF_CPP_MIN_LOG_LEVEL="2"),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("@gpulab result ")]
    result = json.loads(line.removeprefix("@gpulab result "))
    assert result["status"] == "ok" and result["images_per_sec"] > 0
    assert result["params"]["process_start"] == "exec"
    assert list(tmp.iterdir()) == []
