"""One JSON contract: every `gpulab COMMAND --json` prints one object on stdout, on success and
on failure, checked against docs/cli-json.schema.json (tests/cli/conftest.py: envelope), its
`ok` and `error.code` matching the exit code. Commands run as a user runs them (the console
script in a directory outside the checkout); the lab commands, which need the Pulumi engine,
also in-process against the engine DOUBLE for their successes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import infra.automation
from infra.cli import COMMANDS, main
from report.claims import INCONCLUSIVE, METHOD_CHECK, NOT_MEASURED, NOT_REPRODUCED, REPRODUCED
from tests.cli.conftest import SCHEMA, envelope
from tests.cli.test_init import NOVA
from tests.lifecycle.test_automation_double import AutoDouble, engine_error
from tests.report import synth

LOCAL = "config:\n  gpulab:topology: local\n  gpulab:lab: mylab\n"


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """A directory with a local stack, a nova-pci stack (no cloud: its preflight fails), a
    broken stack, and records of two runs of one arm and of another arm."""
    (tmp_path / "Pulumi.mylab.yaml").write_text(LOCAL)
    (tmp_path / "Pulumi.broken.yaml").write_text(
        "config:\n  gpulab:topology: local\n  gpulab:lab: X\n  gpulab:colour: blue\n"
    )
    for run, factor in (("run-a", 1.0), ("run-b", 1.05)):
        recs = synth.reps("local", "native", experiment="e", model="resnet50",
                          ips=100.0 * factor, repeats=3)  # fmt: skip
        for r in recs:
            r["run_id"] = run
        synth.write(tmp_path / f"{run}.jsonl", recs)
    synth.write(tmp_path / "docker.jsonl", synth.reps("local", "docker", experiment="e",
                model="resnet50", ips=90.0, repeats=3))  # fmt: skip
    return tmp_path


CASES: list[tuple[str, list[str], int]] = [
    ("validate ok", ["validate", "mylab"], 0),
    ("validate problems", ["validate", "broken"], 2),
    ("validate no stack", ["validate", "nope"], 2),
    ("preflight ok", ["preflight", "mylab"], 0),
    ("preflight check fails", ["preflight", "pci"], 1),
    ("audit ok", ["audit", "mylab"], 0),
    ("audit bad input", ["audit", "broken"], 2),
    ("list ok", ["list", "studies"], 0),
    ("list names", ["list"], 0),
    ("list bad", ["list", "planets"], 2),
    ("init ok", ["init", "local", "-s", "fresh"], 0),
    ("init bad", ["init", "local", "-c", "lab=X"], 2),
    ("doctor ok", ["doctor"], 0),
    ("doctor not ready", ["doctor", "--min-free-gb", "100000"], 1),
    ("docs list", ["docs"], 0),
    ("docs page", ["docs", "cli"], 0),
    ("docs unknown", ["docs", "nope"], 2),
    ("report ok", ["report", "run-a.jsonl", "docker.jsonl", "--baseline", "local/native"], 0),
    ("report nothing", ["report", "missing.jsonl"], 2),
    ("compare ok", ["compare", "run-a.jsonl", "run-b.jsonl"], 0),
    ("compare unpaired", ["compare", "run-a.jsonl", "docker.jsonl"], 1),
    ("compare bad", ["compare", "run-a.jsonl"], 2),
    ("bench bad input", ["bench", "--model", "mnist_cnn", "--steps", "0"], 2),
    ("up no pulumi", ["up", "mylab"], 2),
    ("measure no pulumi", ["measure", "mylab"], 2),
    ("rebuild no pulumi", ["rebuild", "mylab"], 2),
    ("status no pulumi", ["status", "mylab"], 2),
    ("outputs no pulumi", ["outputs", "mylab"], 2),
    ("down no pulumi", ["down", "mylab"], 2),
    ("a command without --json", ["export", "run-a.jsonl"], 2),
]


# the cases that build a whole report (figures): seconds each, out of the first tier
HEAVY_CASES = ("report ok", "report nothing")


@pytest.mark.parametrize(
    ("args", "code"),
    [pytest.param(*c[1:], id=c[0], marks=[pytest.mark.integration] if c[0] in HEAVY_CASES else [])
     for c in CASES],
)  # fmt: skip
def test_every_command_prints_one_envelope(gpulab, place: Path, args: list[str],
                                           code: int) -> None:  # fmt: skip
    if args[:2] == ["preflight", "pci"]:
        assert gpulab("init", "nova-pci", "-s", "pci", *NOVA, cwd=place).returncode == 0
    home = place / "home"
    home.mkdir(exist_ok=True)
    r = gpulab(*args, "--json", cwd=place, env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert r.returncode == code, r.stderr
    data = envelope(r.stdout, r.returncode)
    assert data["command"] == args[0]
    if code:  # the same line on stderr, once
        assert r.stderr.count(f"gpulab: error: {data['error']['message']}") == 1, r.stderr


@pytest.mark.integration
def test_the_numbers_of_the_report(gpulab, place: Path) -> None:
    r = gpulab("report", "run-a.jsonl", "docker.jsonl", "--baseline", "local/native", "--json",
               cwd=place)  # fmt: skip
    data = envelope(r.stdout, r.returncode)["data"]
    docker = next(row for row in data["rows"] if row["arm"] == "local/docker"
                  and row["metric"] == "images_per_sec")  # fmt: skip
    assert docker["median"] == pytest.approx(90.0, rel=0.02)  # synth: 1 % noise, 3 repeats
    assert docker["ratio"] == pytest.approx(0.9, rel=0.02)
    assert docker["ratio"] == pytest.approx(docker["estimate"]["value"])  # a verdict judges it
    assert docker["ratio_ci95"][0] <= docker["ratio"] <= docker["ratio_ci95"][1]
    assert isinstance(docker["n"], int) and docker["estimate"]["n"] == 3
    assert docker["estimate"]["units"] == "study repeats"  # synth: each repetition a unit
    assert data["baseline"] == "local/native" and data["verdicts"]
    assert all(isinstance(v["units_needed"], int) for v in data["verdicts"])


def test_the_verdict_words_of_the_schema_are_the_reports() -> None:
    schema = json.loads(SCHEMA.read_text())
    verdict = schema["$defs"]["report"]["properties"]["verdicts"]["items"]["properties"]
    assert set(verdict["verdict"]["enum"]) == {
        REPRODUCED,
        NOT_REPRODUCED,
        INCONCLUSIVE,
        NOT_MEASURED,
        METHOD_CHECK,
    }


def test_the_schema_knows_every_command_with_json() -> None:
    """Each command that offers --json has its data described (else the schema's catch-all
    would accept only failures)."""
    import typer.main

    from infra.cli import command

    root = command()
    listed = json.loads(SCHEMA.read_text())["allOf"][-1]["if"]["not"]["properties"]["command"]
    offered = {name for name in COMMANDS if _offers_json(root.commands[name])}
    assert offered == set(listed["enum"]), offered ^ set(listed["enum"])
    assert typer.main  # (imported for get_command)


def _offers_json(cmd: Any) -> bool:
    return any("--json" in getattr(p, "opts", ()) for p in cmd.params)


@pytest.mark.tf
def test_bench_succeeds_with_one_envelope(gpulab, place: Path) -> None:
    r = gpulab("bench", "--model", "mnist_cnn", "--steps", "2", "--warmup", "1", "--repeats",
               "1", "--batch", "8", "--out", "b.jsonl", "--json", cwd=place)  # fmt: skip
    data = envelope(r.stdout, r.returncode)["data"]
    (rec,) = data["records"]
    assert rec["status"] == "ok" and rec["timed_s"] > 0 and rec["startup_s"] > 0


# -- the lab commands' successes: the engine DOUBLE (the Pulumi CLI cannot run here) --------


@pytest.fixture
def engine(place: Path, monkeypatch: pytest.MonkeyPatch) -> AutoDouble:
    auto = AutoDouble()

    class DoubleLab(infra.automation.Lab):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, auto=auto, **kw)

    monkeypatch.setattr(infra.automation, "Lab", DoubleLab)
    monkeypatch.chdir(place)
    monkeypatch.setenv("GPULAB_RESULTS", str(place / "results"))
    return auto


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    rc = main([*args, "--json"])
    return envelope(capsys.readouterr().out, rc)


def test_the_lab_commands_succeed_with_one_envelope_engine_double(
    engine: AutoDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    up = _json(capsys, "up", "mylab")
    assert up["ok"] and up["data"]["kubeconfig"] == "[secret]" and up["data"]["hosts"]
    assert _json(capsys, "measure", "mylab")["ok"]
    status = _json(capsys, "status", "mylab")["data"]
    assert status["last_update"]["resource_changes"] == {"create": 3}
    assert _json(capsys, "outputs", "mylab")["data"]["topology"] == "local"
    assert _json(capsys, "rebuild", "mylab")["ok"]
    down = _json(capsys, "down", "mylab")["data"]
    assert down["destroyed"] and down["outputs_saved"].endswith("-down.json")


def test_an_engine_failure_is_one_envelope_engine_double(
    engine: AutoDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    from pulumi.automation import CommandError

    engine.fail["up"] = engine_error(CommandError, "error: update failed: host 'h0' failed\n")
    got = _json(capsys, "up", "mylab")
    assert got["error"] == {
        "message": "up mylab failed: error: update failed: host 'h0' failed",
        "code": 1,
    }
