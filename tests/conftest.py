"""Root test configuration: loads every real-part plugin under tests/parts/."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = sorted(
    f"tests.parts.{p.stem}" for p in (Path(__file__).parent / "parts").glob("fixtures_*.py")
)
