"""What a measuring process's start costs, old against new, side by side, and the first run.

Two parts, each measured alternately so that both sides see the same machine:

1. ``import tensorflow, keras`` in a fresh Python process, as a measuring process did before
   (``plain``) and as it does now (``kept out``: ``workloads.lean_imports.keep_out`` first,
   which keeps JAX and matplotlib out). CPU seconds (user + system of the child) and wall
   seconds, median of ``--rounds`` pairs (default 5); the last line gives
   ``ratio_cpu=<kept out / plain>``.
2. ``--exit``: the end of a measuring process, after its result is written: a fresh process
   imports TensorFlow and Keras as a measuring process does, fits a small CNN for 3 steps,
   prints the time, then returns to Python's normal exit (``teardown``) or ends with
   ``workloads.quick_exit.exit_now`` as ``python -m workloads _measure`` does now
   (``exit_now``): wall seconds from that print to the process's end, and its CPU seconds,
   median of ``--rounds`` pairs; adds ``ratio_exit_wall=<exit_now / teardown>`` and
   ``ratio_exit_cpu`` (of the whole process) to the last line.
3. ``--fork``: the first-run study's three suites (``studies/suites/local-*.yaml``: 2
   measurements, the shared pair, one job then 4 at once) run by ``python -m workloads bench``
   with ``--process-start exec`` (each measuring process its own interpreter) and ``fork``
   (forked from the run's zygote), alternately: wall and CPU seconds (the runner and every
   process under it), median of ``--rounds`` pairs; adds ``ratio_fork_wall=<fork / exec>`` and
   ``ratio_fork_cpu``. ``--fork-suites local-single`` runs fewer of them.
4. ``--study``: the built-in first-run study (``gpulab study run local-first-run``, no Docker
   engine) in a git worktree of ``--old`` (default ``main``) and in this tree, alternately,
   ``--study-rounds`` times (default 1): its wall time and the seconds of each arm's units,
   with ``ratio_study=<new / old>``. About 4-5 minutes a pair on 2 cores.

    .venv/bin/python benchmarks/runner_startup.py
    .venv/bin/python benchmarks/runner_startup.py --exit
    .venv/bin/python benchmarks/runner_startup.py --rounds 3 --fork
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
sys.path.insert(0, str(REPO))

from benchmarks.side_by_side import rounds  # noqa: E402  (after sys.path)

IMPORT = "import tensorflow, keras"
KEEP_OUT = "from workloads.lean_imports import keep_out\nkeep_out('tensorflow')\n"
UNIT = re.compile(r"done arm (\S+), repeat \d+: .*?([\d.]+) s$")


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_code(code: str, *args: str) -> str:
    """Run ``code`` in a fresh Python process with this tree first on its path; its stdout."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, "-c", code, *args], env=env, check=True,
                          capture_output=True, text=True, timeout=300).stdout  # fmt: skip


