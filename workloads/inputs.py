"""Read an input file (a suite, a stack file, a study, published results) or say in one line
why not; parse its YAML or JSON within bounds.

Every reason a read can fail becomes an :class:`InputError` naming the file: missing, a
directory, not a regular file (a FIFO or a device would block or never end), unreadable,
larger than :data:`MAX_INPUT_BYTES`, or not UTF-8 text.

YAML (:func:`load_yaml`, :func:`parse_yaml`: the one loader of every YAML file gpulab reads)
is read by PyYAML's safe loader with three bounds: aliases may not expand the document beyond
:data:`MAX_YAML_VALUES` values (a few hundred bytes of nested aliases otherwise stand for
billions), nesting stops at :data:`MAX_YAML_DEPTH` levels, and a key given twice in one
mapping is refused naming the key and both lines (YAML would silently keep the last one).

JSON within bounds is :mod:`workloads.json_bounded` (no PyYAML there: the runner on a host
imports it with the standard library alone).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from workloads.errors import InputError

MAX_INPUT_BYTES = 16 * 1024 * 1024  # suites, stack files and published results are far smaller
MAX_YAML_VALUES = 100_000  # values of a document with its aliases expanded (the largest: ~3,000)
MAX_YAML_DEPTH = 64  # levels of nesting (the deepest: 8)


def read_input_text(path: str | os.PathLike[str], what: str) -> str:
    """The UTF-8 text of ``path``; ``what`` names it in the error (``suite file``...)."""
    p = Path(path)
    name = f"{what} {str(p)!r}"
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputError(f"{name} cannot be read: it does not exist") from None
    except OSError as exc:
        raise InputError(f"{name} cannot be read: {_reason(exc)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{name} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{name} is not a regular file")
    if st.st_size > MAX_INPUT_BYTES:
        raise InputError(f"{name} is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")
    try:
        # O_NONBLOCK: should the path be swapped for a FIFO after the check, open does not hang
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{name} cannot be read: {_reason(exc)}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{name} is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")
    if b"\0" in data:
        raise InputError(f"{name} is not text (a binary file?)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name} is not UTF-8 text (a binary file?)") from None


def _reason(exc: OSError) -> str:
    from workloads.files import reason

    return reason(exc)


# --- YAML ------------------------------------------------------------------------------------


class _Refused(Exception):
    """A bound of :class:`_BoundedLoader` was hit; the message says which, at which line."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's pure-Python safe loader (its C loader crashes on deep nesting), with an
    expansion budget for aliases, a depth bound and duplicate keys refused."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}  # id(node) -> values it stands for, aliases expanded
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            event: Any = self.peek_event()  # type: ignore[no-untyped-call]
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._sizes:
                raise _Refused(
                    f"line {event.start_mark.line + 1}: alias *{event.anchor} refers to the "
                    "value that holds it (a value without end)"
                )
            return Composer.compose_node(self, parent, index)
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            start: Any = self.peek_event()  # type: ignore[no-untyped-call]
            line = start.start_mark.line + 1
            raise _Refused(f"line {line}: nested deeper than {MAX_YAML_DEPTH} levels")
        node = Composer.compose_node(self, parent, index)
        self._depth -= 1
        if node is None:
            return None
        size = 1
        if isinstance(node, SequenceNode):
            size += sum(self._sizes[id(v)] for v in node.value)
        elif isinstance(node, MappingNode):
            size += sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
            self._check_keys(node)
        if size > MAX_YAML_VALUES:
            raise _Refused(
                f"line {node.start_mark.line + 1}: its aliases expand to more than "
                f"{MAX_YAML_VALUES:,} values (a YAML bomb?)"
            )
        self._sizes[id(node)] = size
        return node

    def _check_keys(self, node: MappingNode) -> None:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # unhashable: the constructor refuses it later
                continue
            if first is not None:
                raise _Refused(
                    f"line {line}: duplicate key {_short(key)} (first at line {first}); "
                    "YAML would keep only the last one"
                )
            seen[key] = line


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def parse_yaml(text: str, name: str) -> Any:
    """The YAML document of ``text`` (``name`` names it in the error: ``suite file 'x.yaml'``),
    within the bounds of the module; InputError (one line) when it is not valid YAML or
    breaks a bound."""
    loader = None
    try:
        loader = _BoundedLoader(text)  # the reader refuses control characters here
        return loader.get_single_data()
    except _Refused as exc:
        raise InputError(f"{name} {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            at = f" at line {mark.line + 1}"
        elif isinstance(exc, yaml.reader.ReaderError):  # a control character: its offset
            at = f" at line {text.count(chr(10), 0, exc.position) + 1}"
        else:
            at = ""
        raise InputError(f"{name} is not valid YAML{at}") from None
    except (ValueError, RecursionError, OverflowError):  # an integer too long to convert
        raise InputError(f"{name} holds a value too large to read") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml(path: str | os.PathLike[str], what: str) -> Any:
    """The YAML document of the file ``path`` (read by :func:`read_input_text`)."""
    return parse_yaml(read_input_text(path, what), f"{what} {str(Path(path))!r}")
