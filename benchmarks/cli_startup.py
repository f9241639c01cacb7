"""How long `gpulab --help` and each command's help take, old against new, side by side.

Targets (issue 32): `gpulab --help` under 0.3 s, any command's help under 0.5 s on an idle
machine. ``--old REF`` (default ``main``) is checked out into a temporary git worktree; each
command line then runs in a fresh Python process, old and new alternately, ``--rounds`` times
(default 7), and the median wall time of each is printed with the ratio. Both trees run with
this interpreter and its packages (``PYTHONPATH`` puts the tree first), from an empty
directory, as ``python -c 'from infra.cli import main; main()' ARGS`` (what the console script
does). A command the old tree lacks shows "-".

    .venv/bin/python benchmarks/cli_startup.py
    .venv/bin/python benchmarks/cli_startup.py --old 35f350a --rounds 15

Say how loaded the machine was when you quote the numbers (``uptime``): the ratio holds up
under load better than the absolute times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINES = (
    ["--help"],
    ["up", "--help"],
    ["validate", "--help"],
    ["report", "--help"],
    ["compare", "--help"],
    ["bench", "--help"],
    ["study", "run", "--help"],
    ["data", "imagenet-like", "--help"],
    ["list", "--help"],
    ["init", "--help"],
    ["doctor", "--help"],
    ["--version"],
)
CODE = "import sys\nfrom infra.cli import main\nsys.exit(main(sys.argv[1:]))"
LIMITS = {"--help": 0.3}  # the root's help; every other help: 0.5 s


def once(tree: Path, args: list[str], cwd: Path) -> float | None:
    """Wall seconds of one run (None: the tree has no such command)."""
    env = dict(os.environ, PYTHONPATH=str(tree), COLUMNS="100", NO_COLOR="1")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", CODE, *args], cwd=cwd, env=env,
                       capture_output=True, timeout=120)  # fmt: skip
    seconds = time.perf_counter() - t0
    return seconds if r.returncode == 0 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", default="main", help="git ref of the old CLI (default main)")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpulab-cli-bench-") as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet",
                        str(old), args.old], check=True)  # fmt: skip
        try:
            where = Path(tmp) / "cwd"
            where.mkdir()
            for tree in (old, REPO):  # warm the file cache and the bytecode once
                for line in LINES:
                    once(tree, line, where)
            times: dict[tuple[str, str], list[float | None]] = {}
            for _ in range(args.rounds):
                for line in LINES:
                    for label, tree in (("old", old), ("new", REPO)):
                        times.setdefault((label, " ".join(line)), []).append(
                            once(tree, line, where)
                        )
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)],
                           check=False)  # fmt: skip
    load = os.getloadavg()
    print(f"gpulab CLI start-up, median of {args.rounds} runs each, old = {args.old}, "
          f"new = this tree; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'command line':34} {'old s':>7} {'new s':>7} {'new/old':>8} {'target':>7}")
    worst = True
    for line in LINES:
        name = " ".join(line)
        med = {}
        for label in ("old", "new"):
            got = times[(label, name)]
            med[label] = None if None in got else statistics.median(x for x in got if x)
        limit = LIMITS.get(name, 0.5) if "--help" in line else None
        o, n = med["old"], med["new"]
        ratio = f"{n / o:8.2f}" if o and n else f"{'-':>8}"
        shown = [f"{v:7.3f}" if v is not None else f"{'-':>7}" for v in (o, n)]
        verdict = "" if limit is None else ("ok" if n is not None and n < limit else "OVER")
        worst = worst and verdict != "OVER"
        target = f"<{limit}" if limit is not None else ""
        print(f"{name:34} {shown[0]} {shown[1]} {ratio} {target:>7} {verdict}")
    return 0 if worst else 1


if __name__ == "__main__":
    sys.exit(main())
