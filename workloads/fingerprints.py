"""A fingerprint kept once per record file, named by its content in every record (schema 3).

A fingerprint (workloads.fingerprint.collect: GPU, driver, VM and container detection,
software; about 2 KB) is the same for every measurement a host makes, so writing it into
every record made it most of a record file's bytes. Since schema 3:

* every record with a fingerprint carries ``fingerprint_ref``, the content address of the
  fingerprint: ``sha256:`` and the SHA-256 of its canonical JSON (:func:`ref_of`: keys
  sorted, no spaces, ASCII), so the same fingerprint has the same reference on every host;
* the writer (workloads.records.RecordWriter) writes the fingerprint itself only in the
  first record it writes to a file that carries it (:class:`Inliner`); the later ones carry
  the reference alone. A records file copied alone is still whole, and files fetched from
  several hosts into one directory each hold their own fingerprints;
* every reader puts the fingerprint back into each record that names it (:func:`resolve`):
  the one carried by the first record of the inputs, in their order, that carries it with
  that reference. A reference that no record of the inputs carries leaves its records
  without a fingerprint, with one note per file (:func:`missing_notes`), never an error.

Records of schema 1 and 2 carry their fingerprint in full and no reference; they read as
before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

REF = "fingerprint_ref"
PREFIX = "sha256:"


def canonical(fp: Mapping[str, Any]) -> bytes:
    """The bytes a fingerprint's reference is the hash of: its JSON with keys sorted, no
    spaces and ASCII only (a value JSON cannot hold is written as its ``str``, as the
    writer writes it)."""
    text = json.dumps(fp, sort_keys=True, separators=(",", ":"), allow_nan=False, default=str)
    return text.encode("ascii")


def ref_of(fp: Mapping[str, Any]) -> str:
    """``sha256:<64 hex digits>`` of the fingerprint's canonical JSON."""
    return PREFIX + hashlib.sha256(canonical(fp)).hexdigest()


class Inliner:
    """The writer's side: which fingerprints a record file already holds in full."""

    def __init__(self) -> None:
        self._held: set[str] = set()

    def stored(self, rec: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """(the record as written, the reference to :meth:`held` once it is on disk).

        A record with a fingerprint gets its ``fingerprint_ref``; the fingerprint itself is
        left out where the file holds it already. ``rec`` is not changed."""
        fp = rec.get("fingerprint")
        if not isinstance(fp, dict):
            return rec, None
        ref = ref_of(fp)
        out = {**rec, REF: ref}
        if ref in self._held:
            del out["fingerprint"]
            return out, None
        return out, ref

    def held(self, ref: str | None) -> None:
        """The record carrying ``ref`` in full is written and synced."""
        if ref is not None:
            self._held.add(ref)

    def forget(self) -> None:
        """The file was cut (a torn tail moved aside): write each fingerprint again."""
        self._held.clear()


def resolve(records: Iterable[dict[str, Any]]) -> None:
    """Put the fingerprint back into each record that names one by ``fingerprint_ref``
    without carrying it, from the first record of ``records`` that carries it (the records
    share that one dict: readers do not change a fingerprint). Records whose reference no
    record carries stay without a fingerprint (:func:`missing_notes`)."""
    records = list(records)
    carried: dict[str, dict[str, Any]] = {}
    for rec in records:
        ref, fp = rec.get(REF), rec.get("fingerprint")
        if isinstance(ref, str) and isinstance(fp, dict):
            carried.setdefault(ref, fp)
    if not carried:
        return
    for rec in records:
        ref = rec.get(REF)
        if isinstance(ref, str) and "fingerprint" not in rec and ref in carried:
            rec["fingerprint"] = carried[ref]


def unresolved(rec: Mapping[str, Any]) -> bool:
    """Whether ``rec`` names a fingerprint that it does not carry (after :func:`resolve`)."""
    return isinstance(rec.get(REF), str) and "fingerprint" not in rec


def missing_note(where: str, count: int) -> str:
    """The note for ``count`` records of the file ``where`` whose fingerprint is missing."""
    return (
        f"{where}: {count} record(s) name a fingerprint ({REF}) that no record of the "
        "inputs carries; read without it (the file that holds it in full is not among the "
        "inputs: read the whole results directory)"
    )


def missing_notes(records: Iterable[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """One :func:`missing_note` per file (``(file, record)`` pairs, in order) holding
    records whose fingerprint is missing after :func:`resolve`."""
    counts: dict[str, int] = {}
    for where, rec in records:
        if unresolved(rec):
            counts[where] = counts.get(where, 0) + 1
    return [missing_note(f, n) for f, n in counts.items()]
