"""Pulumi entry point (Pulumi.yaml ``main: infra/``): validate the stack config, then build.

The config is checked before any resource is made; a bad ``gpulab:<key>`` stops the program
with one message naming the key and what it allows.
"""

import sys
from pathlib import Path

# Pulumi runs this directory as a script: its folder lands first on sys.path, where infra/'s
# subpackages (config, ansible, ...) would shadow real top-level modules. Import from the repo.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
if str(_HERE.parent) not in sys.path:
    sys.path.insert(0, str(_HERE.parent))

import pulumi  # noqa: E402

from infra.config import ConfigError, from_pulumi_config  # noqa: E402
from infra.program import run  # noqa: E402

try:
    cfg = from_pulumi_config()
except ConfigError as exc:
    raise pulumi.RunError(f"invalid stack config: {exc}") from None

run(cfg)
