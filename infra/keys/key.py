"""A ``gpulab:<key>``, and how a key table (a dataclass of annotated fields) is read."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, get_type_hints

from infra.keys.types import Allowed


@dataclass(frozen=True)
class Key:
    """One ``gpulab:<key>``: ``value`` (the pydantic type a present value is validated as),
    ``help``, ``required`` (in a stack of the topology whose table holds it), ``default``: its
    value when absent (a callable gets the values read so far, after every other key),
    ``modes``: the ``gpulab:mode`` values that use it (empty: all), ``secret``."""

    value: Any
    help: str
    required: bool = False
    default: Any = None
    modes: frozenset[str] = frozenset()
    secret: bool = False
    key: str = ""  # the field's name, set when the table is read

    @property
    def allowed(self) -> Allowed:
        return next(m for m in reversed(self.value.__metadata__) if isinstance(m, Allowed))

    def but(self, **changes: Any) -> Key:
        """The same key as another table holds it (required there, another default...)."""
        return replace(self, **changes)


def K(value: Any, help: str, required: bool = False, **kw: Any) -> Key:
    """A :class:`Key` (a short name: the key tables' lines stay short)."""
    return Key(value, help, required, **kw)


_READ: dict[type, tuple[Key, ...]] = {}  # each table is read once


def keys_of(table: type) -> tuple[Key, ...]:
    """The keys of ``table``, a dataclass whose fields are annotated ``Annotated[type, Key]``,
    in field order (a subclass's own fields after its bases'), each with its name."""
    if table not in _READ:
        hints = get_type_hints(table, include_extras=True)
        _READ[table] = tuple(
            replace(key, key=name)
            for name, hint in hints.items()
            for key in getattr(hint, "__metadata__", ())
            if isinstance(key, Key)
        )
    return _READ[table]
