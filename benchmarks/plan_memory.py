"""Memory of the bench plan: RSS of ``run_bench`` over a suite of a huge number of repetitions.

The suite bypasses the documented caps (at most 1000 repeats, 10,000 measurements) on purpose,
to show whether the runner builds its plan up front: each "measurement" is a stub interpreter
(``/bin/true``, so every repetition fails at once and is recorded as failed) and the records go
to a temporary file. The child runs for ``--seconds`` and the parent samples its RSS.

    .venv/bin/python benchmarks/plan_memory.py --repeats 99999999999 --seconds 5
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import sys
from workloads.bench import run_bench
from workloads.suites import Entry, Suite
suite = Suite("plan-memory", (Entry("huge", "mnist_cnn", repeats=int(sys.argv[1])),))
run_bench(suite, sys.argv[2], python="/bin/true", backend="tensorflow")
"""


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=99_999_999_999)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "o.jsonl")
        cmd = [sys.executable, "-c", CHILD, str(args.repeats), out]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
        start, samples = time.monotonic(), []
        try:
            while time.monotonic() - start < args.seconds and proc.poll() is None:
                time.sleep(0.5)
                samples.append((time.monotonic() - start, rss_mib(proc.pid)))
        finally:
            proc.kill()
            proc.wait()
        lines = len(Path(out).read_text().splitlines()) if os.path.exists(out) else 0
    for t, mib in samples:
        print(f"t={t:4.1f}s rss={mib:8.1f} MiB")
    print(f"records written: {lines}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
