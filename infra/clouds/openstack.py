"""OpenStack connection and error handling shared by the Ironic, preflight and audit modules.

Credentials come the way openstacksdk always takes them: ``clouds.yaml`` (``OS_CLOUD`` or the
``cloud`` argument) or ``OS_*`` environment variables. Every failure to talk to the cloud is
turned into a one-line :class:`~infra.clouds.CloudError` that names the service and never holds
a password or token.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from typing import Any

from infra.clouds import guarded, one_line

Connection = Any  # openstack.connection.Connection, or a test double with the same methods


def _secrets() -> list[str]:
    return [
        v
        for k, v in os.environ.items()
        if k in ("OS_PASSWORD", "OS_TOKEN", "OS_APPLICATION_CREDENTIAL_SECRET") and v
    ]


def connect(cloud: str | None = None, **overrides: Any) -> Connection:
    """An openstacksdk connection from clouds.yaml / ``OS_*`` (``cloud`` picks a clouds.yaml entry).

    The connection is lazy; the first API call authenticates, so wrap calls in :func:`guard`.
    """
    import openstack

    with guard("OpenStack configuration"):
        return openstack.connect(cloud=cloud, **overrides)


def guard(what: str) -> contextlib.AbstractContextManager[None]:
    """Turn openstacksdk / keystoneauth failures inside the block into a one-line CloudError."""
    return guarded(what, describe_error)


def describe_error(what: str, exc: BaseException) -> str:
    """One line saying what failed and what to do about it; secrets from the env are masked."""
    from keystoneauth1 import exceptions as ka
    from openstack import exceptions as sdk

    status = getattr(exc, "status_code", None) or getattr(exc, "http_status", None)
    if isinstance(exc, sdk.ConfigException):
        msg = (
            f"{what}: no usable OpenStack cloud configuration ({one_line(exc)}); set OS_CLOUD "
            "to an entry of clouds.yaml or the OS_AUTH_URL/OS_USERNAME/... variables"
        )
    elif isinstance(exc, ka.Unauthorized) or status == 401:
        msg = f"{what}: authentication failed (bad credentials or expired token)"
    elif isinstance(exc, ka.Forbidden) or status == 403:
        msg = f"{what}: permission denied; the project's role lacks this call ({_short(exc)})"
    elif isinstance(exc, ka.ConnectFailure | ka.DiscoveryFailure | ka.ConnectTimeout):
        msg = f"{what}: cannot reach the endpoint ({_endpoint(exc)}): connection refused or down"
    elif isinstance(exc, ka.EndpointNotFound | sdk.NotSupported):
        msg = f"{what}: the service is not in this cloud's catalog ({_short(exc)})"
    elif isinstance(exc, sdk.NotFoundException) or status == 404:
        msg = f"{what}: not found ({_short(exc)})"
    else:
        msg = f"{what}: {type(exc).__name__}: {_short(exc)}"
    return one_line(msg, *_secrets())


def _short(exc: BaseException) -> str:
    return one_line(exc, limit=160)


def _endpoint(exc: BaseException) -> str:
    m = re.search(r"(https?://[^\s:/]+(?::\d+)?)", str(exc))
    return m.group(1) if m else "unknown endpoint"


# ---------------------------------------------------------------------------------- flavors


def normalize_resource_class(resource_class: str) -> str:
    """Placement's name for an Ironic resource class: ``gpu.p100`` -> ``CUSTOM_GPU_P100``."""
    s = re.sub(r"[^A-Z0-9_]", "_", resource_class.strip().upper())
    return s if s.startswith("CUSTOM_") else "CUSTOM_" + s


def baremetal_requirements(extra_specs: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """(custom resource class, required traits) that a bare-metal flavor's extra specs ask for."""
    rc = None
    traits = []
    for key, value in extra_specs.items():
        if key.startswith("resources:CUSTOM_") and str(value).strip() not in ("0", ""):
            rc = key.split(":", 1)[1]
        elif key.startswith("trait:") and str(value).strip().lower() == "required":
            traits.append(key.split(":", 1)[1])
    return rc, sorted(traits)


def parse_pci_alias(spec: str) -> dict[str, int]:
    """``pci_passthrough:alias`` value (``"a100:2"`` or ``"a:1,b:1"``) as {alias: count}."""
    out: dict[str, int] = {}
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, count = part.partition(":")
        try:
            out[name.strip()] = int(count) if count else 1
        except ValueError:
            raise ValueError(
                f"pci_passthrough:alias {spec!r}: count {count!r} is not a number"
            ) from None
    return out
