"""Rows built directly for the claim checks' tests (test_claim_verdicts.py, test_relations.py):
each case states the per-unit values it judges."""

from __future__ import annotations

import math
from typing import Any

from report import relations as R
from report.decide import Item
from report.intervals import LINEAR, LOG, estimate
from report.mapping import Arm
from report.stats import summarize
from report.table import GroupKey, Row, Table

BM = Arm("ironic-bm", "native")
VM = Arm("nova-pci", "native")
VM2 = Arm("nova-pci", "other")
CVM = Arm("nova-pci", "docker")
CBM = Arm("magnum-k8s", "container-bm")
SETTINGS = {BM: "bm", VM: "vm", VM2: "vm", CVM: "cvm", CBM: "cbm"}
TIGHT = [1.0, 1.001, 0.999, 1.0, 1.0]  # an interval of about +-0.002 around 1.0


def item(values: list[float], lo: float = -math.inf, hi: float = math.inf, **kw: Any) -> Item:
    return Item("x", estimate(values, LINEAR), lo, hi, **kw)


def row(
    arm: Arm,
    judged: list[float] | dict[str, float],
    *,
    metric: str = "images_per_sec",
    model: str = "resnet50",
    experiment: str = "single_synthetic",
    suite: str = "closer2018",
    batch: int = 32,
    variant: str = "",
    raw: list[float] | dict[str, float] | None = None,
    study: bool = True,
) -> Row:
    """A row whose judged per-unit values (slots "0", "1", ...) are ``judged``: the normalized
    values of an absolute metric, the values themselves of a relative one."""
    per = judged if isinstance(judged, dict) else {str(i): v for i, v in enumerate(judged)}
    own = raw if raw is not None else [100.0 * v for v in per.values()]
    units = own if isinstance(own, dict) else dict(zip(per, own, strict=True))
    relative = metric.endswith(("_ratio", "_degradation"))
    key = GroupKey(suite, f"{experiment}-{model}", model, "single", "synthetic", batch, variant)
    r = Row(key, arm, SETTINGS[arm], metric, summarize(list(units.values()), "k"))
    r.units = dict(per) if relative else units
    r.norm_units = {} if relative else dict(per)
    r.est = estimate(per.values(), LINEAR if relative else LOG)
    r.study = study
    return r


def table(*rows: Row) -> Table:
    return Table(rows=list(rows), baseline=BM, settings=SETTINGS)


UNK = Arm("local", "native")  # a setting the papers do not name
SETTINGS[UNK] = "unknown"


def decoys(rows: list[Row], *kinds: str) -> list[Row]:
    """Rows a check must not read, each placed before the row it imitates (where the check
    did not filter them out, it would take them): ``suite`` the same group from another
    suite (wins a pick without the paper's suite preferred), ``experiment`` another
    experiment, ``model`` a model the check does not name, ``setting`` an unnamed setting."""
    out: list[Row] = []
    for r in rows:
        for kind in kinds:
            d = row(
                {"setting": UNK}.get(kind, r.arm),
                {s: v * 0.5 for s, v in r.judged_units().items()},
                metric=r.metric,
                model="vgg16" if kind == "model" else r.key.model,
                experiment="decoy" if kind == "experiment" else r.key.base_experiment,
                suite="other" if kind == "suite" else r.key.suite,
                batch=r.key.batch_size,
                variant=r.key.variant,
                raw={s: v * 0.5 for s, v in r.units.items()},
                study=r.study,
            )
            out.append(d)
        out.append(r)
    return out


def judged(got: R.Measured) -> list[tuple[str, float | None, float, float, str]]:
    assert isinstance(got, list), got
    return [(i.name, i.est.value if i.est else None, i.lo, i.hi, i.word) for i in got]


def names(got: R.Measured) -> list[str]:
    assert isinstance(got, list), got
    return sorted(i.name for i in got)
