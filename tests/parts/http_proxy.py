"""A forward HTTP proxy for the tests, as a lab's site proxy behaves: it takes absolute-URI
requests (``GET http://host/path``) from any client, fetches them, and logs each one with the
client's address; it keeps nothing on the clients.

Like a site proxy with a parent (squid's ``cache_peer``), it sends requests for the outside
world on to an upstream proxy (the test lab's apt-cacher-ng, the only way this machine's test
hosts reach the Debian mirror) and fetches the lab's own servers (``direct``) itself. It speaks
plain HTTP only: a ``CONNECT`` (HTTPS tunnel) is refused with 501 and logged, so a step that
would need one shows up as a failure, not as a silent bypass.

Every request is one :class:`Served` row in :attr:`HttpProxy.served` (method, URL, status,
client address), in the order the proxy answered them.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Served:
    client: str
    method: str
    url: str
    status: int


class HttpProxy:
    """A forward proxy on ``bind:port`` (0: a free port) until :meth:`close`."""

    def __init__(
        self, bind: str, upstream: tuple[str, int], direct: Iterable[str], port: int = 0
    ) -> None:
        self.upstream = upstream
        self.direct = frozenset(direct)
        self.served: list[Served] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((bind, port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def requests_from(self, client: str) -> list[Served]:
        with self._lock:
            return [s for s in self.served if s.client == client]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def _log(self, row: Served) -> None:
        with self._lock:
            self.served.append(row)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection, then close

            def log_message(self, format: str, *args: object) -> None:
                pass  # every request is in HttpProxy.served

            def do_CONNECT(self) -> None:
                proxy._log(Served(self.client_address[0], "CONNECT", self.path, 501))
                self.send_error(501, "this proxy tunnels no HTTPS")

            def do_GET(self) -> None:
                self._forward()

            def do_HEAD(self) -> None:
                self._forward()

            def _forward(self) -> None:
                client = self.client_address[0]
                parts = urlsplit(self.path)
                if parts.scheme != "http" or not parts.hostname:
                    proxy._log(Served(client, self.command, self.path, 400))
                    self.send_error(400, "a proxy request names an absolute http:// URL")
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                if parts.hostname in proxy.direct:
                    conn = http.client.HTTPConnection(
                        parts.hostname, parts.port or 80, timeout=TIMEOUT_S
                    )
                    target = parts.path or "/"
                    if parts.query:
                        target += "?" + parts.query
                else:
                    conn = http.client.HTTPConnection(*proxy.upstream, timeout=TIMEOUT_S)
                    target = self.path
                try:
                    conn.request(self.command, target, headers=headers)
                    resp = conn.getresponse()
                    body = resp.read()
                except OSError as exc:
                    proxy._log(Served(client, self.command, self.path, 502))
                    self.send_error(502, f"upstream: {exc}")
                    return
                finally:
                    conn.close()
                proxy._log(Served(client, self.command, self.path, resp.status))
                self.send_response(resp.status, resp.reason)
                for key, value in resp.getheaders():
                    if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                length = resp.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

        return Handler
