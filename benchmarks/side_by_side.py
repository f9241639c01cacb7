"""What the side-by-side benchmarks share: their ``--rounds`` argument, the root check of the
ones that boot systemd-nspawn hosts, and the machine's CPU seconds (/proc/stat)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def rounds(text: str) -> int:
    """``--rounds``: a whole number of 1 or more (argparse names the option in its error)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {n}")
    return n


def add_rounds(ap: argparse.ArgumentParser, each: str) -> None:
    ap.add_argument("--rounds", type=rounds, default=1, help=f"rounds (each: {each})")


def not_root(prog: str) -> bool:
    """True, with the error on stderr, when this process cannot run systemd-nspawn."""
    if os.geteuid() == 0:
        return False
    print(f"{prog}: error: needs root (systemd-nspawn)", file=sys.stderr)
    return True


def machine_cpu_s() -> float:
    """CPU seconds the whole machine spent, not idle (user, nice, system, irq, softirq)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    busy = sum(int(fields[i]) for i in (0, 1, 2, 5, 6))
    return busy / os.sysconf("SC_CLK_TCK")
