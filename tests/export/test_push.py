"""``gpulab export --pushgateway URL``: the push as a Prometheus Pushgateway receives it.

Mocked: the Pushgateway, for the answers a real one gives only when it is broken or refuses
(tests/export/test_pushgateway_real.py pushes to a real one). The double answers
what the Pushgateway's API documents for ``PUT /metrics/job/<job>``: it takes only the text
exposition format (``text/plain; version=0.0.4``) and parses the body with prometheus_client's
text-format parser, answering 400 with the parse error as the real one does for a body it
cannot parse, 405 for another method, 404 for another path; 200 and the metric families kept
otherwise. So a push it accepts is one a Pushgateway would parse; it is not friendlier about
the format than the real one.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from infra.cli import main
from tests.report import synth


class Gateway(ThreadingHTTPServer):
    pushed: dict[str, list[Any]]
    requests: list[tuple[str, str, str]]
    answer: int | None = None  # force an answer (e.g. 503) instead of handling the push
    basic: str | None = None  # "user:password": answer 401 without it, as a gateway run
    # with --web.config.file basic_auth_users does
    auth: list[str | None]


class Handler(BaseHTTPRequestHandler):
    server: Gateway

    def log_message(self, *args: Any) -> None:
        return

    def _reply(self, code: int, text: str = "") -> None:
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self._reply(405, "only PUT is served by this double")

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode("utf-8")
        ctype = self.headers.get("Content-Type", "")
        self.server.requests.append((self.command, self.path, ctype))
        self.server.auth.append(self.headers.get("Authorization"))
        if self.server.answer is not None:
            return self._reply(self.server.answer, "unavailable")
        if self.server.basic is not None:
            want = "Basic " + base64.b64encode(self.server.basic.encode()).decode()
            if self.headers.get("Authorization") != want:
                return self._reply(401, "Unauthorized")
        if not self.path.startswith("/metrics/job/"):
            return self._reply(404, "not found")
        if not ctype.startswith("text/plain") or "version=0.0.4" not in ctype:
            return self._reply(400, f"unsupported content type {ctype!r}")
        try:
            families = list(text_string_to_metric_families(body))
        except Exception as exc:  # the real gateway: 400 "text format parsing error"
            return self._reply(400, f"text format parsing error: {exc}")
        self.server.pushed[self.path.removeprefix("/metrics/job/")] = families
        return self._reply(200)


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    srv = Gateway(("127.0.0.1", 0), Handler)
    srv.pushed, srv.requests, srv.auth = {}, [], []
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(5)


@pytest.fixture
def records(tmp_path: Path) -> Path:
    return synth.write(tmp_path / "r.jsonl", synth.closer()[:40] + synth.bad_runs())


def test_push_lands_as_parsed_gauges(gateway: Gateway, records: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{gateway.server_address[1]}"
    assert main(["export", str(records), "--pushgateway", url]) == 0
    assert [(m, p) for m, p, _ in gateway.requests] == [("PUT", "/metrics/job/gpulab")]
    families = {f.name: f for f in gateway.pushed["gpulab"]}
    assert set(families) == {"gpulab_images_per_second", "gpulab_elapsed_seconds", "gpulab_records"}
    assert all(f.type == "gauge" for f in families.values())
    want = {"model": "inception_v3", "setting": "bm", "experiment": "single_synthetic"}
    s = next(
        s for s in families["gpulab_images_per_second"].samples if want.items() <= s.labels.items()
    )
    assert s.value == pytest.approx(100.0)
    assert sum(s.value for s in families["gpulab_records"].samples) == 41
    # the same samples as the OpenMetrics file export
    out = tmp_path / "m.txt"
    assert main(["export", str(records), "--format", "openmetrics", "--out", str(out)]) == 0
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om

    exported = {
        (f.name, tuple(sorted(s.labels.items())), s.value)
        for f in om(out.read_text())
        for s in f.samples
    }
    pushed = {
        (f.name, tuple(sorted(s.labels.items())), s.value)
        for f in families.values()
        for s in f.samples
    }
    assert pushed == exported


@pytest.mark.parametrize("answer", [400, 503])
def test_gateway_refusal_is_one_line_exit_2(
    gateway: Gateway, records: Path, answer: int, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway.answer = answer
    url = f"http://127.0.0.1:{gateway.server_address[1]}"
    assert main(["export", str(records), "--pushgateway", url]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and url in err[0] and "Traceback" not in err[0], err


def test_unreachable_gateway_is_one_line_exit_2(
    records: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["export", str(records), "--pushgateway", f"http://127.0.0.1:{port}"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "refused" in err[0].lower(), err


def test_credentials_from_the_environment_go_as_basic_auth(
    gateway: Gateway, records: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    gateway.basic = "bob:s3cret pw:x"
    url = f"http://127.0.0.1:{gateway.server_address[1]}"
    monkeypatch.setenv("NETRC", "/nonexistent")
    assert main(["export", str(records), "--pushgateway", url]) == 2  # none given: 401
    assert "answered 401 Unauthorized" in capsys.readouterr().err
    monkeypatch.setenv("GPULAB_PUSHGATEWAY_USER", "bob")
    monkeypatch.setenv("GPULAB_PUSHGATEWAY_PASSWORD", "s3cret pw:x")
    assert main(["export", str(records), "--pushgateway", url]) == 0
    assert "gpulab" in gateway.pushed
    out = capsys.readouterr()
    assert "s3cret" not in out.err + out.out


def test_credentials_from_netrc(
    gateway: Gateway, records: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway.basic = "alice:from-netrc"
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1\n  login alice\n  password from-netrc\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    url = f"http://127.0.0.1:{gateway.server_address[1]}"
    assert main(["export", str(records), "--pushgateway", url]) == 0
    assert gateway.auth == ["Basic " + base64.b64encode(b"alice:from-netrc").decode()]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"GPULAB_PUSHGATEWAY_USER": "bob"}, "$GPULAB_PUSHGATEWAY_PASSWORD is not set"),
        ({"GPULAB_PUSHGATEWAY_PASSWORD": "s3cret"}, "$GPULAB_PUSHGATEWAY_USER is not set"),
    ],
)
def test_half_the_credentials_is_one_line_before_anything_is_written(
    records: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], env: dict[str, str], message: str,
) -> None:  # fmt: skip
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    out = tmp_path / "m.prom"
    argv = ["export", str(records), "--format", "openmetrics", "--out", str(out)]
    assert main([*argv, "--pushgateway", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gpulab: error: {message} (the Pushgateway needs both)"]
    assert not out.exists()  # checked before the export is written


def test_credentials_in_the_url_are_refused_and_not_echoed(
    records: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "https://bob:s3cret@gateway.example:9091/"
    assert main(["export", str(records), "--pushgateway", url]) == 2
    err = capsys.readouterr().err
    assert "s3cret" not in err and "bob" not in err
    assert "'https://***@gateway.example:9091/': credentials in the URL are refused" in err
