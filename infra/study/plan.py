"""The order of a study's units (one arm, one repeat): interleaved or randomized with a seed.

Interleaved: repeat 1 of every arm in the file's order, then repeat 2 with the arms rotated by
one, and so on, so no arm always runs first (on a warm or a cold machine). Randomized: every
unit shuffled with ``random.Random(seed)``; the seed is recorded in the journal, so the order
can be replayed and a resumed run keeps it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from infra.study.model import Study


@dataclass(frozen=True, order=True)
class Unit:
    arm: str
    repeat: int  # 1-based

    @property
    def key(self) -> str:
        return f"{self.arm}#{self.repeat}"


def plan(study: Study, seed: int | None = None) -> list[Unit]:
    names = [a.name for a in study.arms]
    if study.order == "interleaved":
        out: list[Unit] = []
        for r in range(study.repeats):
            k = r % len(names)
            out += [Unit(n, r + 1) for n in names[k:] + names[:k]]
        return out
    units = [Unit(n, r + 1) for r in range(study.repeats) for n in names]
    random.Random(seed).shuffle(units)
    return units


def new_seed() -> int:
    return random.SystemRandom().randrange(0, 2**32)
