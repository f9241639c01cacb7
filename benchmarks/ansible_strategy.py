"""Ansible's own strategy against Mitogen's (gpulab's default), side by side: playbooks/site.yml
on a fresh systemd-nspawn host (tests/parts/nspawn.py: Debian cloud-image login `debian` with
passwordless sudo, real SSH, packages through apt-cacher-ng and the stub NVIDIA repository;
no GPU, so the hardware steps are off), a first converge and an idempotent second one, under
each strategy in turn (GPULAB_ANSIBLE_STRATEGY), alternating which goes first from round to
round. Wall seconds of each run and the controller's CPU seconds (ansible-playbook and its
forks); the last line gives the ratios Mitogen / Ansible's own (medians over the rounds).

    sudo .venv/bin/python benchmarks/ansible_strategy.py [--rounds 2]

Needs root and the prepared test parts (scripts/test-parts.sh prepare).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.side_by_side import add_rounds, not_root  # noqa: E402  (after sys.path)

STRATEGIES = ("linear", "mitogen_linear")


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_rounds(ap, "both strategies")
    args = ap.parse_args(argv)
    if not_root("ansible_strategy"):
        return 2

    from infra.ansible import run_playbook
    from tests.ansible.helpers import stub_vars
    from tests.parts.nspawn import open_lab

    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    print("strategy        run     wall s   controller CPU s   changed")
    with open_lab(gpu_paths=()) as lab:
        extra = stub_vars(lab.stub_url, lab.stub_sha256)
        for rnd in range(args.rounds):
            order = STRATEGIES if rnd % 2 == 0 else STRATEGIES[::-1]
            for strategy in order:
                os.environ["GPULAB_ANSIBLE_STRATEGY"] = strategy
                (host,) = lab.boot(1, gpu_path="pci-passthrough", groups=["gpu_hosts"])
                try:
                    for run in ("first", "second"):
                        t0, c0 = time.monotonic(), _children_cpu()
                        r = run_playbook("site.yml", [host.host], extravars=extra, timeout_s=1800)
                        wall, cpu = time.monotonic() - t0, _children_cpu() - c0
                        runs.setdefault((strategy, run), []).append((wall, cpu))
                        changed = min(s.changed for s in r.hosts.values())
                        print(f"{strategy:<15} {run:<7} {wall:7.1f} {cpu:18.1f} {changed:9d}")
                finally:
                    lab.stop([host])

    def med(strategy: str, run: str, i: int) -> float:
        return statistics.median(x[i] for x in runs[(strategy, run)])

    ratios = [
        f"ratio_{run}_{what}={med('mitogen_linear', run, i) / med('linear', run, i):.2f}"
        for run in ("first", "second")
        for i, what in ((0, "wall"), (1, "cpu"))
    ]
    print(" ".join(ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
