"""``gpulab preflight`` checks a lab's package sources from this machine before anything is
built: each name the hosts resolve themselves (gpulab:site URLs they reach directly, the
proxy's) resolves, and the proxy (gpulab:proxy) accepts a connection; each failure is one row
naming the key. Run as a user runs it (the console script, a stack file) against real sockets
on 127.0.0.1; ``.invalid`` names never resolve (RFC 6761)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

GPULAB = Path(sys.executable).with_name("gpulab")


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections (a proxy that answers)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield int(s.getsockname()[1])


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once the socket is closed


def preflight(tmp_path: Path, config: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    stack = tmp_path / "Pulumi.netlab.yaml"
    base = {"gpulab:topology": "local", "gpulab:lab": "netlab", "gpulab:ssh_user": "root"}
    stack.write_text(yaml.safe_dump({"config": {**base, **config}}))
    cmd = [str(GPULAB)] if GPULAB.exists() else [sys.executable, "-m", "infra.cli"]
    r = subprocess.run([*cmd, "preflight", str(stack), "--json"], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})  # fmt: skip
    envelope = json.loads(r.stdout)  # docs/cli-json.schema.json
    assert envelope["command"] == "preflight" and envelope["ok"] is (r.returncode == 0), envelope
    return r.returncode, envelope["data"]


def rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in doc["checks"]}


def test_preflight_passes_when_names_resolve_and_the_proxy_answers(
    tmp_path: Path, listening: int
) -> None:
    rc, doc = preflight(
        tmp_path,
        {
            "gpulab:proxy": {"http": f"http://127.0.0.1:{listening}", "no_proxy": ["localhost"]},
            "gpulab:site": {"workload_env_pip_index_url": "http://localhost:8080/simple/"},
        },
    )
    got = rows(doc)
    assert rc == 0 and doc["failed"] == 0, doc
    assert got["name localhost"]["detail"].endswith("(gpulab:site.workload_env_pip_index_url)")
    assert got[f"proxy http://127.0.0.1:{listening}"]["detail"] == (
        f"answers at 127.0.0.1:{listening} (gpulab:proxy)"
    )


def test_preflight_fails_early_on_a_silent_proxy_and_an_unknown_name(tmp_path: Path) -> None:
    port = closed_port()
    rc, doc = preflight(
        tmp_path,
        {
            "gpulab:proxy": {
                "http": f"http://127.0.0.1:{port}",
                "no_proxy": [".lab.invalid"],
            },
            "gpulab:site": {
                "workload_env_pip_index_url": "http://pypi.lab.invalid/simple/",
                # behind the proxy: the proxy resolves it, not this machine or the hosts
                "nvidia_driver_cuda_repo_url": "https://cuda.mirror.invalid/repos/",
            },
        },
    )
    got = rows(doc)
    assert rc == 1 and doc["failed"] == 2, doc
    proxy = got[f"proxy http://127.0.0.1:{port}"]
    assert not proxy["passed"]
    assert proxy["detail"].startswith("does not answer from this machine (gpulab:proxy): ")
    assert "refused" in proxy["detail"].lower()
    name = got["name pypi.lab.invalid"]
    assert not name["passed"]
    assert name["detail"].startswith(
        "does not resolve on this machine (gpulab:site.workload_env_pip_index_url)"
    )
    assert "gpulab:dns_nameservers" in name["fix"]
    assert "name cuda.mirror.invalid" not in got


def test_preflight_without_proxy_or_site_urls_adds_no_rows(tmp_path: Path) -> None:
    rc, doc = preflight(tmp_path, {})
    assert rc == 0 and list(rows(doc)) == ["topology local"]
