"""NVML throttle counters around every scenario's timed window, and the report's exclusion of
a throttled record of every kind. NVIDIA hardware cannot run here: the GPU is a fake
``pynvml`` (tests/workloads/fake_nvml/pynvml.py) whose counters grow while "throttled" and
which logs every read; the scenarios and the report are the real ones."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from report.exclusions import split, throttle_bits
from workloads.fingerprint.throttle import CounterWindow, merge_windows, window_mask
from workloads.records import RecordWriter, make_record
from workloads.scenarios import Job

FAKE_DIR = Path(__file__).resolve().parent / "fake_nvml"


def _fake_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pynvml", FAKE_DIR / "pynvml.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The fake NVML in this process and in every child (PYTHONPATH), thermally throttled;
    returns the read log."""
    log = tmp_path / "nvml-reads.jsonl"
    monkeypatch.setenv("FAKE_NVML_LOG", str(log))
    monkeypatch.setenv("FAKE_NVML_THROTTLE", "thermal,hw_thermal_slowdown")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(FAKE_DIR), os.environ.get("PYTHONPATH", "")])
    )
    monkeypatch.setitem(sys.modules, "pynvml", _fake_module())
    return log


def _reads(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _record(fields: dict[str, Any], scenario: str, model: str) -> dict[str, Any]:
    return make_record(
        run_id="r", suite="t", experiment=scenario, model=model, scenario=scenario, **fields
    )


# -- the window itself, on a module double ------------------------------------------------


class _Board:
    """A module double of pynvml for one GPU with counters set by hand."""

    def __init__(self) -> None:
        self.counters = {p: 100 for p in range(6)} | {10: 100, 11: 100}
        self.fields = {269: 7, 270: 7, 271: 7}
        self.reasons = 0

    def nvmlInit(self) -> None: ...

    def nvmlShutdown(self) -> None: ...

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return "gpu0"

    def nvmlDeviceGetViolationStatus(self, h: str, policy: int) -> Any:
        return SimpleNamespace(referenceTime=0, violationTime=self.counters[policy])

    def nvmlDeviceGetFieldValues(self, h: str, ids: list[int]) -> list[Any]:
        return [
            SimpleNamespace(fieldId=i, nvmlReturn=0, value=SimpleNamespace(ullVal=self.fields[i]))
            for i in ids
        ]

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: str) -> int:
        return self.reasons


def test_counters_that_grow_inside_the_window_set_their_reason_bits() -> None:
    board = _Board()
    window = CounterWindow(nvml=board)
    with window:
        board.counters[1] += 2_000_000  # 2 ms of thermal violation
        board.fields[271] += 1  # a power brake
        board.counters[2] += 5  # sync boost: recorded, not a throttle
    got = window.result()
    assert got["present"] is True and got["gpus"][0]["violation_ns"]["thermal"] == 2_000_000
    assert got["gpus"][0]["violation_ns"]["power"] == 0
    assert got["throttle_mask"] == 0x20 | 0x80 | 0x10
    assert set(got["reasons"]) == {"sw_thermal_slowdown", "hw_power_brake_slowdown", "sync_boost"}
    rec = {"status": "ok", "record_id": "x", "params": {"nvml_window": got}}
    assert throttle_bits(rec) == got["throttle_mask"]


def test_a_quiet_window_is_no_throttle_and_a_power_cap_is_only_listed() -> None:
    board = _Board()
    quiet = CounterWindow(nvml=board)
    with quiet:
        pass
    assert quiet.result()["throttle_mask"] == 0
    capped = CounterWindow(nvml=board)
    with capped:
        board.counters[0] += 10
    kept, excluded, power_capped = split(
        [
            {"status": "ok", "record_id": "q", "params": {"nvml_window": quiet.result()}},
            {"status": "ok", "record_id": "c", "params": {"nvml_window": capped.result()}},
        ]
    )
    assert [r["record_id"] for r in kept] == ["q", "c"] and not excluded
    assert [r["record_id"] for r in power_capped] == ["c"]


def test_reasons_set_at_either_end_count_and_no_driver_is_recorded() -> None:
    assert window_mask({}, 0x40, 0) == 0x40 and window_mask({"thermal": 0}, None, None) == 0
    board = _Board()
    board.reasons = 0x8
    w = CounterWindow(nvml=board)
    with w:
        pass
    assert w.result()["throttle_mask"] == 0x8

    class NoDriver:
        def nvmlInit(self) -> None:
            raise RuntimeError("NVML Shared Library Not Found")

    none = CounterWindow(nvml=NoDriver())
    with none:
        pass
    assert none.result() == {
        "present": False,
        "reason": "no NVIDIA driver: RuntimeError: NVML Shared Library Not Found",
        "throttle_mask": 0,
    }


