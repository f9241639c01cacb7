"""The validator: a stack's raw ``gpulab:*`` values -> :class:`LabConfig`, or every problem.

The stack's keys are its topology's (:attr:`infra.topologies.Topology.keys`, from the
registry) and the keys of what every lab measures (:data:`infra.config.fields.RUN_KEYS`). Each
present key is validated by its pydantic type (:class:`infra.keys.key.Key`); a pydantic error
becomes one line, ``gpulab:<key> must be <what it allows>, got <value>`` (never the value of a
secret). Keys a topology does not use, unknown keys (with the nearest known one), missing
required keys and the topology's cross-key rules are checked around it. This is the one
place a stack's values are checked: what comes out is trusted downstream.
"""

from __future__ import annotations

import copy
import difflib
from functools import cache
from types import SimpleNamespace
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from infra.config import site_urls, vendor_check
from infra.config.fields import RUN_KEYS, LabConfig
from infra.errors import UsageError
from infra.keys.key import Key
from infra.keys.types import BadValue
from infra.topologies import Topology, get, registry

__all__ = ["ConfigError", "LabConfig", "all_keys", "keys", "validate"]

# pydantic error types that mean "a bound was exceeded" (an integer's maximum, a length)
_ABOVE = frozenset({"less_than_equal", "too_long", "string_too_long"})


class ConfigError(UsageError):
    """The stack config is invalid. ``problems`` holds one line per bad ``gpulab:<key>``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def keys(spec: Topology) -> tuple[Key, ...]:
    """Every key of a stack of ``spec``: its topology's, then those every lab has."""
    return (*spec.keys, *RUN_KEYS)


def all_keys() -> dict[str, list[tuple[Topology, Key]]]:
    """Every known key -> the topologies that take it (in the registry's order), with theirs."""
    out: dict[str, list[tuple[Topology, Key]]] = {}
    for spec in registry().values():
        for key in keys(spec):
            out.setdefault(key.key, []).append((spec, key))
    return out


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@cache
def _adapter(value: Any) -> TypeAdapter[Any]:
    return TypeAdapter(value)


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
        return _adapter(spec.value).validate_python(value), None
    except ValidationError as exc:
        error = exc.errors()[0]
        hide = getattr((error.get("ctx") or {}).get("error"), "hide_value", False)
        got = "" if spec.secret or hide else f", got {_show(value)}"
        return None, f"gpulab:{spec.key} must be {_allowed(spec, error)}{got}"


def _unknown(raw: dict[str, Any], topology: Topology | None, problems: list[str]) -> None:
    own = {k.key for k in keys(topology)} if topology else set()
    if not set(raw) - own:
        return
    known = all_keys()
    own = own or set(known)
    for key in raw:
        if key in own:
            continue
        if key in known:
            users = ", ".join(spec.name for spec, _ in known[key])
            assert topology is not None
            problems.append(
                f"gpulab:{key} is not used by topology {topology.name} (only by {users})"
            )
            continue
        near = difflib.get_close_matches(key, list(known), n=1)
        hint = f" (did you mean gpulab:{near[0]}?)" if near else ""
        where = f" for {topology.name}" if topology else ""
        problems.append(
            f"gpulab:{key} is not a known key{hint}; allowed{where}: " + ", ".join(sorted(own))
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


def _check_measure_envs(spec: Topology, values: dict[str, Any], problems: list[str]) -> None:
    """``gpulab:measure_envs`` may name only what the site prepares (``execution_envs``, else
    the topology's default; aliases are resolved on both sides by then)."""
    prepared = spec.envs(values.get("execution_envs") or (), SimpleNamespace(**values))
    problem = unprepared_envs(prepared, values.get("measure_envs") or ())
    if problem:
        problems.append(problem)


def validate(raw: dict[str, Any]) -> LabConfig:
    """Check ``raw`` (keys without the ``gpulab:`` prefix) and build a :class:`LabConfig`.

    Raises :class:`ConfigError` listing every problem; nothing is created before this passes.
    """
    problems: list[str] = []
    names = tuple(registry())
    name = raw.get("topology")
    if name is None:
        problems.append("gpulab:topology is required: one of " + ", ".join(names))
    elif name not in names:
        problems.append(f"gpulab:topology must be one of {', '.join(names)}, got {_show(name)}")
    spec = get(name) if name in names else None
    _unknown(raw, spec, problems)
    if spec is None:
        raise ConfigError(problems)

    values: dict[str, Any] = {}
    later: list[Key] = []  # defaults computed from the other values (the login user)
    for f in keys(spec):
        if raw.get(f.key) is None:
            if f.required:
                problems.append(f"gpulab:{f.key} is required for {spec.name}: {f.help}")
            if callable(f.default):
                later.append(f)
            elif f.default is not None:
                values[f.key] = copy.copy(f.default)
            continue
        value, problem = parse(f, raw[f.key])
        if problem is None:
            values[f.key] = value
        else:
            problems.append(problem)
    for f in later:
        values[f.key] = f.default(values)
    # the topology's own checks across keys (vsphere-gpu modes, magnum-k8s bare metal...)
    spec.check_config(raw, values, problems)
    _check_measure_envs(spec, values, problems)
    problems += site_urls.problems(values.get("site") or {})  # hosts the lab hosts look up
    if not problems:  # what gpulab:site makes the GPU roles install, against the vendors' lists
        problems += vendor_check.problems(spec.name, values)
    if problems:
        raise ConfigError(problems)
    own = {k.key for k in spec.keys}
    args = spec.args(**{k: v for k, v in values.items() if k in own})
    return LabConfig(args=args, **{k: v for k, v in values.items() if k not in own})
