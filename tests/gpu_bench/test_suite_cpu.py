"""The GPU suite's CPU path end to end (real TensorFlow, tiniest sizes), and its bad input.

Runs ``benchmarks/gpu/h100_suite.py --cpu-smoke`` on MNIST CNN batch 4 with the kernels part
(bf16 matmul peak + DeepBench LSTM/GRU) and checks the records it wrote (schema, fingerprint,
the runner/raw pair, ratio and MFU arithmetic, the claim ids), the report it fed them to, and
the table it printed last (its numbers must be the records' numbers).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from workloads.records import iter_records

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu" / "h100_suite.py"


def _run(*args: str, timeout: int = 240) -> subprocess.CompletedProcess[str]:
    env = {
        "COLUMNS": "200",
        "PATH": "/usr/bin:/bin",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "KERAS_BACKEND": "tensorflow",
        "HOME": str(Path.home()),
    }
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
        check=False,
    )


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("gpu-smoke")
    proc = _run(
        "--cpu-smoke",
        "--parts",
        "train,rnn",
        "--train",
        "mnist_cnn:4",
        "--precisions",
        "fp32",
        "--steps",
        "3",
        "--warmup",
        "1",
        "--out",
        str(out),
    )
    return proc, out


@pytest.mark.tf
@pytest.mark.slow
def test_cpu_smoke_exits_ok(smoke: tuple[subprocess.CompletedProcess, Path]) -> None:
    proc, _ = smoke
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.tf
@pytest.mark.slow
def test_records_schema_and_fingerprint(smoke: tuple[subprocess.CompletedProcess, Path]) -> None:
    _, out = smoke
    recs = list(iter_records(out / "records.jsonl", strict=True))
    by_exp = {(r["experiment"], r["scenario"]): r for r in recs}
    assert set(by_exp) == {
        ("peak-bf16-tensorflow", "kernel"),
        ("deepbench-rnn", "kernel"),
        ("train-fp32-tensorflow", "raw-loop"),
        ("train-fp32-tensorflow", "single"),
    }
    assert len({r["run_id"] for r in recs}) == 1
    for r in recs:
        assert r["status"] == "ok", r.get("error")
        fp = r["fingerprint"]
        assert {"host", "cpu", "vm", "container", "gpu", "software"} <= set(fp)
        assert fp["gpu"]["present"] is False  # this machine has no NVIDIA driver
        assert "virtualization_modes" in fp["gpu"] or fp["gpu"]["gpus"] == []
    rnn = by_exp[("deepbench-rnn", "kernel")]
    assert rnn["claims"] == ["ibm_containers/rnn"]
    ratio_keys = [k for k in rnn["metrics"] if k.endswith(".gru_over_lstm_time_ratio")]
    assert ratio_keys and all(rnn["metrics"][k] > 0 for k in ratio_keys)


@pytest.mark.tf
@pytest.mark.slow
def test_ratio_and_mfu_arithmetic(smoke: tuple[subprocess.CompletedProcess, Path]) -> None:
    _, out = smoke
    recs = {(r["experiment"], r["scenario"]): r for r in iter_records(out / "records.jsonl")}
    peak = recs[("peak-bf16-tensorflow", "kernel")]["metrics"]["gemm_bf16_256.tflops"]
    raw = recs[("train-fp32-tensorflow", "raw-loop")]
    run = recs[("train-fp32-tensorflow", "single")]
    assert peak > 0
    assert raw["model"] == run["model"] == "mnist_cnn" and raw["batch_size"] == 4
    assert raw["params"]["forward_macs_per_image"] == 11_992_448  # 2 convs + 2 dense, by hand
    assert run["params"]["variant"] == "runner-tensorflow"
    assert raw["params"]["variant"] == "raw-tensorflow"
    assert len(run["step_times_s"]) == 3
    m = run["metrics"]
    assert math.isclose(
        m["runner_over_raw_ratio"], run["images_per_sec"] / raw["images_per_sec"], rel_tol=1e-9
    )
    assert math.isclose(
        m["mfu"], 6 * 11_992_448 * run["images_per_sec"] / (peak * 1e12), rel_tol=1e-9
    )
    # the runner's own images/sec definition: batch x T / wall-clock of the timed loop
    assert math.isclose(run["images_per_sec"], 4 * 3 / m["timed_wall_s"], rel_tol=1e-9)


@pytest.mark.tf
@pytest.mark.slow
def test_report_built(smoke: tuple[subprocess.CompletedProcess, Path]) -> None:
    proc, out = smoke
    assert (out / "report" / "report.html").is_file(), proc.stdout[-1500:]
    assert "report: " in proc.stdout


@pytest.mark.tf
@pytest.mark.slow
def test_table_printed_last_with_record_numbers(
    smoke: tuple[subprocess.CompletedProcess, Path],
) -> None:
    proc, out = smoke
    recs = {(r["experiment"], r["scenario"]): r for r in iter_records(out / "records.jsonl")}
    run = recs[("train-fp32-tensorflow", "single")]
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert lines[-1].startswith("└"), lines[-3:]
    start = max(i for i, ln in enumerate(lines) if "runner vs raw framework loop" in ln)
    table = lines[start:]
    row = next(ln for ln in table if ln.startswith("│ mnist_cnn"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[:5] == ["mnist_cnn", "28", "4", "fp32", "tensorflow"]
    assert cells[5] == f"{run['images_per_sec']:.1f}"
    assert cells[7] == f"{run['metrics']['runner_over_raw_ratio']:.3f}"
    claims = next(i for i, ln in enumerate(lines) if "seed claims on one host" in ln)
    assert claims < start and any("GRU takes" in ln for ln in lines[claims:start])


@pytest.mark.tf
@pytest.mark.slow
def test_from_records_rebuilds_the_table(smoke: tuple[subprocess.CompletedProcess, Path]) -> None:
    _, out = smoke
    proc = _run("--from-records", str(out / "records.jsonl"), "--no-report", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "mnist_cnn" in proc.stdout.splitlines()[-2]


@pytest.mark.parametrize(
    "args, names",
    [
        (["--cpu-smoke", "--parts", "train,warp"], "'warp'"),
        (["--cpu-smoke", "--train", "vgg:32"], "'vgg:32'"),
        (["--cpu-smoke", "--train", "resnet50:0"], "'resnet50:0'"),
        (["--cpu-smoke", "--precisions", "fp8"], "'fp8'"),
        (["--cpu-smoke", "--backends", "mxnet"], "'mxnet'"),
        (["--cpu-smoke", "--repeats", "0"], "--repeats"),
        (["--cpu-smoke", "--max-minutes", "-1"], "--max-minutes"),
        (["--cpu-smoke", "--gpu-path", "moon"], "'moon'"),
        (["--cpu-smoke", "--exec-env", "lxc"], "'lxc'"),
    ],
)
def test_bad_input_one_line_exit_2(args: list[str], names: str, tmp_path: Path) -> None:
    proc = _run(*args, "--out", str(tmp_path / "o"), timeout=60)
    assert proc.returncode == 2
    err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and names in err[0], proc.stderr
    assert not (tmp_path / "o" / "records.jsonl").exists()


@pytest.mark.tf
@pytest.mark.slow
def test_records_state_their_setting(smoke: tuple[subprocess.CompletedProcess, Path]) -> None:
    """The suite states where it ran (default: this machine, native, as bare metal) and the
    fingerprint cross-check flags what it sees otherwise (this test machine is a KVM VM)."""
    _, out = smoke
    for r in iter_records(out / "records.jsonl", strict=True):
        assert (r["gpu_path"], r["exec_env"], r["virtualization"], r["sharing"]) == (
            "local",
            "native",
            "none",
            "exclusive",
        )
        flags = " ".join(r["setting_flags"])
        if r["fingerprint"]["vm"].get("is_vm"):
            assert "bare metal" in flags and "hypervisor" in flags, flags
        else:
            assert "hypervisor" not in flags


@pytest.mark.tf
@pytest.mark.slow
def test_from_records_of_two_runs_pools_only_when_asked(
    smoke: tuple[subprocess.CompletedProcess, Path], tmp_path: Path
) -> None:
    """Two calls of the suite are two runs: the report refuses to pool them silently and
    builds one report with --pool (the second run here is the first with other run and record
    ids: the loader drops a record id it has already read)."""
    _, out = smoke
    first = out / "records.jsonl"
    second = tmp_path / "second.jsonl"
    second.write_text(
        "".join(
            json.dumps(
                {**json.loads(ln), "run_id": "20261126T000000Z-second", "record_id": f"second{i}"}
            )
            + "\n"
            for i, ln in enumerate(first.read_text().splitlines())
        )
    )
    refused = _run("--from-records", str(first), str(second), "--out", str(tmp_path / "a"))
    assert refused.returncode == 0, refused.stderr
    assert "report: not built" in refused.stdout and "--pool" in refused.stdout
    assert not (tmp_path / "a" / "report" / "report.html").exists()
    pooled = _run("--from-records", str(first), str(second), "--pool", "--out", str(tmp_path / "b"))
    assert pooled.returncode == 0, pooled.stderr
    assert (tmp_path / "b" / "report" / "report.html").exists(), pooled.stdout[-1500:]


@pytest.mark.tf
@pytest.mark.slow
def test_records_file_is_jsonl(smoke: tuple[subprocess.CompletedProcess, Path]) -> None:
    _, out = smoke
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(ln)["schema_version"] == 3 for ln in lines)


def test_max_minutes_guard_starts_nothing_late(tmp_path: Path) -> None:
    """--max-minutes 0: every measurement is past the deadline, listed as skipped, none run."""
    proc = _run(
        "--cpu-smoke",
        "--parts",
        "train,mnist",
        "--max-minutes",
        "0",
        "--no-report",
        "--out",
        str(tmp_path),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--max-minutes reached: skipped kernels (tensorflow)" in proc.stdout
    assert "mnist" in proc.stdout.split("skipped", 1)[1]
    assert (tmp_path / "records.jsonl").read_text() == ""
