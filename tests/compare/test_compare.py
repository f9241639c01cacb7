"""``gpulab compare``: two runs of one arm, a driver change and a 6 % faster second run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.cli import main
from tests.report import synth


def _run(run_id: str, factor: float, driver: str, day: int, noise: float = 0.01) -> list[Any]:
    fp = synth.fingerprint("bm")
    fp["gpu"]["driver_version"] = driver
    recs = synth.reps("ironic-bm", "native", experiment="single_synthetic", model="resnet50",
                      ips=120.0 * factor, elapsed=60.0 / factor, fp=fp, noise=noise)  # fmt: skip
    for r in recs:
        r["run_id"] = run_id
        r["started_at"] = f"2026-11-{day:02d}T09:00:00+00:00"
    return recs


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "results" / "ironic-bm"
    synth.write(root / "a.jsonl", _run("run-a", 1.0, "535.104.05", 1))
    synth.write(root / "b.jsonl", _run("run-b", 1.06, "550.54.15", 8))
    synth.write(root / "c.jsonl", _run("run-c", 1.0, "535.104.05", 9, noise=0.0))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPULAB_RESULTS", raising=False)
    return tmp_path / "results"


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    assert main(["compare", *args, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["ok"] and got["command"] == "compare" and got["error"] is None
    return got["data"]


def test_two_runs_by_id(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got = _json(["run-a", "run-b"], capsys)
    assert got["fingerprint"] == [{"field": "NVIDIA driver", "a": "535.104.05", "b": "550.54.15"}]
    ips = next(g for g in got["groups"] if g["metric"] == "images_per_sec")
    assert ips["median_a"] == pytest.approx(120.0) and ips["ratio"] == pytest.approx(1.06)
    assert ips["significant"] and ips["ci95"][0] > 1.0
    assert "bootstrap" in got["method"]


def test_same_numbers_are_not_significant(results: Path, capsys) -> None:
    got = _json([str(results / "ironic-bm" / "a.jsonl"), "run-c"], capsys)
    ips = next(g for g in got["groups"] if g["metric"] == "images_per_sec")
    assert ips["ratio"] == pytest.approx(1.0) and not ips["significant"]
    assert got["fingerprint"] == []


def test_by_date_and_pooling(results: Path, capsys) -> None:
    assert main(["compare", "--since", "2026-11-05"]) == 2  # B holds runs b and c
    assert "not pooled" in capsys.readouterr().err
    got = _json(["--since", "2026-11-05", "--until", "2026-11-09", "--pool"], capsys)
    assert got["a"]["runs"] == ["run-a"] and got["b"]["runs"] == ["run-b"]


def test_bad_input_is_one_line_exit_2(results: Path, capsys) -> None:
    assert main(["compare", "run-a", "no-such-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpulab: error: run 'no-such-run': no records") and "\n" not in err
    assert main(["compare", "--since", "yesterday"]) == 2
    assert "is not a date" in capsys.readouterr().err


def test_report_refuses_to_pool_runs_unless_asked(results: Path, capsys) -> None:
    """What docs/report.md promises: one line naming the runs and --pool, exit 2."""
    assert main(["report", str(results / "ironic-bm"), "--out-dir", "o"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not pooled:" in err and "'run-a' and 'run-b'" in err and "--pool" in err
    assert len(err.splitlines()) == 1
