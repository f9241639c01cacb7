"""What Ansible's gpu_facts role read on a GPU host beside what the runner's records say of it.

    python benchmarks/gpu/facts_vs_fingerprint.py FACTS.json RECORDS.jsonl [RECORDS.jsonl ...]

FACTS.json is what ``benchmarks/gpu/gpu_facts.yml`` wrote (sysfs and procfs, through Ansible);
the records' fingerprint read the same host through NVML, cpuinfo, DMI and the container's marks.
Prints one row per fact (facts, fingerprint, agree) and exits 1 if any fact disagrees, 2 on bad
input. The virtualization row compares kinds only: the role reports the innermost layer Ansible
sees (a container inside a VM reads as the container), the fingerprint both layers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def pci(address: str | None) -> str:
    """NVML's ``00000000:00:06.0`` and sysfs's ``0000:00:06.0`` as one form (lower case)."""
    if not address:
        return ""
    domain, _, rest = address.lower().rpartition(":")
    domain, _, bus = domain.rpartition(":") if domain.count(":") else ("", "", domain)
    return f"{int(domain or '0', 16):04x}:{bus}:{rest}"


def rows(facts: dict[str, Any], fingerprint: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    gpu = fingerprint.get("gpu") or {}
    nvml = gpu.get("gpus") or []
    by_pci = {pci(g.get("pci_bus_id")): g for g in nvml}
    out: list[tuple[str, Any, Any]] = [
        ("GPU count", facts.get("gpu_count"), gpu.get("count")),
        ("driver version", facts.get("driver_version"), gpu.get("driver_version")),
    ]
    for g in facts.get("gpus") or []:
        addr = pci(g.get("pci"))
        seen = by_pci.get(addr) or {}
        out.append((f"{addr} seen by NVML", True, bool(seen)))
        out.append((f"{addr} NUMA node", g.get("numa_node"), seen.get("numa_node")))
    container = (fingerprint.get("container") or {}).get("runtime")
    vm = (fingerprint.get("vm") or {}).get("is_vm")
    virt = facts.get("virtualization") or "none"
    out.append(("virtualization", virt, container or ("vm" if vm else "none")))
    return out


def agree(fact: Any, seen: Any) -> bool:
    if isinstance(fact, str) and isinstance(seen, str):
        return fact.strip().lower() == seen.strip().lower()
    return bool(fact == seen)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    from workloads.records import read_records

    try:
        facts = json.loads(Path(argv[0]).read_text())
        records = read_records([Path(p) for p in argv[1:]])
    except (OSError, ValueError) as exc:
        print(f"facts_vs_fingerprint: error: {exc}", file=sys.stderr)
        return 2
    prints = [r.get("fingerprint") for r in records if (r.get("fingerprint") or {}).get("gpu")]
    if not prints:
        print("facts_vs_fingerprint: error: no record with a GPU fingerprint", file=sys.stderr)
        return 2
    table = rows(facts, prints[0])
    bad = 0
    print(f"{'fact':<34} {'gpu_facts (Ansible)':<22} {'fingerprint (NVML)':<22} agree")
    for name, fact, seen in table:
        ok = agree(fact, seen)
        bad += not ok
        print(f"{name:<34} {fact!s:<22} {seen!s:<22} {'yes' if ok else 'NO'}")
    print(f"{len(table) - bad}/{len(table)} agree ({len(records)} record(s) read)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
