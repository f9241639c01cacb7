"""Pulumi entry point. Pulumi.yaml has no ``main:``: the Python language host runs this
directory (the repository root) as ``__main__``, so ``infra`` and ``workloads`` import from
here, and the dynamic-provider host starts in the same directory with the same ``.venv``.

The stack config is checked before any resource is made; a bad ``gpulab:<key>`` stops the
program with one message naming the key and what it allows, and so does a host that cannot be
reached (a key file ssh refuses, a bastion that refuses, a listed machine that does not answer).
"""

import pulumi

from infra.config import ConfigError, from_pulumi_config
from infra.errors import UsageError
from infra.program import run

try:
    cfg = from_pulumi_config()
except ConfigError as exc:
    raise pulumi.RunError(f"invalid stack config: {exc}") from None

try:
    run(cfg)
except UsageError as exc:
    raise pulumi.RunError(str(exc)) from None
