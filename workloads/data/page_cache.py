"""Dropping the page cache before a timed run that reads its data from the disk.

A dataset read once stays in the page cache, so the next run reads memory, not the disk, and
a slower (virtual) disk never shows. Before each timed run on real data the runner writes
``3`` to ``/proc/sys/vm/drop_caches`` after a ``sync`` (root only, and not from a container
whose ``/proc/sys`` is read-only); the record says whether it did and why not
(``params.page_cache_dropped``, ``params.page_cache_reason``). ``GPULAB_DROP_CACHES=0`` (or
``off``/``no``/``false``) turns it off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
ENV = "GPULAB_DROP_CACHES"
OFF = ("0", "off", "no", "false")


def drop_page_cache(
    path: Path = DROP_CACHES, environ: Mapping[str, str] | None = None, euid: int | None = None
) -> dict[str, Any]:
    """Drop the page cache (and dentries and inodes) where allowed; the record's params."""
    env = os.environ if environ is None else environ
    if env.get(ENV, "").strip().lower() in OFF:
        return {"page_cache_dropped": False, "page_cache_reason": f"{ENV}={env[ENV]}"}
    uid = os.geteuid() if euid is None else euid
    if uid != 0:
        return {
            "page_cache_dropped": False,
            "page_cache_reason": f"not root (euid {uid}): {path} needs root",
        }
    os.sync()
    try:
        with open(path, "w", encoding="ascii") as fh:
            fh.write("3\n")
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return {"page_cache_dropped": False, "page_cache_reason": f"{path}: {why}"}
    return {"page_cache_dropped": True, "page_cache_reason": f"sync; echo 3 > {path}"}
