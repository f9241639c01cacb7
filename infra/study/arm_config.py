"""An arm's ``config``: the stack keys one arm of a study sets over its stack's, so that the
factors of a paper (the vGPU study's scheduling policy, profile, knowledge-worker VMs) are arms
of one stack file instead of one hand-written stack file each.

The arm measures a copy of its stack file (``Pulumi.study-<study>-<arm>.yaml``, the copied
stacks' name rule of :mod:`infra.study.model`) with the keys set; ``null`` removes a key. Its
lab gets a name of its own, ``<lab>-<arm>`` (unless the config sets ``lab``), so the labs of
two arms never share VM or resource names. Refused, with the key named: a key no topology has,
a key the study sets for each unit (``suite``, ``execution_envs``, ``measure_envs``,
``measure_id``, ``workload_variables``) or the stack decides (``topology``), a secret (it
stays encrypted in the stack file), and any value the stack's own validation refuses (only
the problems the config adds: a stack file still holding an example's placeholders is the
user's to fill in, as for a plain ``stack`` arm).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

# stack keys the study sets itself for each unit, or that make another kind of arm
NOT_ARM_CONFIG = (
    "topology",
    "suite",
    "execution_envs",
    "measure_envs",
    "measure_id",
    "workload_variables",
)
MAX_CONFIG_KEYS = 64
Config = tuple[tuple[str, Any], ...]


class ArmConfigError(ValueError):
    """``key``: the part after ``arms[i].config`` (``""`` or ``.<key>``); ``what``: why."""

    def __init__(self, key: str, what: str) -> None:
        super().__init__(f"config{key}: {what}")
        self.key, self.what = key, what


def arm_stack_config(raw: Mapping[str, Any], config: Config) -> dict[str, Any]:
    """A stack's ``gpulab`` keys with an arm's ``config`` over them (None removes a key)."""
    out = dict(raw)
    for key, value in config:
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def parse_config(raw: Any, path: Path, arm: str) -> Config:
    """The arm's ``config`` (with its own ``lab``) over the stack file ``path``; ArmConfigError."""
    from infra.config import ConfigError, raw_from_stack_file, validate
    from infra.config.model import all_keys
    from infra.keys.types import LAB_RE

    if not isinstance(raw, Mapping) or not raw or len(raw) > MAX_CONFIG_KEYS:
        raise ArmConfigError(
            "",
            f"a mapping of 1 to {MAX_CONFIG_KEYS} gpulab keys (without the gpulab: prefix) "
            "to values; null removes a key",
        )
    known = all_keys()
    for key in raw:
        if not isinstance(key, str) or key not in known:
            raise ArmConfigError(f".{key}", "not a gpulab stack key (docs/topologies.md)")
        if key in NOT_ARM_CONFIG:
            why = "the arm's stack decides it" if key == "topology" else "the study sets it"
            raise ArmConfigError(f".{key}", f"{why} for each unit; not an arm's config")
        if any(k.secret for _, k in known[key]):
            raise ArmConfigError(f".{key}", "a secret: keep it in the stack file, encrypted")
    base = raw_from_stack_file(path)
    config: Config = tuple((str(k), v) for k, v in raw.items())
    if "lab" not in raw:
        lab = f"{base.get('lab')}-{arm}"
        if not isinstance(base.get("lab"), str) or not LAB_RE.match(lab):
            raise ArmConfigError(
                ".lab",
                f"the arm's own lab name {lab!r} is not one (2-32 characters: a-z, 0-9, '-'): "
                "set config.lab",
            )
        config += (("lab", lab),)

    def problems(values: dict[str, Any]) -> list[str]:
        try:
            validate(values)
        except ConfigError as exc:
            return list(exc.problems)
        return []

    before = problems(dict(base))
    added = [p for p in problems(arm_stack_config(base, config)) if p not in before]
    if added:
        raise ArmConfigError("", "; ".join(added))
    return config
