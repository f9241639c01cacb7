"""Mutation testing of the core modules with mutmut 3 (called by scripts/mutation.sh).

Each module of scripts/mutation.toml runs in its own copy of the tree under
.cache/mutation/work/<module>/ with a generated [tool.mutmut] (its sources, its test files,
one child), so modules never share mutmut's mutants/ directory or settings. The score per
module goes to stdout and to .cache/mutation/scores-<UTC time>.tsv (and latest.tsv).
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "scripts" / "mutation.toml"
CACHE = REPO / ".cache" / "mutation"
MUTMUT = REPO / ".venv" / "bin" / "mutmut"

# mutmut's statuses: what counts as a killed mutant, what is left out of the score.
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
NOT_SCORED = {"skipped", "not checked"}
LINE = re.compile(r"^\s+(\S+__mutmut_\d+): (.+)$")


@dataclass
class Score:
    module: str
    killed: int
    total: int
    survivors: list[str]
    unchecked: int
    seconds: float

    @property
    def percent(self) -> float:
        return 100.0 * self.killed / self.total if self.total else 100.0


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def pyproject_without_mutmut() -> str:
    """The repository's pyproject.toml (pytest settings, markers) minus any [tool.mutmut]."""
    out: list[str] = []
    skipping = False
    for line in (REPO / "pyproject.toml").read_text().splitlines():
        if line.startswith("["):
            skipping = line.strip() == "[tool.mutmut]"
        if not skipping:
            out.append(line)
    return "\n".join(out) + "\n"


def prepare(name: str, module: dict[str, Any], settings: dict[str, Any]) -> Path:
    """A fresh copy of the tree for one module, with its own [tool.mutmut]."""
    work = CACHE / "work" / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    packages = [str(p) for p in settings["packages"]]
    also = [str(p) for p in settings["also_copy"]]
    for item in [*packages, *also]:
        src = REPO / item
        if src.is_dir():
            shutil.copytree(src, work / item, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, work / item)
    tests = [str(t) for t in module["tests"] if (REPO / t).exists()]
    pytest_args = ["-m", str(settings["markers"]), "-p", "no:cacheprovider"]
    conf = pyproject_without_mutmut() + (
        "\n[tool.mutmut]\n"
        f"source_paths = {toml_list(packages)}\n"
        f"only_mutate = {toml_list([str(s) for s in module['sources']])}\n"
        f"also_copy = {toml_list(also)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        f"pytest_add_cli_args = {toml_list(pytest_args)}\n"
        f"timeout_multiplier = {float(settings['timeout_multiplier'])}\n"
        "use_git_change_detection = false\n"
    )
    (work / "pyproject.toml").write_text(conf)
    # The tests find the venv and the prepared parts beside the repository root (mutants/).
    (work / "mutants").mkdir()
    for link in (".venv", ".cache"):
        (work / "mutants" / link).symlink_to(REPO / link)
    return work


def run_module(name: str, module: dict[str, Any], settings: dict[str, Any], children: int) -> Score:
    work = prepare(name, module, settings)
    globs = module.get("functions", [])
    t0 = time.monotonic()
    log = CACHE / f"{name}.log"
    with log.open("w") as out:
        subprocess.run(
            [str(MUTMUT), "run", "--max-children", str(children), *globs],
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    seconds = time.monotonic() - t0
    listing = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    killed = total = unchecked = 0
    survivors: list[str] = []
    for line in listing.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        mutant, status = m.groups()
        if globs and not any(fnmatch.fnmatchcase(mutant, g) for g in globs):
            continue
        if status in NOT_SCORED:
            unchecked += status == "not checked"
            continue
        total += 1
        if status in KILLED:
            killed += 1
        else:
            survivors.append(f"{mutant}: {status}")
    (CACHE / f"{name}.survivors.txt").write_text("".join(f"{s}\n" for s in survivors))
    return Score(name, killed, total, survivors, unchecked, seconds)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("modules", nargs="*", help="modules of scripts/mutation.toml (all)")
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--list", action="store_true", help="print the modules and exit")
    args = parser.parse_args(argv)
    conf = tomllib.loads(CONFIG.read_text())
    modules: dict[str, dict[str, Any]] = conf["modules"]
    if args.list:
        for name, module in modules.items():
            print(f"{name}: {' '.join(module['sources'])}")
        return 0
    unknown = [m for m in args.modules if m not in modules]
    if unknown:
        print(f"unknown module {unknown[0]!r}; one of: {', '.join(modules)}", file=sys.stderr)
        return 2
    CACHE.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    table = CACHE / f"scores-{stamp}.tsv"
    rows = ["module\tkilled\ttotal\tpercent\tunchecked\tseconds"]
    print(f"{'module':<12} {'killed/total':>13} {'%':>6} {'time':>7}", flush=True)
    scores: list[Score] = []
    for name in args.modules or list(modules):
        s = run_module(name, modules[name], conf["settings"], args.max_children)
        scores.append(s)
        note = f"  ({s.unchecked} not checked: see {CACHE / name}.log)" if s.unchecked else ""
        print(
            f"{name:<12} {f'{s.killed}/{s.total}':>13} {s.percent:>5.1f}% {s.seconds:>6.0f}s{note}",
            flush=True,
        )
        rows.append(
            f"{name}\t{s.killed}\t{s.total}\t{s.percent:.1f}\t{s.unchecked}\t{s.seconds:.0f}"
        )
        table.write_text("\n".join(rows) + "\n")
    killed = sum(s.killed for s in scores)
    total = sum(s.total for s in scores)
    seconds = sum(s.seconds for s in scores)
    percent = 100.0 * killed / max(total, 1)
    print(f"{'all':<12} {f'{killed}/{total}':>13} {percent:>5.1f}% {seconds:>6.0f}s")
    shutil.copy(table, CACHE / "latest.tsv")
    print(f"scores: {table}; survivors: {CACHE}/<module>.survivors.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
