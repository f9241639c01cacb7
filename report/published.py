"""The published numbers: workloads/reference/published-results.yaml, read into plain data.

Figure keys ``fig<N>_<experiment>_<metric>`` map to a suite experiment and a record metric:
``fig6_distributed_synthetic_images_per_sec`` -> experiment ``distributed_synthetic``, metric
``images_per_sec``. A value ``{approx: [lo, hi]}`` is a range; a plain number is ``(v, v)``.
Normalized values divide by the same model's ``bm`` value (a range over a range gives the
widest quotient: ``[lo / bm_hi, hi / bm_lo]``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workloads.errors import InputError
from workloads.inputs import load_yaml
from workloads.paths import PACKAGES_DIR

DEFAULT_PATH = PACKAGES_DIR / "workloads" / "reference" / "published-results.yaml"
FIG_KEY = re.compile(r"^fig(\d+)_(.+)_(images_per_sec|elapsed_s)$")

Range = tuple[float, float]


@dataclass(frozen=True)
class Figure:
    paper: str
    key: str
    number: int
    experiment: str
    metric: str
    values: dict[str, dict[str, Range]]  # setting -> model -> (lo, hi)

    def normalized(self) -> dict[str, dict[str, Range]]:
        out: dict[str, dict[str, Range]] = {}
        base = self.values.get("bm", {})
        for setting, models in self.values.items():
            for model, (lo, hi) in models.items():
                if model not in base:
                    continue
                blo, bhi = base[model]
                if setting == "bm":
                    out.setdefault(setting, {})[model] = (1.0, 1.0)
                else:
                    out.setdefault(setting, {})[model] = (lo / bhi, hi / blo)
        return out


@dataclass
class Published:
    papers: dict[str, dict[str, Any]]
    figures: list[Figure] = field(default_factory=list)
    claim_texts: dict[str, str] = field(default_factory=dict)  # "paper/id" -> text

    def figure_for(self, experiment: str, metric: str) -> Figure | None:
        for fig in self.figures:
            if fig.experiment == experiment and fig.metric == metric:
                return fig
        return None


def parse_value(raw: Any, where: str) -> Range:
    if isinstance(raw, bool):
        raise InputError(f"published value at {where} is not a number: {raw!r}")
    if isinstance(raw, int | float):
        return (float(raw), float(raw))
    if isinstance(raw, dict) and set(raw) == {"approx"}:
        rng = raw["approx"]
        if (
            isinstance(rng, list)
            and len(rng) == 2
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in rng)
            and rng[0] <= rng[1]
        ):
            return (float(rng[0]), float(rng[1]))
    raise InputError(f"published value at {where} is neither a number nor {{approx: [lo, hi]}}")


def load_published(path: str | os.PathLike[str] | None = None) -> Published:
    p = Path(path) if path else DEFAULT_PATH
    data = load_yaml(p, "published results")  # bounded: aliases, depth, duplicate keys
    if not isinstance(data, dict):
        raise InputError(f"published results {str(p)!r} is not a mapping of papers")
    pub = Published(papers=data)
    for paper, body in data.items():
        if not isinstance(body, dict):
            continue
        for claim in body.get("claims") or []:
            if isinstance(claim, dict) and "id" in claim:
                pub.claim_texts[f"{paper}/{claim['id']}"] = str(claim.get("text", ""))
        for key, settings in (body.get("figures") or {}).items():
            m = FIG_KEY.match(key)
            if not m or not isinstance(settings, dict):
                raise InputError(f"published figure key {paper}.figures.{key} is not understood")
            values = {
                s: {
                    mod: parse_value(v, f"{paper}.figures.{key}.{s}.{mod}") for mod, v in ms.items()
                }
                for s, ms in settings.items()
            }
            pub.figures.append(Figure(paper, key, int(m.group(1)), m.group(2), m.group(3), values))
            pub.claim_texts[f"{paper}/{key}"] = (
                f"Figure {m.group(1)}: {m.group(3)} of {m.group(2)} per setting and model, "
                "normalized to bare metal"
            )
    return pub
