"""What a measuring process's start costs, old against new, side by side, and the first run.

Two parts, each measured alternately so that both sides see the same machine:

1. ``import tensorflow, keras`` in a fresh Python process, as a measuring process did before
   (``plain``) and as it does now (``kept out``: ``workloads.lean_imports.keep_out`` first,
   which keeps JAX and matplotlib out). CPU seconds (user + system of the child) and wall
   seconds, median of ``--rounds`` pairs (default 5); the last line gives
   ``ratio_cpu=<kept out / plain>``.
2. ``--study``: the built-in first-run study (``gpulab study run local-first-run``, no Docker
   engine) in a git worktree of ``--old`` (default ``main``) and in this tree, alternately,
   ``--study-rounds`` times (default 1): its wall time and the seconds of each arm's units,
   with ``ratio_study=<new / old>``. About 4-5 minutes a pair on 2 cores.

    .venv/bin/python benchmarks/runner_startup.py
    .venv/bin/python benchmarks/runner_startup.py --study --old f2857fd

Both trees run with this interpreter and its packages (``PYTHONPATH`` puts the tree first).
Say how loaded the machine was when you quote the numbers (the script prints the load
average): CPU seconds hold up under load better than wall seconds.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IMPORT = "import tensorflow, keras"
KEEP_OUT = "from workloads.lean_imports import keep_out\nkeep_out('tensorflow')\n"
UNIT = re.compile(r"done arm (\S+), repeat \d+: .*?([\d.]+) s$")


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def import_once(code: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh process running ``code``."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    cpu0, t0 = child_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                   timeout=300)  # fmt: skip
    return child_cpu() - cpu0, time.perf_counter() - t0


def study_once(tree: Path, results: Path) -> tuple[float, dict[str, float]]:
    """(wall seconds, seconds of units per arm) of the first-run study run from ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree), DOCKER_HOST="unix:///nonexistent.sock",
               COLUMNS="160")  # fmt: skip
    env.pop("GPULAB_RESULTS", None)
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "infra.cli", "study", "run", "local-first-run",
         "--results-dir", str(results)],
        cwd=tree, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"study in {tree} exited {r.returncode}: {r.stderr[-2000:]}")
    arms: dict[str, float] = {}
    for line in r.stderr.splitlines():
        if m := UNIT.search(line.strip()):
            arms[m.group(1)] = arms.get(m.group(1), 0.0) + float(m.group(2))
    return wall, arms


def imports(rounds: int) -> float:
    got: dict[str, list[tuple[float, float]]] = {"plain": [], "kept out": []}
    import_once(IMPORT)  # warm the file cache
    for _ in range(rounds):
        got["plain"].append(import_once(IMPORT))
        got["kept out"].append(import_once(KEEP_OUT + IMPORT))
    print(f"`{IMPORT}` in a fresh process, median of {rounds} each (alternating)")
    print(f"{'':10} {'CPU s':>7} {'wall s':>7}")
    med = {}
    for label, runs in got.items():
        med[label] = statistics.median(c for c, _ in runs)
        print(f"{label:10} {med[label]:7.2f} {statistics.median(w for _, w in runs):7.2f}")
    return med["kept out"] / med["plain"]


def study(old_ref: str, rounds: int) -> float:
    walls: dict[str, list[float]] = {"old": [], "new": []}
    arms: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="gpulab-runner-bench-") as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet",
                        str(old), old_ref], check=True)  # fmt: skip
        try:
            for i in range(rounds):
                for label, tree in (("old", old), ("new", REPO)):
                    wall, per_arm = study_once(tree, Path(tmp) / f"res-{label}-{i}")
                    walls[label].append(wall)
                    arms[label].append(per_arm)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)],
                           check=False)  # fmt: skip
    print(f"\nfirst-run study (no Docker engine), old = {old_ref}, new = this tree, "
          f"{rounds} run(s) each, alternating")  # fmt: skip
    names = sorted({a for runs in arms.values() for r in runs for a in r})
    print(f"{'':5} {'wall s':>7} " + " ".join(f"{a + ' s':>9}" for a in names))
    for label in ("old", "new"):
        cells = [statistics.median(r.get(a, 0.0) for r in arms[label]) for a in names]
        print(f"{label:5} {statistics.median(walls[label]):7.1f} "
              + " ".join(f"{c:9.1f}" for c in cells))  # fmt: skip
    return statistics.median(walls["new"]) / statistics.median(walls["old"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="import pairs (default 5)")
    parser.add_argument("--study", action="store_true", help="also the first-run study")
    parser.add_argument("--old", default="main", help="git ref of the old tree (default main)")
    parser.add_argument("--study-rounds", type=int, default=1)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs")
    ratio_cpu = imports(args.rounds)
    line = f"ratio_cpu={ratio_cpu:.2f}"
    if args.study:
        line += f" ratio_study={study(args.old, args.study_rounds):.2f}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
