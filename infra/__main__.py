"""Pulumi entry point (Pulumi.yaml ``main: infra/``): validate the stack config, then build.

The config is checked before any resource is made; a bad ``gpulab:<key>`` stops the program
with one message naming the key and what it allows.
"""

import pulumi

from infra.config import ConfigError, from_pulumi_config
from infra.dynamic import measure
from infra.program import run

try:
    cfg = from_pulumi_config()
except ConfigError as exc:
    raise pulumi.RunError(f"invalid stack config: {exc}") from None

# topology -> AnsibleRun(site.yml) -> WorkloadRun(s) -> exports provision, results
measure(cfg, *run(cfg))
