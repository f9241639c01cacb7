"""Pulumi entry point. Pulumi.yaml has no ``main:``: the Python language host runs this
directory (the repository root) as ``__main__``, so ``infra`` and ``workloads`` import from
here, and the dynamic-provider host starts in the same directory with the same ``.venv``.

The stack config is checked before any resource is made; a bad ``gpulab:<key>`` stops the
program with one message naming the key and what it allows.
"""

import pulumi

from infra.config import ConfigError, from_pulumi_config
from infra.program import run

try:
    cfg = from_pulumi_config()
except ConfigError as exc:
    raise pulumi.RunError(f"invalid stack config: {exc}") from None

run(cfg)