def test_merged_windows_throttle_when_any_part_does() -> None:
    merged = merge_windows(
        {
            "single": {"present": True, "throttle_mask": 0},
            "job1": {"present": True, "throttle_mask": 0x40},
            "job0": None,
        }
    )
    assert merged["throttle_mask"] == 0x40 and merged["present"] is True
    assert set(merged["parts"]) == {"single", "job1"}
    absent = merge_windows({"a": {"present": False, "reason": "no GPU", "throttle_mask": 0}})
    assert absent["present"] is False and absent["reason"] == "no GPU"


def test_window_mask_of_a_bool_or_a_float_is_not_a_reading() -> None:
    for bad in (True, 8.0, "8"):
        rec = {"status": "ok", "record_id": "b", "params": {"nvml_window": {"throttle_mask": bad}}}
        assert throttle_bits(rec) == 0


def _kinds(tmp: Path) -> list[dict[str, Any]]:
    """One record of each kind (and the composite scenarios) with a throttled window, one
    with a clean window, and one whose sample list needs the Python decoder beside a
    throttled window (the scan ORs both)."""
    hot = {"present": True, "throttle_mask": 0x40 | 0x1, "gpus": []}
    cool = {"present": True, "throttle_mask": 0x1, "gpus": []}
    made = []
    for i, (kind, scenario) in enumerate(
        [("training", "single"), ("kernel", "kernel"), ("job", "mnist_epochs"),
         ("training", "sharing"), ("training", "shared"), ("training", "distributed")]
    ):  # fmt: skip
        made.append(
            make_record(
                run_id="r", suite="t", experiment=f"e{i}", model="m", scenario=scenario,
                kind=kind, images_per_sec=1.0, params={"nvml_window": hot}, sync_every=4,
                timed_s=1.5, startup_s=2.0, first_step_s=0.5, block_times_s=[0.75, 0.75],
            )
        )  # fmt: skip
    made.append(
        make_record(
            run_id="r", suite="t", experiment="clean", model="m", scenario="single",
            images_per_sec=1.0, params={"nvml_window": cool},
        )
    )  # fmt: skip
    made.append(
        make_record(
            run_id="r", suite="t", experiment="mixed", model="m", scenario="single",
            images_per_sec=1.0,
            params={"nvml_window": hot, "nvml_samples": [{"throttle_reasons": ["gpu_idle"]}]},
        )
    )  # fmt: skip
    return made


def test_report_leaves_out_a_throttled_window_of_every_kind_on_both_readers(
    tmp_path: Path,
) -> None:
    from report.export import to_parquet
    from report.scan import scan

    made = _kinds(tmp_path)
    throttled = sorted(r["record_id"] for r in made if r["experiment"] != "clean")
    kept, excluded, _ = split(made)
    assert [r["experiment"] for r in kept] == ["clean"]
    assert sorted(e.record_id for e in excluded) == throttled
    assert {e.detail for e in excluded} == {"hw_thermal_slowdown"}
    jsonl = tmp_path / "r.jsonl"
    with RecordWriter(jsonl) as w:
        for rec in made:
            w.write(rec)
    parquet = tmp_path / "p" / "r.parquet"
    parquet.parent.mkdir()
    to_parquet(made, parquet)
    for source in (jsonl, parquet):
        scanned = scan([source])
        assert scanned.kept == 1, source
        assert sorted(e.record_id for e in scanned.excluded) == throttled, source
        assert {e.reason for e in scanned.excluded} == {"throttled"}


# -- every scenario, with the fake GPU -----------------------------------------------------


def _job(scenario: str, model: str = "mnist_cnn", **kw: Any) -> Job:
    fields: dict[str, Any] = {
        "suite": "t",
        "experiment": scenario,
        "model": model,
        "scenario": scenario,
        "batch": 16,
        "steps": 4,
        "warmup": 2,
        "timeout_s": 300,
        "sync_every": 2,
    }
    fields.update(kw)
    return Job(**fields)


def _assert_read_around(log: Path, fields: dict[str, Any], window: tuple[float, float]) -> None:
    """Counter reads before the window's start and after its end, none inside it."""
    reads = [r["t"] for r in _reads(log) if r["what"] == "violation"]
    start, end = window
    assert any(t <= start for t in reads), (reads, window)
    assert any(t >= end for t in reads), (reads, window)
    assert not any(start < t < end for t in reads), (reads, window)
    assert fields["params"]["nvml_window"]["present"] is True


