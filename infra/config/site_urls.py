"""The http(s) URLs among ``gpulab:site``'s role inputs (mirrors, pip index, vendor
repositories), and the check that each names a host the lab's hosts can look up.

Their host names reach the hosts as data (the ``lab_network`` role resolves each with
``getent``), so validation refuses a host that is neither an IP address nor a DNS name
(a leading ``-``, a space, a template), one line naming the key.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

# One label of a DNS name (RFC 1123; '_' as internal zones use it).
_LABEL_RE = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")


def site_urls(site: dict[str, Any]) -> dict[str, str]:
    """``gpulab:site`` key -> its value, for each plain http(s) URL among its role inputs."""
    return {
        key: value
        for key, value in site.items()
        if isinstance(value, str) and value.lower().startswith(("http://", "https://"))
    }


def is_host(name: str) -> bool:
    """An IP address or a DNS name (no leading '-', no space, at most 253 characters)."""
    try:
        ipaddress.ip_address(name.strip("[]"))
        return True
    except ValueError:
        pass
    name = name[:-1] if name.endswith(".") else name
    return 0 < len(name) <= 253 and all(_LABEL_RE.match(label) for label in name.split("."))


def url_host(url: str) -> str | None:
    """The host of an http(s) URL, None when it names none or one that :func:`is_host`
    refuses."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host if host and is_host(host) else None


def problems(site: dict[str, Any]) -> list[str]:
    """One line per ``gpulab:site`` URL whose host is not an address or a DNS name."""
    return [
        f"gpulab:site.{key} must be an http(s) URL whose host is a DNS name or an IP address, "
        f"got {url[:80]!r}"
        for key, url in site_urls(site).items()
        if url_host(url) is None
    ]
