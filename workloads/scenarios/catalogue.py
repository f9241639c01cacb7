"""Registers the workload catalogue in the runner's registries.

Scenarios: ``distributed``, ``shared``, ``sharing``, ``mnist_epochs``, ``kernel`` (DeepBench
kernels; the entry's model names the kernel), ``fathom`` (Fathom models). Data source: ``real``
(ImageNet-format TFRecord shards). Called once from ``workloads/scenarios/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any


def _lazy(module: str, attr: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(module), attr)(*args, **kwargs)

    call.__name__ = f"{module}.{attr}"
    return call


def register_all(register: Callable[..., None], data_sources: MutableMapping[str, Any]) -> None:
    from workloads import fathom, kernels
    from workloads.scenarios import distributed, mnist_epochs, shared, sharing

    register("distributed", distributed.run, distributed.check_options)
    # shared and sharing measure only in child jobs: no framework import of their own
    register("shared", shared.run, shared.check_options, measured_in_children=True)
    register("sharing", sharing.run, sharing.check_options, measured_in_children=True)
    register("mnist_epochs", mnist_epochs.run, mnist_epochs.check_options, mnist_epochs.model_names)
    register("kernel", kernels.run, kernels.check_options, kernels.model_names)
    register("fathom", fathom.run, fathom.check_options, fathom.model_names)
    data_sources["real"] = _lazy("workloads.data.sources", "real_source")
