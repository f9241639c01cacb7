"""``gpulab:proxy``: the HTTP/HTTPS proxy a lab's hosts reach their package sources through.

A stack names it as a mapping::

    gpulab:proxy:
      http: http://proxy.lab.example:3128        # required
      https: http://proxy.lab.example:3128       # default: http's
      no_proxy: [.lab.example, 10.0.0.0/8]       # reached directly (plus localhost)

:func:`p_proxy` checks it (a :class:`BadValue` names what is wrong); :func:`proxy_env` is the
environment every package, pip and download step of the site run gets (both spellings of each
variable: curl, apt and pip read the lower-case ones, Go programs such as dockerd the
upper-case ones); :func:`bypasses` says whether a name is reached directly.

A proxy URL is ``http(s)://host[:port]`` only: no user or password (it would be in every
task's environment, which Ansible shows), no path, and only characters that need no quoting
in a systemd unit or a shell (letters, digits, ``. _ ~ : / [ ] -``).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

from infra.keys.types import BadValue, maybe_json

SAFE_URL_RE = re.compile(r"^[A-Za-z0-9._~:/\[\]-]{1,255}$")
NO_PROXY_ITEM_RE = re.compile(r"^[A-Za-z0-9._*:/\[\]-]{1,255}$")
ALWAYS_DIRECT = ("localhost", "127.0.0.1", "::1")  # added to every no_proxy
MAX_NO_PROXY = 64
KEYS = ("http", "https", "no_proxy")
DEFAULT_PORT = {"http": 80, "https": 443}

WHAT = (
    "a mapping with http (the proxy's URL, http://host:port), optionally https (default: "
    "http's) and no_proxy (a list of names, .domains, addresses or CIDRs reached directly)"
)


def _url(field: str, raw: Any) -> str:
    """A proxy URL, normalized to ``scheme://host[:port]``."""
    if isinstance(raw, str) and "@" in raw:
        raise BadValue(
            f"{WHAT}; {field} holds a user or password: a proxy that asks for one cannot "
            "be used (the URL is in every task's environment, which Ansible shows)",
            hide_value=True,
        )
    if not isinstance(raw, str) or not SAFE_URL_RE.match(raw.strip()):
        raise BadValue(
            f"{WHAT}; {field} must be an http(s)://host[:port] URL of letters, digits and "
            ". _ ~ : / [ ] -",
            hide_value=True,
        )
    parts = urlsplit(raw.strip())
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (
        parts.scheme not in DEFAULT_PORT
        or not parts.hostname
        or port == -1
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise BadValue(f"{WHAT}; {field} must be an http(s)://host[:port] URL")
    return f"{parts.scheme}://{parts.netloc}"


def _no_proxy(raw: Any) -> list[str]:
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple) or len(items) > MAX_NO_PROXY:
        raise BadValue(f"{WHAT}; no_proxy must be a list of at most {MAX_NO_PROXY} entries")
    out: list[str] = []
    for item in items:
        text = item.strip() if isinstance(item, str) else ""
        if not NO_PROXY_ITEM_RE.match(text):
            raise BadValue(
                f"{WHAT}; no_proxy entry {str(item)[:60]!r} is not a name, .domain, address or CIDR"
            )
        if text not in out:
            out.append(text)
    return out


def p_proxy(raw: Any) -> dict[str, Any]:
    """``gpulab:proxy`` as ``{"http": URL, "https": URL, "no_proxy": [...]}``."""
    raw = maybe_json(raw)
    if not isinstance(raw, dict):
        raise BadValue(WHAT)
    unknown = [str(k)[:60] for k in raw if k not in KEYS]
    if unknown:
        raise BadValue(f"{WHAT}; {unknown[0]!r} is not one of {', '.join(KEYS)}")
    if raw.get("http") is None:
        raise BadValue(f"{WHAT}; http is required")
    http = _url("http", raw["http"])
    https = _url("https", raw["https"]) if raw.get("https") is not None else http
    no_proxy = _no_proxy(raw["no_proxy"]) if raw.get("no_proxy") is not None else []
    return {"http": http, "https": https, "no_proxy": no_proxy}


def direct(proxy: dict[str, Any]) -> list[str]:
    """Every name reached without the proxy: ``no_proxy`` and :data:`ALWAYS_DIRECT`."""
    return [
        *proxy.get("no_proxy", []),
        *(d for d in ALWAYS_DIRECT if d not in proxy.get("no_proxy", [])),
    ]


def proxy_env(proxy: dict[str, Any]) -> dict[str, str]:
    """The environment of the site run's tasks for ``proxy`` (empty without one)."""
    if not proxy:
        return {}
    no_proxy = ",".join(direct(proxy))
    return {
        "http_proxy": proxy["http"],
        "HTTP_PROXY": proxy["http"],
        "https_proxy": proxy["https"],
        "HTTPS_PROXY": proxy["https"],
        "no_proxy": no_proxy,
        "NO_PROXY": no_proxy,
    }


def endpoint(url: str) -> tuple[str, int]:
    """(host, port) of a proxy URL (the scheme's port when it names none)."""
    parts = urlsplit(url)
    assert parts.hostname
    return parts.hostname, parts.port or DEFAULT_PORT[parts.scheme]


def bypasses(name: str, proxy: dict[str, Any]) -> bool:
    """Whether a request to ``name`` goes directly, not through ``proxy`` (no proxy: yes):
    an entry equal to the name, a ``.domain`` or ``domain`` it ends in, ``*``, or a CIDR
    holding the address it is."""
    if not proxy:
        return True
    host = name.lower().strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in direct(proxy):
        e = entry.lower().strip("[]").lstrip(".")  # as curl reads it: .domain = domain
        if e == "*" or host == e or host.endswith("." + e):
            return True
        if address is not None and "/" in e:
            try:
                if address in ipaddress.ip_network(e, strict=False):
                    return True
            except ValueError:
                continue
    return False
