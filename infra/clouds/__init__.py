"""Cloud calls that Pulumi's providers cannot express: Ironic node readiness, vGPU attach,
preflight checks and teardown audits. One module per cloud, used by dynamic resources and by
the CLI alike; every function takes plain parameters and a connection.

- :mod:`infra.clouds.ironic`: bare-metal node readiness, ``manageable -> available``, node audit.
- :mod:`infra.clouds.openstack`: connection, preflight (image, flavor, PCI alias, network,
  quotas, Magnum) and teardown audit (servers, ports, floating IPs, volumes, security groups,
  clusters).
- :mod:`infra.clouds.vsphere`: connection, GPU hosts, vGPU attach/detach, VM audit.

Checks come back as :class:`Check` rows; failures to talk to a cloud raise :class:`CloudError`,
whose message is one line and never holds a credential.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Check:
    """One row of a preflight or audit table."""

    name: str
    passed: bool
    detail: str
    fix: str = ""


class CloudError(RuntimeError):
    """A cloud could not be reached or refused us: one line, no credentials in it."""


def ok(name: str, detail: str) -> Check:
    return Check(name, True, detail)


def fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, False, detail, fix)


def connected(name: str, make: Callable[[], Any], fix: str) -> tuple[Any, list[Check]]:
    """(connection, []) or (None, one failing row ``name`` saying what went wrong and ``fix``)."""
    try:
        return make(), []
    except CloudError as exc:
        return None, [fail(name, str(exc), fix)]


@contextlib.contextmanager
def guarded(what: str, describe: Callable[[str, Exception], str | None]) -> Iterator[None]:
    """A failure inside the block as a one-line :class:`CloudError`: ``describe(what, exc)``
    says what failed (``None``: not the cloud's failure, raised as it is). Each cloud's
    ``guard`` is this with its own ``describe``."""
    try:
        yield
    except CloudError:
        raise
    except Exception as exc:
        line = describe(what, exc)
        if line is None:
            raise
        raise CloudError(line) from None


def one_line(text: object, *secrets: str | None, limit: int = 300) -> str:
    """``text`` on one line, each non-empty secret replaced by ``***``, at most ``limit`` chars."""
    s = " ".join(str(text).split())
    for secret in secrets:
        if secret:
            s = s.replace(secret, "***")
    return s if len(s) <= limit else s[: limit - 3] + "..."
