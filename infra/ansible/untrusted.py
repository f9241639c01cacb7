"""Data for Ansible, never templates: every string gpulab hands to Ansible arrives marked unsafe.

ansible-core 2.19 renders a string as a Jinja template when its source is trusted, and it
trusts every file it is given: ``-e @file`` (``load_extra_vars`` loads it with
``trusted_as_template=True``) and YAML/JSON inventories (the ``yaml`` inventory plugin, the
same). So a ``gpulab:site`` value such as ``{{ lookup('pipe', 'id') }}`` would run on the
controller as soon as a role used it. Every value gpulab passes (stack config, suite and study
names, stack outputs, host fields, facts, secrets) is data: it goes out marked unsafe, as the
two forms Ansible's loaders keep untrusted:

- JSON (extra-vars files, the inventory ansible-runner writes): ``{"__ansible_unsafe": "..."}``,
  decoded by Ansible's legacy JSON profile as a string that is never templated;
- YAML (``gpulab inventory``): the ``!unsafe`` tag on every string.

The only strings left trusted are :class:`Template` instances: fixed expressions gpulab's own
code writes (``{{ ansible_playbook_python }}`` for a local connection). Mapping keys are never
templated by Ansible; they are written as plain keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

UNSAFE_KEY = "__ansible_unsafe"
UNSAFE_TAG = "!unsafe"


class Template(str):
    """A Jinja expression written by gpulab's own code, which Ansible may render. Never built
    from user, cloud or host data."""

    __slots__ = ()


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    return str(value)


def as_unsafe_json(value: Any) -> Any:
    """``value`` with every string (except a :class:`Template`) as ``{"__ansible_unsafe": s}``,
    ready for ``json.dumps``. Mappings and sequences are walked; tuples and sets become lists;
    any other object becomes its ``str``."""
    if isinstance(value, Template):
        return str(value)
    if isinstance(value, str):
        return {UNSAFE_KEY: str(value)}
    if isinstance(value, Mapping):
        return {str(k): as_unsafe_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [as_unsafe_json(v) for v in value]
    scalar = _scalar(value)
    return {UNSAFE_KEY: scalar} if isinstance(scalar, str) else scalar


class _Unsafe(str):
    """A string the YAML dumper writes with the ``!unsafe`` tag."""

    __slots__ = ()


def _tag_strings(value: Any) -> Any:
    if isinstance(value, Template):
        return str(value)
    if isinstance(value, str):
        return _Unsafe(value)
    if isinstance(value, Mapping):
        return {str(k): _tag_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_tag_strings(v) for v in value]
    scalar = _scalar(value)
    return _Unsafe(scalar) if isinstance(scalar, str) else scalar


class _UnsafeDumper(yaml.SafeDumper):
    """SafeDumper that writes :class:`_Unsafe` strings as ``!unsafe "..."`` (always quoted: a
    newline, a leading ``-`` or a ``!tag`` inside the value stays inside the quotes)."""


def _represent_unsafe(dumper: yaml.SafeDumper, data: _Unsafe) -> yaml.ScalarNode:
    return dumper.represent_scalar(UNSAFE_TAG, str(data), style='"')


_UnsafeDumper.add_representer(_Unsafe, _represent_unsafe)


def dump_unsafe_yaml(value: Any) -> str:
    """YAML text of ``value`` in which every string (except a :class:`Template`) carries
    ``!unsafe``; keys are plain (always quoted when YAML would read them as anything else)."""
    return yaml.dump(
        _tag_strings(value),
        Dumper=_UnsafeDumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=False,
        width=1 << 16,
    )
