"""The data-source registry of the scenarios: name -> ``source(spec, batch, image_size,
options) -> get_batch``. ``synthetic`` is here from the start; the catalogue registers the
others (``real``) when the scenarios load."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from workloads.synthetic import synthetic_source

DataSource = Callable[[Any, int, "int | None", Mapping[str, Any]], Callable[[], tuple[Any, Any]]]

DATA_SOURCES: dict[str, DataSource] = {"synthetic": synthetic_source}
