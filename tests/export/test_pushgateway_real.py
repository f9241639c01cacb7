"""``gpulab export --pushgateway URL`` against a real Prometheus Pushgateway (Debian's 1.5.1,
tests/parts/fixtures_pushgateway.py), as a user runs it: the CLI in a subprocess pushes, then the
gateway's own ``/metrics`` (what Prometheus scrapes) and ``/api/v1/metrics`` are read back and
parsed with prometheus_client's parser. Nothing is doubled."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_families
from prometheus_client.parser import text_string_to_metric_families

from tests.parts import REPO, need
from tests.parts.fixtures_ironic import free_port, stop_pid
from tests.parts.fixtures_pushgateway import PUSHGATEWAY, PushgatewayPart
from tests.report import synth

GPULAB = REPO / ".venv" / "bin" / "gpulab"
Sample = tuple[str, tuple[tuple[str, str], ...], float]


def gpulab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(GPULAB), *args], capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "COLUMNS": "160", **(env or {})},
    )  # fmt: skip


def scraped(gw: PushgatewayPart, job: str) -> set[Sample]:
    """The gpulab_* samples of one job as Prometheus scrapes the gateway, without the grouping
    labels the gateway adds (job, instance)."""
    out: set[Sample] = set()
    for fam in text_string_to_metric_families(gw.get("/metrics")):
        if not fam.name.startswith("gpulab_"):
            continue
        for s in fam.samples:
            if s.labels.get("job") != job:
                continue
            labels = {k: v for k, v in s.labels.items() if k not in ("job", "instance")}
            out.add((s.name, tuple(sorted(labels.items())), s.value))
    return out


def exported(records: Path, tmp_path: Path) -> set[Sample]:
    out = tmp_path / "m.txt"
    r = gpulab("export", str(records), "--format", "openmetrics", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for f in om_families(out.read_text())  # type: ignore[no-untyped-call]
        for s in f.samples
    }


@pytest.mark.pushgateway
def test_push_is_scraped_from_the_gateway_as_exported(
    pushgateway: PushgatewayPart, tmp_path: Path
) -> None:
    records = synth.write(tmp_path / "r.jsonl", synth.closer()[:40] + synth.bad_runs())
    r = gpulab("export", str(records), "--pushgateway", pushgateway.url)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"pushed to {pushgateway.url}" in r.stderr

    got = scraped(pushgateway, "gpulab")
    assert got == exported(records, tmp_path)
    assert {name for name, _, _ in got} == {
        "gpulab_images_per_second", "gpulab_elapsed_seconds", "gpulab_records",
    }  # fmt: skip
    assert sum(v for name, _, v in got if name == "gpulab_records") == 41

    # The gateway's API: the group was pushed and nothing failed to parse.
    api: dict[str, Any] = json.loads(pushgateway.get("/api/v1/metrics"))
    (group,) = [g for g in api["data"] if g["labels"].get("job") == "gpulab"]
    assert float(group["push_time_seconds"]["metrics"][0]["value"]) > 0
    assert float(group["push_failure_time_seconds"]["metrics"][0]["value"]) == 0
    assert group["gpulab_records"]["type"] == "GAUGE"


@pytest.mark.pushgateway
def test_second_push_replaces_the_group(pushgateway: PushgatewayPart, tmp_path: Path) -> None:
    """A push is a PUT: the next export's samples replace the job's, none of the earlier ones
    stay behind (a metric dropped from a later export would otherwise linger in Prometheus)."""
    first = synth.write(tmp_path / "a.jsonl", synth.closer()[:40])
    second = synth.write(tmp_path / "b.jsonl", synth.closer()[:8])
    assert gpulab("export", str(first), "--pushgateway", pushgateway.url).returncode == 0
    r = gpulab("export", str(second), "--pushgateway", pushgateway.url + "/")
    assert r.returncode == 0, r.stderr
    got = scraped(pushgateway, "gpulab")
    assert got == exported(second, tmp_path)
    assert sum(v for name, _, v in got if name == "gpulab_records") == 8


# bcrypt (cost 4) of "s3cret pw", made with crypt(3)'s $2b$: the gateway's web config takes
# only hashes (exporter-toolkit basic_auth_users).
BOB_HASH = "$2b$04$BKX5tTl3yTB.EXHHer9pV.mJMyFOUX4x0COLNKSWZknm9HksdxUgy"


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[PushgatewayPart]:
    """A second gateway that takes pushes only with HTTP basic authentication (bob)."""
    need(PUSHGATEWAY.exists(), f"Pushgateway {PUSHGATEWAY} (scripts/parts/pushgateway.sh prepare)")
    config = tmp_path / "web.yml"
    config.write_text(f"basic_auth_users:\n  bob: '{BOB_HASH}'\n")
    log = tmp_path / "guarded.log"
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(PUSHGATEWAY), f"--web.listen-address=127.0.0.1:{port}", "--persistence.file=",
             f"--web.config.file={config}"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    part = PushgatewayPart(f"http://127.0.0.1:{port}", proc.pid, log)
    try:
        deadline = time.monotonic() + 30
        while True:  # ready: the port answers (401 without credentials)
            try:
                part.get("/-/ready")
                break
            except urllib.error.HTTPError:
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None, log.read_text()[-800:]
                assert time.monotonic() < deadline, log.read_text()[-800:]
                time.sleep(0.1)
        yield part
    finally:
        stop_pid(proc)


@pytest.mark.pushgateway
def test_credentials_from_netrc_open_a_guarded_gateway(
    guarded: PushgatewayPart, tmp_path: Path
) -> None:
    records = synth.write(tmp_path / "r.jsonl", synth.closer()[:8])
    netrc = tmp_path / "netrc"
    netrc.write_text('machine 127.0.0.1 login bob password "s3cret pw"\n')
    netrc.chmod(0o600)
    env = {"NETRC": str(tmp_path / "none")}
    r = gpulab("export", str(records), "--pushgateway", guarded.url, env=env)
    assert r.returncode == 2 and "answered 401 Unauthorized" in r.stderr, r.stderr
    r = gpulab("export", str(records), "--pushgateway", guarded.url, env={"NETRC": str(netrc)})
    assert r.returncode == 0, r.stderr
    assert "s3cret" not in r.stdout + r.stderr
    req = urllib.request.Request(guarded.url + "/metrics")
    req.add_header("Authorization", "Basic " + base64.b64encode(b"bob:s3cret pw").decode())
    with urllib.request.urlopen(req, timeout=10) as resp:
        text = resp.read().decode()
    assert (
        sum(
            s.value
            for f in text_string_to_metric_families(text)
            if f.name == "gpulab_records"
            for s in f.samples
        )
        == 8
    )