def import_once(code: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh process running ``code``."""
    cpu0, t0 = child_cpu(), time.perf_counter()
    run_code(code)
    return child_cpu() - cpu0, time.perf_counter() - t0


FIT = (
    KEEP_OUT
    + IMPORT
    + """
import sys, time
import numpy as np
m = keras.Sequential([keras.layers.Input((28, 28, 1)), keras.layers.Conv2D(32, 3),
                      keras.layers.Flatten(), keras.layers.Dense(10)])
m.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
m.fit(np.zeros((64, 28, 28, 1), "float32"), np.zeros(64, "int32"), steps_per_epoch=3, verbose=0)
print(time.time(), flush=True)
if sys.argv[1] == "exit_now":
    from workloads.quick_exit import exit_now
    exit_now(0)
"""
)


def exit_once(how: str) -> tuple[float, float]:
    """(CPU seconds of the process, wall seconds from its last print to its end)."""
    cpu0 = child_cpu()
    printed = run_code(FIT, how)
    end = time.time()
    return child_cpu() - cpu0, end - float(printed.split()[-1])


def exits(rounds: int) -> tuple[float, float]:
    got: dict[str, list[tuple[float, float]]] = {"teardown": [], "exit_now": []}
    for i in range(rounds):
        for how in ("teardown", "exit_now") if i % 2 == 0 else ("exit_now", "teardown"):
            got[how].append(exit_once(how))
    print(f"\na measuring process's end after its result, median of {rounds} each (alternating)")
    print(f"{'':10} {'CPU s':>7} {'end s':>7}")
    med: dict[str, tuple[float, float]] = {}
    for label, runs in got.items():
        med[label] = (
            statistics.median(c for c, _ in runs),
            statistics.median(w for _, w in runs),
        )
        print(f"{label:10} {med[label][0]:7.2f} {med[label][1]:7.2f}")
    (cpu_new, wall_new), (cpu_old, wall_old) = med["exit_now"], med["teardown"]
    return wall_new / wall_old, cpu_new / cpu_old


SUITES = ("local-single", "local-shared", "local-sharing")


def suite_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in SUITES]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown suite {', '.join(bad) or repr(text)}; one or more of {', '.join(SUITES)}"
        )
    return names


def suites_once(how: str, out: Path, suites: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``suites`` run with ``--process-start how``."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    cpu0, t0 = child_cpu(), time.perf_counter()
    for name in suites:
        subprocess.run(
            [sys.executable, "-m", "workloads", "bench", "--suite",
             str(REPO / "studies" / "suites" / f"{name}.yaml"), "--process-start", how,
             "--out", str(out / f"{how}-{name}.jsonl"), "--gpu-path", "local"],
            env=env, check=True, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    return time.perf_counter() - t0, child_cpu() - cpu0


def forks(rounds: int, suites: list[str]) -> tuple[float, float]:
    got: dict[str, list[tuple[float, float]]] = {"exec": [], "fork": []}
    with tempfile.TemporaryDirectory(prefix="gpulab-fork-bench-") as tmp:
        for i in range(rounds):
            for how in ("exec", "fork") if i % 2 == 0 else ("fork", "exec"):
                got[how].append(suites_once(how, Path(tmp), suites))
    print(f"\nthe first-run study's suites ({', '.join(suites)}), one bench run each, "
          f"median of {rounds} (alternating)")  # fmt: skip
    print(f"{'':6} {'wall s':>7} {'CPU s':>7}")
    med = {}
    for how, runs in got.items():
        med[how] = (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        print(f"{how:6} {med[how][0]:7.1f} {med[how][1]:7.1f}")
    return med["fork"][0] / med["exec"][0], med["fork"][1] / med["exec"][1]


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
    parser.add_argument("--rounds", type=rounds, default=5, help="pairs of each part (default 5)")
    parser.add_argument("--exit", action="store_true", help="also a measuring process's end")
    parser.add_argument("--fork", action="store_true", help="also exec against fork")
    parser.add_argument(
        "--fork-suites",
        type=suite_names,
        default=list(SUITES),
        help=f"the suites --fork runs, comma-separated (default {','.join(SUITES)})",
    )
    parser.add_argument("--study", action="store_true", help="also the first-run study")
    parser.add_argument("--old", default="main", help="git ref of the old tree (default main)")
    parser.add_argument("--study-rounds", type=rounds, default=1)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs")
    ratio_cpu = imports(args.rounds)
    line = f"ratio_cpu={ratio_cpu:.2f}"
    if args.exit:
        ratio_wall, ratio_exit_cpu = exits(args.rounds)
        line += f" ratio_exit_wall={ratio_wall:.2f} ratio_exit_cpu={ratio_exit_cpu:.2f}"
    if args.fork:
        ratio_wall, ratio_fork_cpu = forks(args.rounds, args.fork_suites)
        line += f" ratio_fork_wall={ratio_wall:.2f} ratio_fork_cpu={ratio_fork_cpu:.2f}"
    if args.study:
        line += f" ratio_study={study(args.old, args.study_rounds):.2f}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
