"""Paired arms: the arms' environment fingerprints compared before the report is built.

Each arm's records give one value per fact (driver, CUDA, cuDNN, framework, image digest, CPU
model, GPU model, clocks when known); an arm whose value differs from the baseline arm's, or
whose repeats disagree among themselves, is a warning. A warning is attached to the claims the
arm's records test (their ``claims``; all the study's claims when they name none). The
measurement settings that must match (model, batch, steps, precision ...) are checked by the
report's own :func:`report.mapping.check_paired`; its refusal becomes a warning here too.
A fact a record does not state is not compared.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Getter = Callable[[Mapping[str, Any]], Any]


def _dig(d: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(d, Mapping):
            return None
        d = d.get(part)
    return d


def _first(*paths: str) -> Getter:
    def get(fp: Mapping[str, Any]) -> Any:
        for p in paths:
            v = _dig(fp, p)
            if v not in (None, "", [], {}):
                return v
        return None

    return get


def _gpus(key: str) -> Getter:
    def get(fp: Mapping[str, Any]) -> Any:
        gpus = _dig(fp, "gpu.gpus") or []
        vals = sorted({str(g.get(key)) for g in gpus if isinstance(g, Mapping) and g.get(key)})
        return ", ".join(vals) or None

    return get


def _framework(fp: Mapping[str, Any]) -> Any:
    pk = _dig(fp, "software.packages") or {}
    names = ("tensorflow", "tensorflow-cpu", "keras", "jax", "torch")
    vers = [f"{n} {pk[n]}" for n in names if isinstance(pk, Mapping) and n in pk]
    return ", ".join(vers) or None


FACTS: list[tuple[str, Getter]] = [
    ("NVIDIA driver", _first("gpu.driver_version")),
    ("CUDA", _first("gpu.cuda_driver_version", "software.backend.tensorflow_build.cuda_version")),
    (
        "cuDNN",
        _first("software.backend.tensorflow_build.cudnn_version", "software.backend.torch_cudnn"),
    ),
    ("framework", _framework),
    ("image digest", _first("container.image_digest", "container.image_id", "container.image")),
    ("CPU model", _first("cpu.model")),
    ("GPU model", _gpus("name")),
    ("GPU clocks (max SM MHz)", _gpus("max_sm_clock_mhz")),
]


@dataclass
class Warning_:
    arm: str
    text: str
    claims: list[str] = field(default_factory=list)


def arm_values(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Per fact, the distinct values an arm's records state."""
    out: dict[str, list[str]] = {}
    for name, get in FACTS:
        vals: list[str] = []
        for rec in records:
            fp = rec.get("fingerprint")
            v = get(fp) if isinstance(fp, Mapping) else None
            if v is not None and str(v) not in vals:
                vals.append(str(v))
        out[name] = vals
    return out


def compare(
    per_arm: Mapping[str, list[dict[str, Any]]], baseline: str, study_claims: list[str]
) -> list[Warning_]:
    """Warnings for every fact where an arm differs from the baseline or from itself."""
    base = arm_values(per_arm.get(baseline, []))
    out: list[Warning_] = []
    for arm, records in per_arm.items():
        named = sorted({str(c) for r in records for c in (r.get("claims") or [])})
        claims = [c for c in study_claims if c in named] or list(study_claims)
        mine = arm_values(records)
        for fact, vals in mine.items():
            if len(vals) > 1:
                out.append(Warning_(arm, f"{fact}: repeats differ ({' | '.join(vals)})", claims))
            elif arm != baseline and vals and base.get(fact) and vals != base[fact]:
                out.append(
                    Warning_(
                        arm,
                        f"{fact}: {vals[0]} vs baseline {baseline} {' | '.join(base[fact])}",
                        claims,
                    )
                )
    return out


def paired_setting_warning(
    records: list[dict[str, Any]], baseline_label: Any, study_claims: list[str]
) -> Warning_ | None:
    """The report's own pairing check (same model, batch, steps ... as the baseline)."""
    from report.mapping import check_paired
    from report.table import arm_of, key_of
    from workloads.errors import InputError

    ok = [r for r in records if r.get("status") == "ok"]
    try:
        check_paired(ok, key_of, arm_of, baseline_label)
    except InputError as exc:
        return Warning_("*", str(exc), list(study_claims))
    return None
