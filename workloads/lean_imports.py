"""Optional packages that a measuring process never uses, kept from being imported.

TensorFlow imports JAX when it is installed (``tensorflow.lite.python.util``: ``try: from jax
import jit``) and Keras imports ``matplotlib.pyplot`` (``keras.src.visualization``: ``try:
import matplotlib.pyplot``); both treat an ImportError as "not installed". A measuring process
(``python -m workloads _measure``) uses neither unless its backend is JAX, yet both are
installed beside TensorFlow in gpulab's own venv (the JAX backend, the report's figures), and
their import is about 0.8 s of CPU per process: TensorFlow and Keras imported with them 2.9 s,
without them 2.1 s (user + system, a 2-core CPU, 5 alternating runs each). ``None`` in
``sys.modules`` is Python's documented way to make an import raise ImportError.
"""

from __future__ import annotations

import sys

NOT_USED: dict[str, tuple[str, ...]] = {
    "tensorflow": ("jax", "matplotlib"),
    "jax": ("matplotlib",),
    "torch": ("matplotlib",),
}


def keep_out(backend: str) -> list[str]:
    """Keep the packages ``backend``'s measurements never use from being imported in this
    process (call before the framework is imported); the names kept out. A package already
    imported is left alone."""
    kept = []
    for name in NOT_USED.get(backend, ()):
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]
            kept.append(name)
    return kept
