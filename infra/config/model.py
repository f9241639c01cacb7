"""The validator: a stack's raw ``gpulab:*`` values -> :class:`LabConfig`, or every problem.

Each present key is validated by its pydantic type (:class:`infra.config.fields.Key`); a
pydantic error becomes one line, ``gpulab:<key> must be <what it allows>, got <value>`` (never
the value of a secret). Keys a topology does not use, unknown keys (with the nearest known one),
missing required keys and the topology's cross-key rules are checked around it.
"""

from __future__ import annotations

import difflib
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from infra.config.fields import BY_KEY, FIELDS, TOPOLOGIES, Key, LabConfig, default_ssh_user
from infra.config.roles import BadValue
from infra.errors import UsageError
from infra.specs.topology import get as topology_spec

__all__ = ["ConfigError", "LabConfig", "validate"]

# The role input gpulab:vgpu_license_token is handed to (infra.dynamic.measure).
VGPU_TOKEN_INPUT = "nvidia_vgpu_guest_client_token"
# pydantic error types that mean "a bound was exceeded" (an integer's maximum, a length)
_ABOVE = frozenset({"less_than_equal", "too_long", "string_too_long"})


class ConfigError(UsageError):
    """The stack config is invalid. ``problems`` holds one line per bad ``gpulab:<key>``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@cache
def _adapter(key: str) -> TypeAdapter[Any]:
    return TypeAdapter(BY_KEY[key].value)


def _allowed(spec: Key, error: ErrorDetails) -> str:
    """What the key allows, for this pydantic error: a parser's own :class:`BadValue` text when
    it gave one (an item of a list speaks for the list), else the key's :class:`Allowed` text."""
    allowed = spec.allowed
    if error["type"] in _ABOVE and allowed.above:
        return allowed.above
    exc = (error.get("ctx") or {}).get("error")
    if isinstance(exc, BadValue) and not error["loc"] and str(exc):
        return str(exc)
    return allowed.text


def parse(spec: Key, value: Any) -> tuple[Any, str | None]:
    """(the typed value, None) or (None, the problem line) for a present ``value``."""
    try:
        return _adapter(spec.key).validate_python(value), None
    except ValidationError as exc:
        error = exc.errors()[0]
        hide = getattr((error.get("ctx") or {}).get("error"), "hide_value", False)
        got = "" if spec.secret or hide else f", got {_show(value)}"
        return None, f"gpulab:{spec.key} must be {_allowed(spec, error)}{got}"


def _unknown(raw: dict[str, Any], topology: str | None, problems: list[str]) -> None:
    for key in raw:
        if key in BY_KEY:
            if topology and topology not in BY_KEY[key].topologies:
                users = ", ".join(t for t in TOPOLOGIES if t in BY_KEY[key].topologies)
                problems.append(
                    f"gpulab:{key} is not used by topology {topology} (only by {users})"
                )
            continue
        near = difflib.get_close_matches(key, list(BY_KEY), n=1)
        hint = f" (did you mean gpulab:{near[0]}?)" if near else ""
        allowed = sorted(f.key for f in FIELDS if not topology or topology in f.topologies)
        where = f" for {topology}" if topology else ""
        problems.append(
            f"gpulab:{key} is not a known key{hint}; allowed{where}: " + ", ".join(allowed)
        )


def unprepared_envs(prepared: list[str], measured: tuple[str, ...]) -> str | None:
    """The problem when ``gpulab:measure_envs`` (``measured``) names an environment the site
    does not prepare (``prepared``: ``execution_envs`` resolved), else None."""
    extra = [e for e in measured if e not in prepared]
    if not extra:
        return None
    return (
        f"gpulab:measure_envs names {', '.join(extra)}, which gpulab:execution_envs does "
        f"not prepare (it prepares {', '.join(prepared)}): add it there or measure less"
    )


def _check_measure_envs(topology: str, values: dict[str, Any], problems: list[str]) -> None:
    """``gpulab:measure_envs`` may name only what the site prepares (``execution_envs``, else
    the topology's default; aliases are resolved on both sides by then)."""
    from types import SimpleNamespace

    prepared = topology_spec(topology).envs(
        SimpleNamespace(execution_envs=values.get("execution_envs") or (), mode=values.get("mode"))
    )
    problem = unprepared_envs(prepared, values.get("measure_envs") or ())
    if problem:
        problems.append(problem)


def validate(raw: dict[str, Any]) -> LabConfig:
    """Check ``raw`` (keys without the ``gpulab:`` prefix) and build a :class:`LabConfig`.

    Raises :class:`ConfigError` listing every problem; nothing is created before this passes.
    """
    problems: list[str] = []
    topology = raw.get("topology")
    if topology is None:
        problems.append("gpulab:topology is required: one of " + ", ".join(TOPOLOGIES))
    elif topology not in TOPOLOGIES:
        problems.append(
            f"gpulab:topology must be one of {', '.join(TOPOLOGIES)}, got {_show(topology)}"
        )
        topology = None
    _unknown(raw, topology, problems)
    if topology is None:
        raise ConfigError(problems)

    values: dict[str, Any] = {}
    for f in FIELDS:
        if topology not in f.topologies:
            continue
        if raw.get(f.key) is None:
            if topology in f.required:
                problems.append(f"gpulab:{f.key} is required for {topology}: {f.help}")
            default = f.default(topology) if callable(f.default) else f.default
            if default is not None:
                values[f.key] = default
            continue
        value, problem = parse(f, raw[f.key])
        if problem is None:
            values[f.key] = value
        else:
            problems.append(problem)

    if raw.get("ssh_user") is None:  # the login user of the image (template) family
        values["ssh_user"] = default_ssh_user(
            topology, values.get("image") or values.get("template")
        )
    # the topology's own checks across keys (vsphere-gpu modes, magnum-k8s bare metal)
    topology_spec(topology).check_config(raw, values, problems)
    _check_measure_envs(topology, values, problems)
    if values.get("vgpu_license_token") is not None and VGPU_TOKEN_INPUT in (
        values.get("site") or {}
    ):
        problems.append(
            f"gpulab:vgpu_license_token and gpulab:site.{VGPU_TOKEN_INPUT} both set the vGPU "
            "license token: keep one"
        )
    cidr = values.get("admin_cidr")
    if isinstance(cidr, str) and cidr.endswith("/0") and not values.get("allow_world"):
        problems.append(
            f"gpulab:admin_cidr {cidr} opens SSH to the whole internet: name your network, "
            "or set gpulab:allow_world: true to mean it"
        )
    if problems:
        raise ConfigError(problems)
    return LabConfig(**values)
