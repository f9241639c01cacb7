"""``gpulab run local`` end to end: the real runner with real TensorFlow, natively and in a
container on a real (private) dockerd; and the machine-without-Docker path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra.local_run import HOST_SITE, find_docker, render_dockerfile
from workloads.records import read_records

REPO = Path(__file__).resolve().parents[2]
MODELS = {"alexnet", "resnet50", "inception_v3", "mnist_cnn"}
TINY_SUITE = """name: tiny
experiments:
  - experiment: tiny-mnist
    model: mnist_cnn
    batch: 32
    warmup: 1
    steps: 2
    repeats: 1
"""


def file_state(path: Path) -> tuple[int, int, int] | None:
    """A file's inode, size and modification time in nanoseconds, or None when it is absent:
    equal before and after a run when the run left the file alone."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def gpulab(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="160", TERM="dumb")
    return subprocess.run(
        [sys.executable, "-m", "infra.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def only_run(results: Path) -> tuple[list[dict], dict]:
    (jsonl,) = results.glob("*.jsonl")
    (summary,) = results.glob("*.summary.json")
    assert summary.name == jsonl.name.replace(".jsonl", ".summary.json")
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    return records, json.loads(summary.read_text())


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.docker
def test_smoke_suite_native_and_docker_arms(dockerd, tmp_path: Path) -> None:
    containers_before = set(dockerd.docker("ps", "-aq").split())
    t0 = time.monotonic()
    r = gpulab(
        "run",
        "local",
        "--suite",
        "smoke",
        "--stack",
        "e2e",
        "--results-dir",
        str(tmp_path),
        "--docker-host",
        dockerd.host,
        "--base-image",
        dockerd.base_image,
        "--docker-python",
        "host",
    )
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    print(f"\n[run-local] smoke, native + docker arms: {took:.1f} s")

    records, summary = only_run(tmp_path / "e2e")
    by_arm = {arm: [x for x in records if x["arm"] == arm] for arm in ("native", "docker")}
    assert {x["model"] for x in by_arm["native"]} == MODELS
    assert {x["model"] for x in by_arm["docker"]} == MODELS
    assert len(records) == 8 and all(x["status"] == "ok" for x in records)
    assert all(x["images_per_sec"] > 0 for x in records)
    # The runner found itself in a container by itself; the arm label came from us.
    docker_fp = by_arm["docker"][0]["fingerprint"]
    assert docker_fp["container"]["dockerenv"] is True
    # --network=host (workloads/execenv.py): the container has the host's name, as on a lab.
    assert {x["host"] for x in by_arm["docker"]} == {x["host"] for x in by_arm["native"]}

    # The summary has the stack outputs' shape.
    assert set(summary) == {"topology", "lab", "hosts", "results"}
    assert summary["topology"] == "local" and summary["lab"] == "e2e"
    assert summary["hosts"][0]["gpu_path"] == "local"
    res = summary["results"]
    assert res["status"] == "ok" and res["arms"] == ["native", "docker"]
    assert res["counts"] == {"records": 8, "ok": 8, "failed": 0, "interrupted": 0}
    assert len(res["rows"]) == 8 and len(res["ratios"]) == 4
    assert all(
        row["images_per_sec_median"] > 0 and row["elapsed_s_median"] > 0 for row in res["rows"]
    )
    assert res["records"] == [str(next((tmp_path / "e2e").glob("*.jsonl")))]
    for arm in ("native", "docker"):
        assert list((tmp_path / "e2e").glob(f"*.{arm}.log"))
    # The final table shows both arms and every model.
    for word in ("native", "docker", *MODELS, "images/sec"):
        assert word in r.stdout, word
    # The run's report sits beside it: docker normalized to native, figures as PNGs.
    (report_dir,) = (tmp_path / "e2e").glob("*.report")
    html = (report_dir / "report.html").read_text()
    assert "local/native" in html and "local/docker" in html
    pngs = list((report_dir / "figures").glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert f"report:  {report_dir / 'report.html'}" in r.stdout.replace("\n", "")
    # No container is left behind.
    assert set(dockerd.docker("ps", "-aq").split()) <= containers_before


@pytest.mark.tf
def test_without_a_docker_engine_one_line_and_native_only(
    tmp_path: Path, own_runner_registry: Path
) -> None:
    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE)
    sock = tmp_path / "no-such.sock"
    r = gpulab(
        "run",
        "local",
        "--suite",
        str(suite),
        "--stack",
        "nodocker",
        "--results-dir",
        str(tmp_path / "res"),
        "--docker-host",
        f"unix://{sock}",
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    lines = [ln for ln in r.stdout.splitlines() if "Docker engine" in ln]
    assert lines == [
        f"gpulab: no Docker engine reachable at unix://{sock}: running the native arm only"
    ]
    records, summary = only_run(tmp_path / "res" / "nodocker")
    assert [x["arm"] for x in records] == ["native"]
    assert summary["results"]["arms"] == ["native"] and summary["results"]["ratios"] == []
    assert list((tmp_path / "res" / "nodocker").glob("*.report/report.html"))
    # its one runner was entered in the registry of $GPULAB_RUNTIME_DIR, and ended there
    assert [e["what"].split(":")[0] for e in registry_entries(own_runner_registry)] == ["native"]


def registry_entries(folder: Path) -> list[dict]:
    """The entries of a registry of runners (infra/runners.py), each checked to have ended."""
    entries = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    assert all(isinstance(e["ended"], float) and e["ended"] >= e["started"] for e in entries)
    return entries


def test_unknown_suite_is_one_line_exit_2(tmp_path: Path) -> None:
    r = gpulab(
        "run", "local", "--suite", "no-such-suite", "--no-docker", "--results-dir", str(tmp_path)
    )
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "no-such-suite" in r.stderr, r.stderr


def test_bad_docker_python_mode_is_one_line(tmp_path: Path) -> None:
    r = gpulab("run", "local", "--docker-python", "conda", "--results-dir", str(tmp_path))
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "'--docker-python'" in lines[0] and "'conda'" in lines[0], lines[0]


def test_no_docker_cli_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    engine, why = find_docker()
    assert engine is None and why == "no docker CLI on PATH"


def test_dockerfile_template_modes() -> None:
    host = render_dockerfile("debian:bookworm", "host")
    assert [ln for ln in host.splitlines() if ln.startswith("FROM")] == ["FROM debian:bookworm"]
    assert f"PYTHONPATH=/opt/gpulab:{HOST_SITE}" in host
    assert "COPY workloads /opt/gpulab/workloads" in host
    assert 'ENTRYPOINT ["python3", "-m", "workloads"]' in host
    image = render_dockerfile("tensorflow/tensorflow:2.21.0-gpu", "image", ["pynvml"])
    assert "PYTHONPATH=/opt/gpulab \\" in image or "PYTHONPATH=/opt/gpulab\n" in image
    assert HOST_SITE not in image
    assert "pip install --no-cache-dir pynvml" in image
    assert 'python3 -c "import yaml, pynvml" 2>/dev/null' in image  # runner deps only if missing
    assert "import yaml, pynvml" not in host


@pytest.mark.tf
@pytest.mark.docker
def test_docker_arm_that_cannot_build_is_one_line_and_keeps_native(dockerd, tmp_path: Path) -> None:
    """Image mode on a base without the runner's deps and no network: the build fails."""
    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE)
    before = set(dockerd.docker("ps", "-aq").split())
    r = gpulab(
        "run",
        "local",
        "--suite",
        str(suite),
        "--stack",
        "nobuild",
        "--results-dir",
        str(tmp_path / "res"),
        "--docker-host",
        dockerd.host,
        "--base-image",
        dockerd.base_image,
        "--docker-python",
        "image",
    )
    assert r.returncode == 1
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("gpulab: docker arm")]
    assert len(lines) == 1 and "docker build on gpulab-test-base:bookworm failed" in lines[0]
    records, summary = only_run(tmp_path / "res" / "nobuild")
    assert [x["arm"] for x in records] == ["native"] and records[0]["status"] == "ok"
    assert summary["results"]["status"] == "ok"
    assert set(dockerd.docker("ps", "-aq").split()) <= before  # --force-rm: none left


# --- the README's main command: `bash scripts/run-local.sh` runs the local first-run study ---

FIRST_RUN_SUITES = {
    "single.yaml": """name: fr-single
defaults: {warmup: 1, steps: 2, repeats: 1, claims: [closer2018/single_synthetic]}
experiments:
  - {experiment: single_synthetic, model: mnist_cnn, batch: 16}
""",
    "shared.yaml": """name: fr-shared
defaults: {scenario: shared, warmup: 1, steps: 3, repeats: 1, claims: [closer2018/shared]}
experiments:
  - experiment: shared
    model: mnist_cnn
    batch: 16
    options: {background_model: mnist_cnn, background_batch: 16, min_overlap: 0.5}
""",
    "sharing.yaml": """name: fr-sharing
defaults:
  scenario: sharing
  warmup: 1
  steps: 3
  repeats: 1
  # 0: this test is the flow; the overlap gate is tested in tests/catalogue/test_sharing.py.
  # 4 MNIST jobs of 3 steps on 2 cores that the other xdist worker also uses share the CPU
  # unevenly (one CI run measured an overlap below 0.3 with the jobs started together).
  options: {jobs: 4, min_overlap: 0.0}
  claims: [vmware_bitfusion_singularity/sharing_throughput]
experiments:
  - {experiment: sharing, model: mnist_cnn, batch: 16}
""",
}


def test_run_local_script_runs_the_first_run_study() -> None:
    script = (REPO / "scripts" / "run-local.sh").read_text().strip().splitlines()
    assert script[-1] == 'exec "$repo/.venv/bin/gpulab" study run local-first-run "$@"'
    from infra.study.model import load_study

    study = load_study("local-first-run")
    assert [(a.name, a.exec_env) for a in study.arms] == [
        ("native", "native"),
        ("docker", "docker"),
        ("shared", "native"),
        ("nway", "native"),
    ]


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.docker
def test_first_run_study_native_docker_shared_nway(dockerd, tmp_path: Path) -> None:
    """The built-in local-first-run study's arms, at the smallest sizes (its suites swapped for
    MNIST-sized ones in a copy of the study file), with a real private dockerd."""
    import yaml

    doc = yaml.safe_load((REPO / "studies" / "local-first-run.yaml").read_text())
    for name, text in FIRST_RUN_SUITES.items():
        (tmp_path / name).write_text(text)
    doc.update(repeats=1, suite="single.yaml")
    doc["arms"][2]["suite"], doc["arms"][3]["suite"] = "shared.yaml", "sharing.yaml"
    (tmp_path / "first.yaml").write_text(yaml.safe_dump(doc))
    t0 = time.monotonic()
    r = gpulab(
        "study",
        "run",
        str(tmp_path / "first.yaml"),
        "--results-dir",
        str(tmp_path / "res"),
        "--docker-host",
        dockerd.host,
        "--base-image",
        dockerd.base_image,
        "--docker-python",
        "host",
    )
    print(f"\n[run-local] first-run study, 4 arms at MNIST size: {time.monotonic() - t0:.1f} s")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = tmp_path / "res" / "study-local-first-run"
    j = json.loads((out / "study.json").read_text())
    assert {k: v["status"] for k, v in j["units"].items()} == {
        "native#1": "done",
        "docker#1": "done",
        "shared#1": "done",
        "nway#1": "done",
    }
    recs = [json.loads(ln) for f in (out / "units").glob("*.r1.jsonl") for ln in f.open()]
    assert {r["arm"] for r in recs} == {"native", "docker", "shared", "nway"}
    assert {r["scenario"] for r in recs} == {"single", "shared", "sharing"}
    rep = json.loads((out / "report" / "study.json").read_text())
    labels = {v["claim"]: v["label"] for v in rep["verdicts"]}
    assert set(labels.values()) == {"CPU"}
    # on a CPU: the measured ratios with their intervals, never a verdict word
    assert {v["verdict"] for v in rep["verdicts"]} <= {"method check", "not measured"}
    assert "method check" in {v["verdict"] for v in rep["verdicts"]}
    html = (out / "report" / "report.html").read_text()
    assert "local/docker" in html and "local/nway" in html
    assert "method" in r.stdout and "reproduced" not in r.stdout
    assert list((out / "report" / "figures").glob("*.png"))
    # the container's ratio to native is printed once both units of the repeat are done:
    # after the docker unit's line, before the shared arm starts
    err = r.stderr.splitlines()
    (ratio,) = [i for i, ln in enumerate(err) if ln.startswith("  docker/native images/sec")]
    assert err[ratio].startswith("  docker/native images/sec, repeat 1: mnist_cnn ")
    assert err[ratio].endswith("x")
    docker_done = next(i for i, ln in enumerate(err) if "done arm docker, repeat 1" in ln)
    shared_starts = next(i for i, ln in enumerate(err) if "arm shared, repeat 1/1" in ln)
    assert docker_done < ratio < shared_starts


@pytest.mark.slow
@pytest.mark.tf
def test_run_local_script_from_another_directory_writes_results_there(
    tmp_path: Path, own_runner_registry: Path
) -> None:
    """The README's main command as a user types it, from a directory other than the clone,
    with the built-in first-run study as shipped (no Docker engine: the docker arm is skipped
    with its reason, and the other arms run). Every interpreter it starts is counted (a
    sitecustomize on PYTHONPATH, which the runner passes on): the study starts one zygote,
    its one TensorFlow import, and every unit's runner forks every measuring process its
    suites plan from it (tests/lifecycle/first_run.py), within the first run's budget. Its first
    ratios are printed as the units giving them finish, before the final table."""
    from tests.lifecycle.first_run import (
        COUNTER_DIR,
        PROCESS_BUDGET,
        imports,
        measure_launches,
        planned,
        zygote_launches,
    )

    work = tmp_path / "work"
    work.mkdir()
    launches = tmp_path / "launches.log"
    env = dict(os.environ, COLUMNS="160", TERM="dumb", DOCKER_HOST="unix:///nonexistent.sock")
    env.pop("GPULAB_RESULTS", None)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(COUNTER_DIR), env.get("PYTHONPATH", "")) if p
    )
    env["GPULAB_TEST_LAUNCHES"] = str(launches)
    # The clone's own results (from a run the user made there before) must be left as they were:
    # compare the file's state before and after, never its mtime with another clock.
    clone_study = REPO / "results" / "study-local-first-run" / "study.json"
    clone_before = file_state(clone_study)
    t0 = time.monotonic()
    r = subprocess.run(
        ["bash", str(REPO / "scripts" / "run-local.sh")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    took = time.monotonic() - t0
    zygotes = zygote_launches(launches)
    print(f"\n[run-local] scripts/run-local.sh, no docker: {took:.1f} s, {len(zygotes)} zygotes")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = work / "results" / "study-local-first-run"
    units = json.loads((out / "study.json").read_text())["units"]
    statuses = {k: v["status"] for k, v in units.items()}
    assert statuses == {
        f"{arm}#{n}": "skipped" if arm == "docker" else "done"
        for arm in ("native", "docker", "shared", "nway")
        for n in (1, 2, 3)
    }
    # The docker arm is skipped with the reason, in the study's record and on stderr.
    reason = "no Docker engine reachable at unix:///nonexistent.sock"
    assert units["docker#1"] == {**units["docker#1"], "status": "skipped", "reason": reason}
    assert reason in r.stderr
    records = [json.loads(ln) for f in (out / "units").glob("*.jsonl") for ln in f.open()]
    assert records and all(x["status"] == "ok" for x in records)
    assert file_state(clone_study) == clone_before, "the run wrote into the clone's results/"
    # each unit's runner entered in $GPULAB_RUNTIME_DIR's registry (left in no other), and ended
    arms = sorted(e["what"].split(":")[0] for e in registry_entries(own_runner_registry))
    assert arms == sorted(["native", "shared", "nway"] * 3)
    # One zygote for the study's 9 units that ran (the docker arm's never started), and every
    # measuring process forked from it: none started its own interpreter
    assert len(zygotes) == 1
    assert measure_launches(launches) == []
    assert all(x["params"]["process_start"] == "fork" for x in records)
    assert sum(planned().values()) <= PROCESS_BUDGET
    # TensorFlow imported by the zygote alone, once a study (the shared and sharing
    # scenarios' own processes take their device and backend from their jobs' records)
    imported = imports(launches, "tensorflow")
    assert imported == {int(ln.split()[0]) for ln in zygotes}
    # and none of them imports what TensorFlow and Keras would take along unused
    # (workloads/lean_imports.py: JAX, matplotlib)
    assert not imported & (imports(launches, "jax") | imports(launches, "matplotlib"))
    # each record's fingerprint, put back by the reader (schema 3: once per file)
    for rec in read_records(sorted((out / "units").glob("*.jsonl"))):
        assert rec["params"]["device"]["used"] == "cpu", rec["scenario"]
        backend = rec["fingerprint"]["software"]["backend"]
        assert backend["keras_backend"] == "tensorflow", rec["scenario"]
        assert backend["tensorflow_build"]["is_cuda_build"] in ("True", "False"), backend
    # The first ratios come as the units giving them finish: the native arm's first repeat
    # has no pair (docker skipped), the shared and nway units show their own ratios at once.
    err = r.stderr.splitlines()
    first_nway = next(i for i, ln in enumerate(err) if ln.startswith("  nway (4 jobs), repeat 1:"))
    assert "aggregate throughput" in err[first_nway] and "completion time" in err[first_nway]
    assert any(ln.startswith("  shared, repeat 1: alexnet: images/sec lower by") for ln in err)
    over = [ln for ln in err if ln.startswith("  nway (4 jobs) over 3 repeats:")]
    assert len(over) == 1 and "[" in over[0]
    assert first_nway < next(i for i, ln in enumerate(err) if "[6/12]" in ln)
    # a CPU run: the table says so, and gives a method check with intervals over the 3 repeats,
    # never a verdict word
    verdicts = json.loads((out / "report" / "study.json").read_text())["verdicts"]
    assert {v["label"] for v in verdicts} == {"CPU"}
    by_claim = {v["claim"]: v for v in verdicts}
    sharing = by_claim["vmware_bitfusion_singularity/sharing_throughput"]
    assert sharing["verdict"] == "method check" and "n=3 units" in sharing["measured"]
    assert {v["verdict"] for v in verdicts} <= {"method check", "not measured"}
    assert "reproduced" not in r.stdout + r.stderr
