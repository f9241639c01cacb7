"""What the end-to-end hosts' lab image saves, side by side: the site play's ``workload_env``
role (the runner's virtualenv with TensorFlow from the served wheelhouse, as the end-to-end
labs configure it) on a host booted from the blank test rootfs and on one booted from the lab
image (tests/parts/lab_image.py), alternating which goes first from round to round. Wall
seconds of each run and the machine's CPU seconds over it (/proc/stat: the host's processes
run in their own container, outside this process's children, so run it on an idle machine);
the last line gives the ratios image / blank (medians over the rounds).

    sudo .venv/bin/python benchmarks/lab_image.py [--rounds 2]

Needs root and the prepared test parts (scripts/test-parts.sh prepare); builds the image if
it is missing (about 30 s, not counted).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.side_by_side import add_rounds, machine_cpu_s, not_root  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_rounds(ap, "both roots")
    args = ap.parse_args(argv)
    if not_root("lab_image"):
        return 2

    from infra.ansible import run_playbook
    from tests.e2e.conftest import WHEELHOUSE, requirements, site_vars
    from tests.parts.lab_image import ONE_ROLE, lab_image
    from tests.parts.nspawn import ROOTFS, open_lab

    runs: dict[str, list[tuple[float, float]]] = {"blank": [], "image": []}
    print("root     wall s   machine CPU s   changed")
    with open_lab(gpu_paths=()) as lab:
        site = site_vars(lab, lab.serve(WHEELHOUSE), requirements(WHEELHOUSE))
        roots = {"blank": ROOTFS, "image": lab_image(lab, site, WHEELHOUSE / "requirements.txt")}
        for rnd in range(args.rounds):
            order = ["blank", "image"] if rnd % 2 == 0 else ["image", "blank"]
            for name in order:
                lab.rootfs = roots[name]
                (host,) = lab.boot(1)
                try:
                    t0, c0 = time.monotonic(), machine_cpu_s()
                    r = run_playbook(
                        ONE_ROLE, [host.host], extravars={**site, "one_role": "workload_env"}
                    )
                    wall, cpu = time.monotonic() - t0, machine_cpu_s() - c0
                finally:
                    lab.stop([host])
                runs[name].append((wall, cpu))
                print(f"{name:7s} {wall:7.1f}   {cpu:13.1f}   {r.changed:7d}", flush=True)

    def med(name: str, i: int) -> float:
        return statistics.median(x[i] for x in runs[name])

    print(
        f"ratio_wall={med('image', 0) / med('blank', 0):.2f} "
        f"ratio_cpu={med('image', 1) / med('blank', 1):.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
