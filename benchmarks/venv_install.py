"""The venv's install (``scripts/venv.sh``, the first step of the README's two commands) with
pip and with uv, side by side: each round makes a fresh clone of the working tree's last commit
per installer and runs ``scripts/venv.sh`` there with ``GPULAB_INSTALLER`` set, alternating
which goes first. Wall seconds and the machine's CPU seconds over each (/proc/stat: run it on an
idle machine); the last line gives the ratios uv / pip (medians over the rounds).

    .venv/bin/python benchmarks/venv_install.py [--rounds 1] [--extras test]

The package caches are warm after the first install of each installer (pip's index pages and
the machine's wheel mirror; uv's own cache): run it once before the rounds you keep.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.side_by_side import add_rounds, machine_cpu_s  # noqa: E402  (after sys.path)


def install(installer: str, extras: str, work: Path) -> tuple[float, float]:
    clone = work / installer
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    env = dict(os.environ, GPULAB_INSTALLER=installer, EXTRAS=extras)
    w0, c0 = time.monotonic(), machine_cpu_s()
    r = subprocess.run(
        ["bash", "scripts/venv.sh"], cwd=clone, env=env, capture_output=True, text=True
    )
    wall, cpu = time.monotonic() - w0, machine_cpu_s() - c0
    if r.returncode != 0:
        raise SystemExit(f"venv_install: {installer}: scripts/venv.sh failed:\n{r.stderr[-2000:]}")
    if installer == "uv" and "pip installs them" in r.stderr:
        raise SystemExit("venv_install: uv failed and pip installed instead:\n" + r.stderr[-2000:])
    shutil.rmtree(clone, ignore_errors=True)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_rounds(ap, "both installers")
    ap.add_argument("--extras", default="test", help="the venv's extras (EXTRAS of venv.sh)")
    args = ap.parse_args(argv)
    runs: dict[str, list[tuple[float, float]]] = {"pip": [], "uv": []}
    print("installer   wall s   machine CPU s")
    with tempfile.TemporaryDirectory(prefix="gpulab-venv-bench-") as tmp:
        for rnd in range(args.rounds):
            order = ["pip", "uv"] if rnd % 2 == 0 else ["uv", "pip"]
            for name in order:
                wall, cpu = install(name, args.extras, Path(tmp))
                runs[name].append((wall, cpu))
                print(f"{name:9s} {wall:8.1f} {cpu:15.1f}", flush=True)
    med = {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in runs.items()
    }
    (uv_wall, uv_cpu), (pip_wall, pip_cpu) = med["uv"], med["pip"]
    print(f"ratio_wall={uv_wall / pip_wall:.2f} ratio_cpu={uv_cpu / pip_cpu:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
