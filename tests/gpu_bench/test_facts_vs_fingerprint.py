"""benchmarks/gpu/facts_vs_fingerprint.py: gpu_facts' JSON beside the records' fingerprint, run
as a user runs it (a process, its output and exit code)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from workloads.records import make_record

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu" / "facts_vs_fingerprint.py"

FACTS = {
    "gpu_count": 1,
    "gpus": [{"pci": "0000:00:06.0", "numa_node": None, "device_id": "2335", "class": "0302"}],
    "driver_version": "580.159.04",
    "virtualization": "docker",
}
FINGERPRINT = {
    "gpu": {
        "count": 1,
        "driver_version": "580.159.04",
        "gpus": [{"pci_bus_id": "00000000:00:06.0", "numa_node": None, "name": "NVIDIA H200"}],
    },
    "container": {"runtime": "docker"},
    "vm": {"is_vm": True},
}


def _run(tmp_path: Path, facts: dict, fingerprint: dict | None) -> subprocess.CompletedProcess:
    (tmp_path / "facts.json").write_text(json.dumps(facts))
    rec = make_record(run_id="r1", suite="gpu-h100", experiment="peak", model="none")
    if fingerprint is not None:
        rec["fingerprint"] = fingerprint
    (tmp_path / "records.jsonl").write_text(json.dumps(rec) + "\n")
    return subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(tmp_path / "facts.json"),
            str(tmp_path / "records.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_facts_and_fingerprint_agree(tmp_path: Path) -> None:
    res = _run(tmp_path, FACTS, FINGERPRINT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0000:00:06.0 seen by NVML" in res.stdout
    assert "5/5 agree" in res.stdout


def test_a_different_driver_and_an_unseen_gpu_are_named(tmp_path: Path) -> None:
    facts = {**FACTS, "driver_version": "550.54.15"}
    facts["gpus"] = [*FACTS["gpus"], {"pci": "0000:00:07.0", "numa_node": 0}]
    res = _run(tmp_path, facts, FINGERPRINT)
    assert res.returncode == 1
    lines = {line.split("  ")[0]: line for line in res.stdout.splitlines()}
    assert lines["driver version"].rstrip().endswith("NO")
    assert lines["0000:00:07.0 seen by NVML"].rstrip().endswith("NO")
    assert lines["0000:00:06.0 seen by NVML"].rstrip().endswith("yes")


def test_records_without_a_gpu_fingerprint_are_bad_input(tmp_path: Path) -> None:
    res = _run(tmp_path, FACTS, None)
    assert res.returncode == 2
    assert "no record with a GPU fingerprint" in res.stderr
