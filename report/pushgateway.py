"""``gpulab export --pushgateway URL``: the export's gauges PUT to a Prometheus Pushgateway.

The samples of report.export (Prometheus text format 0.0.4) go to ``URL/metrics/job/<job>``:

* within one overall deadline (``timeout`` seconds, for the name lookup, the connection, the
  request and the whole answer): a gateway that answers a byte every few seconds, or a name
  that never resolves, is one line when the deadline passes, not a hang;
* credentials come from ``$GPULAB_PUSHGATEWAY_USER`` and ``$GPULAB_PUSHGATEWAY_PASSWORD``, else
  from the netrc file (``$NETRC``, else ``~/.netrc``) entry of the gateway's host, and go as
  HTTP basic authentication; a URL carrying ``user:password@`` is refused (a command line
  shows in the process list and the shell's history), and no error line ever holds a
  password or the URL's user part;
* every failure is one line naming the gateway (InputError, exit 2): a URL that cannot be
  parsed (a bad IPv6 literal, a port out of range, control characters), a refused
  connection, an answer that is not HTTP, an HTTP error status with the first line of its
  body.
"""

from __future__ import annotations

import base64
import netrc
import os
import re
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workloads.errors import InputError

USER_ENV = "GPULAB_PUSHGATEWAY_USER"
PASSWORD_ENV = "GPULAB_PUSHGATEWAY_PASSWORD"
DEFAULT_TIMEOUT_S = 30
MAX_ANSWER_BYTES = 64 * 1024  # a gateway answers a push with a few bytes
_USERINFO = re.compile(r"(//)[^/?#]*@")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


@dataclass(frozen=True)
class Gateway:
    url: str  # scheme://host[:port][/prefix], no trailing slash, no credentials
    host: str  # the host name as netrc names it


def redacted(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@``, for an error line."""
    return _USERINFO.sub(r"\1***@", url)


def gateway(url: str) -> Gateway:
    """The checked gateway of ``--pushgateway URL``; InputError (one line, no password)."""
    shown = redacted(url)
    if _CONTROL.search(url):
        raise InputError(f"--pushgateway {shown!r} holds a space or a control character")
    try:
        parts = urllib.parse.urlsplit(url)
        _ = parts.port  # a port out of range or not a number raises here
        host = parts.hostname
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535"
        raise InputError(f"--pushgateway {shown!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise InputError(f"--pushgateway {shown!r} is not an http(s) URL")
    if "@" in parts.netloc:
        raise InputError(
            f"--pushgateway {shown!r}: credentials in the URL are refused (a command line "
            f"shows in the process list); give them in ${USER_ENV} and ${PASSWORD_ENV}, "
            "or in ~/.netrc"
        )
    if not host:
        raise InputError(f"--pushgateway {shown!r} names no host")
    if parts.query or parts.fragment:
        raise InputError(f"--pushgateway {shown!r}: a query or fragment has no place here")
    return Gateway(f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}", host)


def credentials(host: str, environ: dict[str, str] | None = None) -> tuple[str, str] | None:
    """(user, password) for ``host``: the environment's, else the netrc file's; None when
    neither has any. InputError naming the file (never its content) when it cannot be read."""
    env = os.environ if environ is None else environ
    user, password = env.get(USER_ENV, ""), env.get(PASSWORD_ENV, "")
    if user or password:
        if not (user and password):
            missing = PASSWORD_ENV if user else USER_ENV
            raise InputError(f"${missing} is not set (the Pushgateway needs both)")
        return user, password
    path = env.get("NETRC") or _home_netrc()
    if path is None or not Path(path).is_file():
        return None
    try:
        found = netrc.netrc(path).authenticators(host)
    except netrc.NetrcParseError as exc:
        why = "readable by others" if "permissive" in exc.msg else f"line {exc.lineno}: not netrc"
        raise InputError(f"netrc file {path!r} cannot be used: {why}") from None
    except OSError as exc:
        raise InputError(f"netrc file {path!r} cannot be read: {exc.strerror}") from None
    if found is None or not found[2]:
        return None
    return found[0] or "", found[2]


def _home_netrc() -> str | None:
    try:
        return str(Path.home() / ".netrc")
    except (RuntimeError, KeyError):  # no $HOME and no passwd entry
        return None


def push(body: bytes, url: str, job: str = "gpulab", timeout: float = DEFAULT_TIMEOUT_S) -> None:
    """PUT ``body`` (the Prometheus text format) to the gateway's ``/metrics/job/<job>``
    within ``timeout`` seconds in all; InputError (one line) on any failure."""
    import urllib.request  # here, not at the top: the CLI imports this module for its names

    gw = gateway(url)
    auth = credentials(gw.host)
    req = urllib.request.Request(
        f"{gw.url}/metrics/job/{urllib.parse.quote(job, safe='')}",
        data=body,
        method="PUT",
        headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"},
    )
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode("ascii")
        req.add_unredirected_header("Authorization", f"Basic {token}")
    outcome: dict[str, BaseException] = {}

    def send() -> None:
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                resp.read(MAX_ANSWER_BYTES)
        except BaseException as exc:  # reported by the caller's thread
            outcome["error"] = exc

    # The whole exchange in a thread joined with the deadline: urllib's timeout bounds each
    # socket operation, not their sum (a byte every few seconds would never time out), and
    # not the name lookup. A thread left waiting past the deadline is a daemon: it ends
    # with the command.
    worker = threading.Thread(target=send, name="gpulab-pushgateway", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise InputError(f"--pushgateway {gw.url}: no complete answer within {timeout:g} s")
    if "error" in outcome:
        raise InputError(f"--pushgateway {gw.url}: {_why(outcome['error'])}") from None


def _why(exc: BaseException) -> str:
    """One line saying why a push failed (never a header or a credential)."""
    import http.client
    import urllib.error

    if isinstance(exc, urllib.error.HTTPError):
        try:
            first = exc.read(300).decode("utf-8", "replace").strip().splitlines()
        except (OSError, http.client.HTTPException):
            first = []
        detail = f": {_CONTROL.sub(' ', first[0])[:200]}" if first else ""
        return f"answered {exc.code} {exc.reason}{detail}"
    if isinstance(exc, urllib.error.URLError):
        inner: Any = exc.reason
        if isinstance(inner, BaseException):
            return _why(inner)
        return str(inner)
    if isinstance(exc, http.client.RemoteDisconnected):
        return "closed the connection without an answer"
    if isinstance(exc, http.client.HTTPException | ValueError):
        return f"the answer is not HTTP ({type(exc).__name__})"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc) or type(exc).__name__
    return type(exc).__name__
