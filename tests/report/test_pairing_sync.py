"""Two arms are compared only when their timed loops synchronized the host the same way:
``auto`` with ``auto`` (whatever K each run chose: every block lasts at least a second), or
the same K; a per-step sync (tf_cnn) against blocks is refused, naming the field. Both report
engines (the DuckDB scan and the Python reader) apply the rule."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from report.build import build_report
from report.mapping import sync_policy
from tests.report import synth
from workloads.errors import InputError

ARMS = (("ironic-bm", "native", 1.0), ("nova-pci", "native", 0.97))


def _records(sync: dict[str, tuple[int, str]]) -> list[dict[str, Any]]:
    """Both arms' repetitions; ``sync`` maps a topology to its (K, sync_mode)."""
    recs = []
    for topo, arm, f in ARMS:
        recs += synth.reps(
            topo, arm, experiment="single_synthetic", model="resnet50", ips=100.0 * f,
            params={"backend": "tensorflow", "image_size": 224},
        )  # fmt: skip
    recs = [copy.deepcopy(r) for r in recs]
    for r in recs:
        k, mode = sync[r["topology"]]
        r["sync_every"] = k
        r["params"]["timing"] = {"sync_every": k, "sync_mode": mode}
    return recs


def test_sync_policy_of_a_record() -> None:
    assert sync_policy({"sync_every": 91, "params": {"timing": {"sync_mode": "auto"}}}) == "auto"
    assert sync_policy({"sync_every": 1, "params": {"timing": {"sync_mode": "tf_cnn"}}}) == 1
    assert sync_policy({"sync_every": 50, "params": {"timing": {"sync_mode": "fixed"}}}) == 50
    assert sync_policy({"sync_every": 8}) == 8  # a composite record without params.timing
    assert sync_policy({"params": {}}) is None  # records from before the field: not compared


@pytest.mark.parametrize("engine", ["duckdb", "python"])
def test_auto_arms_pair_whatever_k_each_chose(tmp_path: Path, engine: str) -> None:
    recs = _records({"ironic-bm": (91, "auto"), "nova-pci": (87, "auto")})
    path = synth.write(tmp_path / "r.jsonl", recs)
    result = build_report([path], tmp_path / "out", engine=engine, embed_figures=False)
    assert result is not None


@pytest.mark.parametrize("engine", ["duckdb", "python"])
def test_a_per_step_sync_arm_against_blocks_is_refused(tmp_path: Path, engine: str) -> None:
    recs = _records({"ironic-bm": (91, "auto"), "nova-pci": (1, "tf_cnn")})
    path = synth.write(tmp_path / "r.jsonl", recs)
    with pytest.raises(InputError) as err:
        build_report([path], tmp_path / "out", engine=engine, embed_figures=False)
    msg = str(err.value)
    assert "not paired" in msg and "sync every differs" in msg
    assert "1" in msg and "'auto'" in msg
