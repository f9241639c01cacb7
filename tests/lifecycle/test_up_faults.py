"""`gpulab up|measure|outputs` when a step fails or the user interrupts, with the Pulumi
engine DOUBLED.

The Pulumi CLI and engine cannot run here, so the Automation API is the double of
``test_automation_double.py`` (same SDK result, error and event types). What the engine would
hand back is made by the real code on our side of it: the workload run's provider
(``WorkloadRunProvider.create``, with Ansible doubled by a failed ``PlaybookResult`` after one
host's records were fetched) writes the partial run to disk and raises, and the SDK's own
provider-host wrapper (``pulumi.dynamic.__main__._abort_with_traceback``) turns that into the
gRPC details the engine reports as the resource's ``error`` diagnostic: a Python traceback
ending in the provider's exception line. Signals are real (``os.kill`` on this process and on
a child standing in for the Pulumi CLI).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pulumi.automation import CommandError, CommandResult
from pulumi.automation.events import DiagnosticEvent, EngineEvent

from infra.ansible.runner import (
    PlaybookError,
    PlaybookResult,
    TaskFailure,
    _explain_sudo,
)
from infra.automation import Lab, LabError, LabInterrupted
from infra.lab_faults import InterruptGuard, failure_line, provider_message
from tests.lifecycle.test_automation_double import AutoDouble, engine_error
from workloads.records import make_record

REPO = Path(__file__).resolve().parents[2]
STACK = "local"
URN = "urn:pulumi:local::gpulab::pulumi-python:dynamic/gpulab:WorkloadRun::local-workloads-native"
SITE_URN = "urn:pulumi:local::gpulab::pulumi-python:dynamic/gpulab:AnsibleRun::local-site"
STACK_URN = "urn:pulumi:local::gpulab::pulumi:pulumi:Stack::gpulab-local"
RUN_TASK = "Run the workloads"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the project, also the working directory: results go to ./results/<stack>."""
    for name in ("Pulumi.yaml", f"Pulumi.{STACK}.yaml"):
        shutil.copy(REPO / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPULAB_RESULTS", raising=False)
    return tmp_path


def abort_details(exc: BaseException) -> str:
    """What the engine receives when a provider method raises ``exc``: the SDK provider host
    (``pulumi.dynamic.__main__._abort_with_traceback``, not imported here: importing that module
    starts nothing we can stop) aborts the gRPC call with ``traceback.format_exc()``."""
    import traceback

    def create() -> None:
        raise exc

    try:
        create()
    except Exception:
        return traceback.format_exc()
    raise AssertionError("not raised")


def failed_play(failures: list[TaskFailure], hosts: tuple[str, ...]) -> PlaybookResult:
    return PlaybookResult(
        playbook="workloads.yml" if RUN_TASK in failures[0].task else "site.yml",
        status="failed",
        rc=2,
        failures=failures,
    )


def run_workloads_failing_on_gpu1(
    results: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, Path]:
    """The real WorkloadRun create with Ansible DOUBLED: gpu-0's records were fetched, gpu-1's
    runner crashed. Returns the provider host's abort details and the run directory."""
    from infra.dynamic import ansible_run
    from infra.dynamic.workload_run import WorkloadRunError, WorkloadRunProvider

    def play(
        _playbook: str, _hosts: Any, extravars: dict[str, Any], secrets: Any = None
    ) -> tuple[Any, Any]:
        assert not secrets  # no workload secret in this lab
        fetch = Path(extravars["workload_run_fetch_dir"])
        rec = make_record(
            run_id=extravars["workload_run_id"],
            suite="smoke",
            experiment="smoke-alexnet",
            model="alexnet",
            arm="native",
            host="gpu-0",
            batch_size=16,
            images_per_sec=86.0,
            elapsed_s=4.3,
        )
        (fetch / "gpu-0").mkdir(parents=True)
        (fetch / "gpu-0" / "records.jsonl").write_text(json.dumps(rec) + "\n")
        fail = TaskFailure("gpu-1", RUN_TASK, "non-zero return code (runner exited 1)")
        return failed_play([fail], ("gpu-0", "gpu-1")), {}

    monkeypatch.setattr(ansible_run, "play_in_fresh_process", play)
    monkeypatch.setenv("GPULAB_RESULTS", str(results.parent))  # what `gpulab up` gives the engine
    local = {"address": "127.0.0.1", "vars": {"ansible_connection": "local"}}
    props = {
        "hosts": [{"name": "gpu-0", **local}, {"name": "gpu-1", **local}],
        "suite": "smoke",
        "execution_env": "native",
        "lab": "a-lab",
        "stack": STACK,
    }
    with pytest.raises(WorkloadRunError) as err:
        WorkloadRunProvider().create(props)
    (run_dir,) = [d for d in results.iterdir() if d.is_dir()]
    return abort_details(err.value), run_dir


def diagnostic(message: str, urn: str) -> EngineEvent:
    return EngineEvent(
        sequence=1,
        timestamp=int(time.time()),
        diagnostic_event=DiagnosticEvent(message=message, color="never", severity="error", urn=urn),
    )


def test_provider_traceback_becomes_one_line_naming_host_and_task() -> None:
    fail = TaskFailure("gpu-1", RUN_TASK, "non-zero return code (runner exited 1)")
    details = abort_details(PlaybookError(failed_play([fail], ("gpu-1",))))
    assert details.startswith("Traceback (most recent call last):")
    assert details.rstrip().splitlines()[-1] == (
        "infra.ansible.runner.PlaybookError: workloads.yml: host 'gpu-1' failed at task "
        "'Run the workloads': non-zero return code (runner exited 1)"
    )
    expect = (
        "WorkloadRun local-workloads-native: workloads.yml: host 'gpu-1' failed at task "
        "'Run the workloads': non-zero return code (runner exited 1)"
    )
    from infra.lab_faults import Diagnostic

    # as the event carries it, and as the engine's display indents it under "Diagnostics:"
    for message in (details, "error: " + details, "    ".join(["", *details.splitlines(True)])):
        assert failure_line([Diagnostic(message, URN)], "error: update failed") == expect
    # the stack's own "update failed" diagnostic names nothing: the resource's wins
    stack_diag = Diagnostic("update failed", STACK_URN)
    assert failure_line([stack_diag, Diagnostic(details, URN)], "x") == expect
    assert provider_message("error: Exception calling application: boom\n") is None


@pytest.mark.parametrize(
    ("failure", "expect"),
    [
        (
            TaskFailure(
                "gpu-1",
                "Gathering Facts",
                "Failed to connect to the host via ssh: ssh: connect to host 192.0.2.7 port 22: "
                "Connection timed out",
                unreachable=True,
            ),
            "AnsibleRun local-site: site.yml: host 'gpu-1' unreachable at task 'Gathering "
            "Facts': Failed to connect to the host via ssh: ssh: connect to host 192.0.2.7 "
            "port 22: Connection timed out",
        ),
        (
            TaskFailure("gpu-1", "Gathering Facts", "Missing sudo password"),
            "AnsibleRun local-site: site.yml: host 'gpu-1' failed at task 'Gathering Facts': "
            "sudo as user 'ubuntu' needs a password (Missing sudo password); give 'ubuntu' "
            "passwordless sudo (NOPASSWD), as cloud images do, or log in as a user that has it",
        ),
    ],
    ids=["unreachable", "sudo-password"],
)
def test_site_run_faults_end_up_with_one_line(
    project: Path, capsys: pytest.CaptureFixture[str], failure: TaskFailure, expect: str
) -> None:
    """`gpulab up` through the CLI: exit 1, one stderr line naming the host and the step."""
    from infra.cli import lifecycle, main

    failures = [failure]
    _explain_sudo(failures, {"all": {"hosts": {"gpu-1": {"ansible_user": "ubuntu"}}}})
    details = abort_details(PlaybookError(failed_play(failures, ("gpu-1",))))
    auto = AutoDouble()
    auto.during_up = lambda _out, on_event: on_event(diagnostic(details, SITE_URN))
    auto.fail["up"] = engine_error(CommandError, "error: update failed\n")
    mp = pytest.MonkeyPatch()
    mp.setattr(lifecycle, "_lab", lambda s, b: (lab_for(project, auto, print), console()))
    try:
        assert main(["up", STACK]) == 1
    finally:
        mp.undo()
    err = capsys.readouterr().err
    assert err == f"gpulab: error: up {STACK} failed: {expect}\n"


def console() -> Any:
    from rich.console import Console

    return Console(width=400)


def lab_for(project: Path, auto: AutoDouble, out: Any) -> Lab:
    return Lab(STACK, repo=project, auto=auto, on_output=out)


def test_workload_failure_shows_the_partial_results_then_down_removes_the_lab(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from infra.cli import lifecycle, main

    results = project / "results" / STACK
    auto = AutoDouble()
    made: dict[str, Any] = {}

    def engine(_on_output: Any, on_event: Any) -> None:
        auto.deployed = True  # hosts and the site run were made before the workload run failed
        made["details"], made["run_dir"] = run_workloads_failing_on_gpu1(results, monkeypatch)
        on_event(diagnostic(made["details"], URN))
        on_event(diagnostic("update failed", STACK_URN))

    auto.during_up = engine
    started = datetime.now(UTC)
    auto.fail["up"] = engine_error(CommandError, "error: update failed\n")
    monkeypatch.setattr(lifecycle, "_lab", lambda s, b: (lab_for(project, auto, print), console()))
    assert main(["up", STACK]) == 1
    cap = capsys.readouterr()
    run_dir: Path = made["run_dir"]
    assert (
        made["details"]
        .rstrip()
        .splitlines()[-1]
        .startswith(
            "infra.dynamic.workload_run.WorkloadRunError: workloads.yml: host 'gpu-1' failed"
        )
    )
    assert cap.err == (
        f"gpulab: error: up {STACK} failed: WorkloadRun local-workloads-native: workloads.yml: "
        "host 'gpu-1' failed at task 'Run the workloads': non-zero return code (runner exited "
        f"1); kept the finished records of gpu-0 in {run_dir}\n"
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "partial" and summary["failed_hosts"] == ["gpu-1"]
    assert "partial results on disk:" in cap.out
    assert f"{run_dir.name}: partial (summary: {run_dir / 'summary.json'})" in cap.out
    assert f"finished gpu-0: 1 record file(s) in {run_dir / 'gpu-0'}" in cap.out
    assert "failed   gpu-1" in cap.out

    # `gpulab outputs`: the state's results, and the failed update's partial run from disk
    auto.last_update = SimpleNamespace(
        kind="update",
        result="failed",
        start_time=started,
        end_time=datetime.now(UTC),
        resource_changes={"create": 3},
    )
    assert main(["outputs", STACK]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["results"] == {"status": "ok", "rows": []}  # what the state holds
    partial = shown["results_partial"]
    assert partial["status"] == "partial" and partial["run_id"] == run_dir.name
    assert partial["finished_hosts"] == ["gpu-0"] and partial["failed_hosts"] == ["gpu-1"]
    assert partial["records"] == [str(run_dir / "gpu-0" / "records.jsonl")]
    assert partial["rows"][0]["model"] == "alexnet"

    # after a later successful update, the old partial run is not shown as the last update's
    auto.last_update = SimpleNamespace(
        kind="update", result="succeeded", start_time=started, end_time=None, resource_changes={}
    )
    assert "results_partial" not in lab_for(project, auto, print).outputs()

    # what was made stays in the state: down destroys it, and keeps the records
    assert auto.deployed
    assert main(["down", STACK]) == 0
    assert auto.calls[-1] == ("destroy", STACK) and not auto.deployed
    assert (run_dir / "gpu-0" / "records.jsonl").is_file()


def test_measure_failure_is_the_same_line(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = project / "results" / STACK
    auto = AutoDouble()
    lab = lab_for(project, auto, lambda _line: None)
    lab.up()

    def engine(_on_output: Any, on_event: Any) -> None:
        details, _ = run_workloads_failing_on_gpu1(results, monkeypatch)
        on_event(diagnostic(details, URN))

    auto.during_up = engine
    auto.fail["up"] = engine_error(CommandError, "error: update failed\n")
    with pytest.raises(LabError) as err:
        lab.measure()
    assert str(err.value).startswith(
        f"measure {STACK} failed: WorkloadRun local-workloads-native: workloads.yml: host "
        "'gpu-1' failed at task 'Run the workloads'"
    )
    assert err.value.partial is not None and sorted(err.value.partial.records) == ["gpu-0"]


def test_without_events_the_traceback_in_the_engine_output_is_used(project: Path) -> None:
    fail = TaskFailure("gpu-1", RUN_TASK, "runner exited 1")
    details = abort_details(PlaybookError(failed_play([fail], ("gpu-1",))))
    shown = "Diagnostics:\n  gpulab:index:WorkloadRun (local-workloads-native):\n" + "".join(
        f"    {ln}\n" for ln in details.splitlines()
    )
    auto = AutoDouble()
    auto.fail["up"] = CommandError(CommandResult(shown, "error: update failed", 255))
    with pytest.raises(LabError) as err:
        lab_for(project, auto, lambda _line: None).up()
    assert str(err.value) == (
        f"up {STACK} failed: workloads.yml: host 'gpu-1' failed at task 'Run the workloads': "
        "runner exited 1"
    )
    assert err.value.partial is None  # no run failed part-way on disk


def test_ctrl_c_during_a_workload_run_keeps_the_lab_and_the_records(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C reaches gpulab and the engine (one process group): gpulab does not die, the
    engine (DOUBLED) says it cancels, finishes the running workload run and stops."""
    from infra.cli import lifecycle, main

    results = project / "results" / STACK
    auto = AutoDouble()
    seen: dict[str, Any] = {}

    def engine(on_output: Any, _on_event: Any) -> None:
        auto.deployed = True
        os.kill(os.getpid(), signal.SIGINT)  # the terminal's Ctrl-C
        on_output(
            "^C received; cancelling. If you would like to terminate immediately, press ^C again."
        )
        seen["handler"] = signal.getsignal(signal.SIGINT)
        run = results / "20261123T220000Z-abc123" / "gpu-0"  # the run in flight finished
        run.mkdir(parents=True)
        (run / "records.jsonl").write_text("{}\n")
        on_output("error: update canceled")

    auto.during_up = engine
    auto.fail["up"] = engine_error(CommandError, "error: update canceled\n")
    monkeypatch.setattr(lifecycle, "_lab", lambda s, b: (lab_for(project, auto, print), console()))
    before = signal.getsignal(signal.SIGINT)
    assert main(["up", STACK]) == 130
    cap = capsys.readouterr()
    assert seen["handler"] not in (before, signal.SIG_DFL)  # trapped during the update
    assert signal.getsignal(signal.SIGINT) is before  # and given back after
    assert cap.err == (
        f"gpulab: error: up {STACK} interrupted: the engine stopped after the steps in flight; "
        f"the lab stays as it is (`gpulab up {STACK}` carries on, `gpulab down {STACK}` "
        "removes it)\n"
    )
    assert "==> SIGINT: the engine finishes the steps in flight and stops" in cap.out
    assert "kept on disk:" in cap.out
    assert (
        f"finished gpu-0: 1 record file(s) in {results / '20261123T220000Z-abc123' / 'gpu-0'}"
        in cap.out
    )
    assert not [c for c in auto.calls if c[0] == "destroy"] and auto.deployed


FAKE_ENGINE = """
import pathlib, signal, sys, time
got = []
signal.signal(signal.SIGINT, lambda *a: got.append("INT"))
pathlib.Path(sys.argv[1] + ".ready").write_text("ready")
deadline = time.time() + 20
while not got and time.time() < deadline:
    time.sleep(0.05)
pathlib.Path(sys.argv[1]).write_text(",".join(got))
"""


def test_sigterm_to_gpulab_alone_is_forwarded_once_to_the_engine(
    project: Path, tmp_path: Path
) -> None:
    """`kill <gpulab pid>`: the engine did not get it, so gpulab forwards one SIGINT (the
    engine's graceful cancel) to its Pulumi CLI child: here a real child process named
    `pulumi` that records the signals it receives."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "pulumi"
    fake.write_text(f"#!{sys.executable}\n{FAKE_ENGINE}")
    fake.chmod(0o755)
    mark = tmp_path / "engine-signals"
    auto = AutoDouble()
    guards: list[InterruptGuard] = []

    def engine(_on_output: Any, _on_event: Any) -> None:
        proc = subprocess.Popen([str(fake), str(mark)])
        try:
            deadline = time.time() + 20
            while not Path(f"{mark}.ready").exists() and time.time() < deadline:
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGTERM)  # to gpulab only
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    auto.during_up = engine
    auto.fail["up"] = engine_error(CommandError, "error: update canceled\n")
    lab = lab_for(project, auto, lambda _line: None)
    import infra.lab_faults as lab_faults

    real = lab_faults.InterruptGuard

    class Quick(real):  # type: ignore[misc,valid-type]
        def __init__(self, on_output: Any) -> None:
            super().__init__(on_output, grace_s=0.2)
            guards.append(self)

    mp = pytest.MonkeyPatch()
    import infra.automation as automation

    mp.setattr(automation, "InterruptGuard", Quick)
    try:
        with pytest.raises(LabInterrupted) as err:
            lab.up()
    finally:
        mp.undo()
    assert mark.read_text() == "INT"
    assert len(guards[0].forwarded) == 1 and guards[0].signals == [signal.SIGTERM]
    assert err.value.signum == signal.SIGTERM  # `gpulab up` exits 128 + 15


def test_an_acknowledged_interrupt_is_not_forwarded() -> None:
    """When the engine printed that it cancels, a second SIGINT from gpulab would make it
    terminate at once: nothing is forwarded."""
    sent: list[int] = []
    guard = InterruptGuard(lambda _line: None, grace_s=0.05, find_engine=lambda: sent or [])
    with guard:
        os.kill(os.getpid(), signal.SIGINT)
        guard.watch("^C received; cancelling. If you would like to terminate immediately, ...")
        time.sleep(0.3)
    assert guard.signals == [signal.SIGINT] and guard.forwarded == []