@pytest.mark.tf
def test_fake_nvml_single_reads_counters_around_its_timed_window(fake_gpu: Path) -> None:
    from workloads.scenarios import single

    job = _job("single")
    fields = single.run(job)
    assert fields.get("status", "ok") == "ok", fields.get("error")
    w = fields["params"]["timed_window_unix"]
    _assert_read_around(fake_gpu, fields, (w[0], w[1]))
    window = fields["params"]["nvml_window"]
    assert window["gpus"][0]["violation_ns"]["thermal"] > 0
    assert window["throttle_mask"] & 0x40 and window["throttle_mask"] & 0x20
    assert fields["timed_s"] == pytest.approx(w[1] - w[0], abs=0.05)


@pytest.mark.tf
def test_fake_nvml_fathom_mnist_and_kernel_records_are_excluded_as_throttled(
    fake_gpu: Path,
) -> None:
    from workloads import fathom, kernels
    from workloads.scenarios import mnist_epochs

    made = {
        "fathom": _record(
            fathom.run(_job("fathom", "autoenc", options={"size": "tiny"})), "fathom", "autoenc"
        ),
        "mnist_epochs": _record(
            mnist_epochs.run(_job("mnist_epochs", options={"epochs": 2, "limit": 64})),
            "mnist_epochs",
            "mnist_cnn",
        ),
        "kernel": _record(
            kernels.run(_job("kernel", "gemm", options={"iterations": "steps"})), "kernel", "gemm"
        ),
    }
    assert {r["kind"] for r in made.values()} == {"training", "job", "kernel"}
    for rec in made.values():
        assert rec["status"] == "ok", rec.get("error")
        assert rec["params"]["nvml_window"]["gpus"][0]["violation_ns"]["hw_thermal_slowdown"] > 0
    kept, excluded, _ = split(list(made.values()))
    assert kept == [] and [e.reason for e in excluded] == ["throttled"] * 3
    assert all("hw_thermal_slowdown" in e.detail for e in excluded)
    # reads bracket the work of each: 3 windows, each a read before and a read after
    assert len([r for r in _reads(fake_gpu) if r["what"] == "reasons"]) == 2 * 3


@pytest.mark.tf
@pytest.mark.slow
def test_fake_nvml_multi_process_scenarios_carry_every_instances_window_and_are_excluded(
    fake_gpu: Path, tmp_path: Path
) -> None:
    """sharing, shared and distributed run their instances in child processes: each child
    reads the (fake) counters around its own timed window and the record ORs them; the
    report (the DuckDB scan and the Python reader alike) leaves every one out as throttled."""
    from report.scan import scan
    from workloads.scenarios import distributed, shared, sharing

    made = {
        "sharing": _record(sharing.run(_job("sharing", options={"jobs": 2, "min_overlap": 0.0})),
                           "sharing", "mnist_cnn"),
        "shared": _record(
            shared.run(
                _job("shared", options={"background_model": "mnist_cnn", "background_batch": 16,
                                        "min_overlap": 0.0})
            ),
            "shared",
            "mnist_cnn",
        ),
        "distributed": _record(
            distributed.run(
                _job("distributed", options={"mode": "allreduce", "workers": 2, "deadline_s": 240})
            ),
            "distributed",
            "mnist_cnn",
        ),
    }  # fmt: skip
    for name, rec in made.items():
        assert rec["status"] == "ok", (name, rec.get("error"))
        window = rec["params"]["nvml_window"]
        assert window["present"] is True and window["throttle_mask"] & 0x40, (name, window)
    assert set(made["sharing"]["params"]["nvml_window"]["parts"]) == {"single", "job0", "job1"}
    assert set(made["shared"]["params"]["nvml_window"]["parts"]) == {"alone", "shared"}
    assert set(made["distributed"]["params"]["nvml_window"]["parts"]) == {"worker:0", "worker:1"}
    # every child read the counters: the baseline + 2 jobs, alone + shared + background (its
    # warm-up ends; its window never closes), 2 workers: before and after each window
    pids = {r["pid"] for r in _reads(fake_gpu) if r["what"] == "violation"}
    assert len(pids) >= 3 + 2 + 2
    kept, excluded, _ = split(list(made.values()))
    assert kept == [] and {e.reason for e in excluded} == {"throttled"}
    out = tmp_path / "records.jsonl"
    with RecordWriter(out) as w:
        for rec in made.values():
            w.write(rec)
    scanned = scan([out])
    assert scanned.kept == 0
    assert sorted(e.record_id for e in scanned.excluded) == sorted(
        r["record_id"] for r in made.values()
    )
    assert {e.reason for e in scanned.excluded} == {"throttled"}
