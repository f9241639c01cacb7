"""What a Fathom-like model builder returns: the model with its synthetic batch and loss."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class FathomWorkload:
    """A built model with its synthetic batch and loss."""

    name: str
    model: Any
    inputs: Any  # a tensor or a list of tensors
    targets: Any
    loss: Callable[[Any, Any], Any]
    unit: str = "samples"
