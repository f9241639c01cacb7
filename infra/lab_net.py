"""What a lab's hosts fetch their packages from and through, checked before anything runs.

The names: the host of every http(s) URL among ``gpulab:site``'s role inputs (the mirrors,
the pip index, the vendor repositories a stack points at) that the hosts reach directly, and
the proxy's own (``gpulab:proxy``); a name behind the proxy is the proxy's to resolve. Each is
named with the key it comes from.

Two places check them, each failure one line naming the key:

- ``gpulab preflight``, before any resource exists: :func:`checks` resolves every name on this
  machine and connects to the proxy from here (the controller usually shares the lab's site
  DNS and proxy; where it does not, the hosts' check below is the one that counts);
- the site play's first role, ``lab_network``, on every host before its first package step:
  the same names and the proxy from the host (:func:`site_variables` hands them over), naming
  the host too.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

from infra.clouds import Check, fail, ok
from infra.config import LabConfig
from infra.config.proxy import bypasses, endpoint, proxy_env
from infra.config.site_urls import site_urls, url_host

CONNECT_TIMEOUT_S = 3.0

Resolver = Callable[[str], list[str]]
Connector = Callable[[str, int, float], None]


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def lab_names(cfg: LabConfig) -> dict[str, str]:
    """Each name the hosts resolve themselves -> the key it comes from: the proxy's, then the
    hosts of ``gpulab:site``'s URLs they reach directly (addresses need no resolving)."""
    names: dict[str, str] = {}
    if cfg.proxy:
        for field in ("http", "https"):
            host, _ = endpoint(cfg.proxy[field])
            if not _is_address(host):
                names.setdefault(host, f"gpulab:proxy.{field}")
    for key, url in site_urls(cfg.site).items():
        site_host = url_host(url)  # validation refused any other host
        if site_host and not _is_address(site_host) and bypasses(site_host, cfg.proxy):
            names.setdefault(site_host, f"gpulab:site.{key}")
    return names


def site_variables(cfg: LabConfig) -> dict[str, Any]:
    """The site run's variables for the network: ``gpulab_proxy_env`` (every host play's
    environment) and ``gpulab_lab_names`` (what ``lab_network`` resolves), each only when
    there is something in it, so a stack without them hands the site run what it did."""
    out: dict[str, Any] = {}
    env = proxy_env(cfg.proxy)
    if env:
        out["gpulab_proxy_env"] = env
    names = lab_names(cfg)
    if names:
        out["gpulab_lab_names"] = names
    return out


def _resolve(name: str) -> list[str]:
    infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def _connect(host: str, port: int, timeout: float) -> None:
    with socket.create_connection((host, port), timeout=timeout):
        pass


def checks(
    cfg: LabConfig, *, resolve: Resolver = _resolve, connect: Connector = _connect
) -> list[Check]:
    """From this machine: each name of :func:`lab_names` resolves, and the proxy answers."""
    rows: list[Check] = []
    for name, key in lab_names(cfg).items():
        row = f"name {name}"
        try:
            found = resolve(name)
        except (OSError, UnicodeError) as exc:
            rows.append(
                fail(
                    row,
                    f"does not resolve on this machine ({key}): {exc}",
                    f"check the name in {key}; the site play resolves it again on each host "
                    "(gpulab:dns_nameservers gives a subnet the lab makes its DNS servers)",
                )
            )
            continue
        rows.append(ok(row, f"{', '.join(found[:3])} ({key})"))
    if cfg.proxy:
        for url in dict.fromkeys((cfg.proxy["http"], cfg.proxy["https"])):
            host, port = endpoint(url)
            row = f"proxy {url}"
            try:
                connect(host, port, CONNECT_TIMEOUT_S)
            except OSError as exc:
                reason = str(exc) or type(exc).__name__
                rows.append(
                    fail(
                        row,
                        f"does not answer from this machine (gpulab:proxy): {reason}",
                        "check gpulab:proxy (host, port) and that the proxy runs; the site "
                        "play checks it again from each host before any package step",
                    )
                )
                continue
            rows.append(ok(row, f"answers at {host}:{port} (gpulab:proxy)"))
    return rows
