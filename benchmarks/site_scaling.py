"""How the site run's time grows with the number of hosts: playbooks/site.yml on 1, 2 and 4
fresh systemd-nspawn hosts (tests/parts/nspawn.py: Debian cloud-image login `debian` with
passwordless sudo, real SSH, packages through apt-cacher-ng and the STUB NVIDIA repository, as
tests/ansible/helpers.py stub_vars gives; no GPU, so the hardware steps are off).

Each N boots N fresh hosts (gpu_path pci-passthrough: gpu_facts, nvidia_driver, cuda_toolkit,
workload_env), runs site.yml once on all of them, and shuts them down. Ansible's forks: the
ansible-runner default (Ansible's 5, so up to 5 hosts run in parallel) unless --forks sets
ANSIBLE_FORKS.

    sudo .venv/bin/python benchmarks/site_scaling.py              # N = 1 2 4
    sudo .venv/bin/python benchmarks/site_scaling.py --hosts 1 2 --forks 1

Needs root and the prepared test parts (scripts/test-parts.sh prepare).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.side_by_side import not_root  # noqa: E402  (after sys.path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 4], help="host counts")
    ap.add_argument("--forks", type=int, default=None, help="ANSIBLE_FORKS (default: Ansible's)")
    args = ap.parse_args(argv)
    if any(n < 1 for n in args.hosts):
        print("site_scaling: error: --hosts takes counts of 1 or more", file=sys.stderr)
        return 2
    if not_root("site_scaling"):
        return 2
    if args.forks is not None:
        os.environ["ANSIBLE_FORKS"] = str(args.forks)

    from infra.ansible import run_playbook
    from tests.ansible.helpers import stub_vars
    from tests.parts.nspawn import open_lab

    forks = os.environ.get("ANSIBLE_FORKS", "default (5)")
    rows: list[tuple[int, float, float, int, int]] = []
    with open_lab(gpu_paths=()) as lab:
        extra = stub_vars(lab.stub_url, lab.stub_sha256)
        for n in args.hosts:
            t0 = time.monotonic()
            hosts = lab.boot(n, gpu_path="pci-passthrough", groups=["gpu_hosts"])
            boot_s = time.monotonic() - t0
            try:
                r = run_playbook("site.yml", [h.host for h in hosts], extravars=extra,
                                 timeout_s=1800)  # fmt: skip
            finally:
                lab.stop(hosts)
            changed = min(s.changed for s in r.hosts.values())
            rows.append((n, r.elapsed_s, boot_s, changed, len(r.hosts)))
            print(f"N={n}: site.yml {r.elapsed_s:.1f} s (boot {boot_s:.1f} s, "
                  f"changed>={changed} per host)", flush=True)  # fmt: skip

    print(f"\nsite.yml on fresh nspawn hosts, forks {forks}, {os.cpu_count()} CPUs")
    print(f"{'hosts':>5} {'wall s':>8} {'per host s':>10} {'+ per added host s':>19}")
    base_n, base_t = rows[0][0], rows[0][1]
    for n, t, _, _, _ in rows:
        inc = f"{(t - base_t) / (n - base_n):19.1f}" if n != base_n else f"{'-':>19}"
        print(f"{n:>5} {t:>8.1f} {t / n:>10.1f} {inc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
