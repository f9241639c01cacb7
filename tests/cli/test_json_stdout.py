"""--json: one JSON document on stdout, logs on stderr. `up` with a double of the Pulumi
engine (the Lab class): its engine lines go to stderr, its outputs alone to stdout (the
envelope's data with --json, the outputs themselves without: `gpulab up local > out.json`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import infra.automation
import infra.cli


class LabDouble:
    """A double of infra.automation.Lab: prints engine lines, returns outputs."""

    seen: dict[str, Any] = {}

    def __init__(self, stack: str, repo: Path, on_output: Any, env: dict[str, str],
                 **_: Any) -> None:  # fmt: skip
        self.stack_name, self.on_output = stack, on_output
        LabDouble.seen = {"stack": stack, "repo": repo, "env": env}

    def up(self, refresh: bool = False) -> dict[str, Any]:
        self.on_output("Updating (local):\n")
        self.on_output("    pulumi:pulumi:Stack gpulab-local running\n")
        return {"hosts": [{"name": "localhost"}], "refresh": refresh}


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_up_keeps_stdout_for_the_outputs_double(monkeypatch: pytest.MonkeyPatch, capsys: Any,
                                                flag: list[str]) -> None:  # fmt: skip
    monkeypatch.setattr(infra.automation, "Lab", LabDouble)
    rc = infra.cli.main(["up", "local", "--refresh", "--state-url", "file:///tmp/s", *flag])
    out, err = capsys.readouterr()
    assert rc == 0
    got = json.loads(out)
    if flag:
        assert got["ok"] and got["command"] == "up" and got["error"] is None
        got = got["data"]
    assert got == {"hosts": [{"name": "localhost"}], "refresh": True}
    assert "Updating (local):" in err and "Updating" not in out
    assert LabDouble.seen["env"] == {"PULUMI_BACKEND_URL": "file:///tmp/s"}
    assert LabDouble.seen["stack"] == "local"


def test_state_url_reads_pulumi_backend_url(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setattr(infra.automation, "Lab", LabDouble)
    monkeypatch.setenv("PULUMI_BACKEND_URL", "file:///tmp/env-state")
    assert infra.cli.main(["up", "-s", "local"]) == 0
    assert LabDouble.seen["env"] == {"PULUMI_BACKEND_URL": "file:///tmp/env-state"}
    capsys.readouterr()


@pytest.mark.integration
def test_report_json(gpulab, tmp_path: Path) -> None:
    from tests.report.synth import reps, write

    records = write(tmp_path / "in" / "r.jsonl", reps("local", "native", experiment="e",
                    model="resnet50", ips=100.0, repeats=3))  # fmt: skip
    r = gpulab("report", str(records), "--out-dir", str(tmp_path / "rep"), "--json")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("{"), (r.stdout[:300], r.stderr[-800:])
    data = json.loads(r.stdout)["data"]
    assert Path(data["html"]).is_file() and data["figures"]
    assert any("Nothing to compare" in line for line in data["banner"])
