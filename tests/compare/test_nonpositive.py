"""`gpulab compare` where a side holds a value that is zero or negative: the ratio of the medians
without an interval (a resample of A whose median is 0 has no ratio; it raised a
``ValueError`` and the command ended in a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.cli import main
from tests.report import synth


def _run(path: Path, run: str, values: list[float]) -> Path:
    recs = synth.reps("ironic-bm", "native", experiment="single_synthetic", model="resnet50",
                      ips=100.0, repeats=len(values))  # fmt: skip
    for r, v in zip(recs, values, strict=True):
        r["run_id"] = run
        r["images_per_sec"] = v
    return synth.write(path, recs)


@pytest.mark.parametrize("zero_side", ["a", "b"])
def test_a_zero_repetition_gives_the_ratio_without_an_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], zero_side: str
) -> None:
    with_zero, positive = [0.0, 100.0, 100.0], [101.0, 99.0, 100.0]
    a = _run(tmp_path / "a.jsonl", "a", with_zero if zero_side == "a" else positive)
    b = _run(tmp_path / "b.jsonl", "b", positive if zero_side == "a" else with_zero)
    assert main(["compare", str(a), str(b), "--json"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    (change,) = [c for c in json.loads(out)["data"]["groups"] if c["metric"] == "images_per_sec"]
    assert change["ratio"] == pytest.approx(1.0)
    assert change["ci95"] is None and change["significant"] is False
    assert change["note"] == "values not all positive: no interval"


def test_positive_values_keep_their_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _run(tmp_path / "a.jsonl", "a", [100.0, 101.0, 99.0])
    b = _run(tmp_path / "b.jsonl", "b", [120.0, 121.0, 119.0])
    assert main(["compare", str(a), str(b), "--json"]) == 0
    changes = json.loads(capsys.readouterr()[0])["data"]["groups"]
    (change,) = [c for c in changes if c["metric"] == "images_per_sec"]
    lo, hi = change["ci95"]
    assert change["ratio"] == pytest.approx(1.2)
    assert 1.0 < lo <= change["ratio"] <= hi and change["significant"] is True
