"""Where a record ran, in the papers' words: the one place that maps records to settings.

A record's setting is what the lab stated when it ran (workloads.setting: ``gpu_path``,
``exec_env``, ``virtualization``, ``sharing``); the report reads ``virtualization`` and guesses
nothing, neither from the topology or arm label nor from the fingerprint:

  ===============  =========  ==================
  virtualization   setting    label
  ===============  =========  ==================
  none             bm         BM
  container        cbm        Container on BM
  vm               vm         VM
  container-in-vm  cvm        Container on VM
  (absent)         unknown    unknown setting
  ===============  =========  ==================

A record without the setting (schema 1, or a run given no gpu_path) is "unknown setting":
tabulated and plotted, never compared with a published number. An arm whose records state
different settings is "mixed" (and flagged). The fingerprint's cross-check travels in the
record's ``setting_flags`` and is shown beside the arm.

Paired comparisons only: records are repetitions of one another, and an arm is normalized to
the baseline arm, only when their measurement settings (:func:`paired_settings`: model,
batch, image size, timed steps, warm-up, steps per host sync, precision, Keras backend,
framework version, GPU model, data kind) are identical. :func:`check_paired` refuses
anything else with one line naming the group, the field and both values, e.g. a TensorFlow
arm against a JAX arm of the same model. A setting a record does not state (an old record,
no GPU) is not compared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workloads.errors import InputError

SETTINGS = ("bm", "cbm", "vm", "cvm")
SETTING_OF_VIRTUALIZATION = {"none": "bm", "container": "cbm", "vm": "vm", "container-in-vm": "cvm"}
SETTING_LABELS = {
    "bm": "BM",
    "cbm": "Container on BM",
    "vm": "VM",
    "cvm": "Container on VM",
    "unknown": "unknown setting",
    "mixed": "mixed settings",
}
DEFAULT_BASELINES = ("ironic-bm", "local/native")


@dataclass(frozen=True, order=True)
class Arm:
    """One comparison arm: a topology and the arm label within it."""

    topology: str
    arm: str

    @property
    def label(self) -> str:
        return f"{self.topology}/{self.arm}"


def setting_of(rec: Mapping[str, Any]) -> str:
    """The paper setting (bm, cbm, vm, cvm) a record states, or ``unknown``."""
    virt = rec.get("virtualization")
    return SETTING_OF_VIRTUALIZATION.get(virt, "unknown") if isinstance(virt, str) else "unknown"


PAIRED_FIELDS = (
    "model",
    "batch",
    "image size",
    "steps",
    "warm-up",
    "precision",
    "Keras backend",
    "framework version",
    "GPU model",
    "data kind",
    "sync every",
)
FRAMEWORK_PACKAGES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}


def _dig(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, Mapping):
            return None
        d = d.get(p)
    return d


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# A vGPU reports its profile as its NVML name ("GRID V100-16Q", "NVIDIA A100-4-20C"); the
# physical board it runs on is what a vGPU arm is compared against ("Tesla V100-PCIE-16GB").
_VENDOR_WORDS = re.compile(r"^(?:NVIDIA\s+|Tesla\s+|GRID\s+|Quadro\s+)+", re.IGNORECASE)


def gpu_board(name: str) -> str:
    """The board family of an NVML GPU name: ``GRID V100-16Q`` and ``Tesla V100-PCIE-16GB``
    both give ``V100``."""
    bare = _VENDOR_WORDS.sub("", name.strip())
    return bare.split("-", 1)[0].split()[0].upper() if bare else name


def sync_policy(rec: Mapping[str, Any]) -> Any:
    """How a record's timed loop synchronized the host, as arms are compared: ``auto`` (each
    block of K steps at least a second at the run's own speed, whatever K that gave) or the K
    it was run with (``tf_cnn`` is 1); None for a record that does not say (older records)."""
    mode = _dig(rec, "params", "timing", "sync_mode")
    if mode == "auto":
        return "auto"
    k = rec.get("sync_every")
    return k if isinstance(k, int) and not isinstance(k, bool) else None


def paired_settings(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The settings two records must share to be compared (None: not stated by the record)."""
    params = rec.get("params") if isinstance(rec.get("params"), Mapping) else {}
    assert isinstance(params, Mapping)
    size = _int_or_none(params.get("image_size"))
    shape = params.get("input_shape")
    if size is None and isinstance(shape, list) and shape:
        size = _int_or_none(shape[0])
    software = _dig(rec, "fingerprint", "software")
    backend = params.get("backend") or _dig(software, "backend", "keras_backend")
    package = FRAMEWORK_PACKAGES.get(str(backend)) if backend else None
    version = _dig(software, "packages", package) if package else None
    gpus = _dig(rec, "fingerprint", "gpu", "gpus") or []
    names = sorted({str(g.get("name")) for g in gpus if isinstance(g, Mapping) and g.get("name")})
    return {
        "model": rec.get("model"),
        "batch": _int_or_none(rec.get("batch_size")),
        "image size": size,
        "steps": _int_or_none(rec.get("steps")),
        "warm-up": _int_or_none(rec.get("warmup")),
        "precision": params.get("precision") or "float32",  # the Keras default policy
        "Keras backend": backend or None,
        "framework version": f"{package} {version}" if package and version else None,
        "GPU model": ", ".join(names) or None,
        "data kind": rec.get("data") or None,
        "sync every": sync_policy(rec),
        # not compared by name: a vGPU arm pairs with any arm on the same board family
        "_vgpu": rec.get("gpu_path") == "vgpu",
        "_boards": ", ".join(sorted({gpu_board(n) for n in names})) or None,
    }


def _differs(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    for name in PAIRED_FIELDS:
        x, y = a.get(name), b.get(name)
        if name == "GPU model" and (a.get("_vgpu") or b.get("_vgpu")):
            x, y = a.get("_boards"), b.get("_boards")
        if x is not None and y is not None and x != y:
            return name
    return None


def check_paired(
    records: Iterable[Mapping[str, Any]],
    group_of: Any,
    arm_of: Any,
    baseline: Arm,
    pool: bool = True,
) -> None:
    """Refuse records that would be compared although their settings differ (see
    :func:`check_pairs`)."""
    check_pairs(
        ((group_of(rec), arm_of(rec), {**paired_settings(rec), "run": rec.get("run_id")})
         for rec in records),
        baseline,
        pool,
    )  # fmt: skip


def check_pairs(
    items: Iterable[tuple[Any, Arm, dict[str, Any]]], baseline: Arm, pool: bool = True
) -> None:
    """Refuse (group, arm, paired settings) that would be compared although they differ.

    Within one (group, arm), every repetition must state the same settings and, unless
    ``pool``, come from one run (``run``: records of two dates are not repeats of one
    another); within one group, every arm the same settings as the baseline arm. The first
    mismatch raises InputError naming the group, the field, both values and where they come
    from.
    """
    first: dict[tuple[Any, Arm], dict[str, Any]] = {}
    runs: dict[tuple[Any, Arm], Any] = {}
    for group, arm, mine in items:
        seen = first.setdefault((group, arm), dict(mine))
        field = _differs(seen, mine)
        if field is not None:
            raise InputError(
                f"not paired: {_group_label(group)}, arm {arm.label}: repetitions differ in "
                f"{field} ({seen[field]!r} vs {mine[field]!r}); report them apart"
            )
        run = runs.setdefault((group, arm), mine.get("run"))
        if not pool and mine.get("run") != run:
            raise InputError(
                f"not pooled: {_group_label(group)}, arm {arm.label}: records of runs {run!r} "
                f"and {mine.get('run')!r} would count as repetitions of one another; report "
                "one run, compare them (gpulab compare), or pool them on purpose (--pool)"
            )
        for name in PAIRED_FIELDS:  # a setting one repetition states speaks for the arm
            if seen.get(name) is None and mine.get(name) is not None:
                seen[name] = mine[name]
    for (group, arm), mine in first.items():
        base = first.get((group, baseline))
        if base is None or arm == baseline:
            continue
        field = _differs(base, mine)
        if field is not None:
            raise InputError(
                f"not paired: {_group_label(group)}: {field} differs, arm {arm.label} "
                f"{mine[field]!r} vs baseline {baseline.label} {base[field]!r}; "
                "compare only records run with the same settings"
            )


def _group_label(group: Any) -> str:
    label = getattr(group, "label", None)
    text = label() if callable(label) else str(group)
    suite, exp = getattr(group, "suite", None), getattr(group, "experiment", None)
    return f"{suite}/{exp} {text}" if suite and exp else text


@dataclass
class ArmSetting:
    """The setting of one arm over its records, and the flags to show beside it."""

    setting: str
    flags: list[str]


def arm_settings(records: Iterable[Mapping[str, Any]], arm_of: Any) -> dict[Arm, ArmSetting]:
    """Per arm: the one setting its records state (else ``mixed``) and their distinct flags."""
    seen: dict[Arm, dict[str, int]] = {}
    flags: dict[Arm, list[Any]] = {}
    for rec in records:
        arm = arm_of(rec)
        counts = seen.setdefault(arm, {})
        s = setting_of(rec)
        counts[s] = counts.get(s, 0) + 1
        flags.setdefault(arm, []).extend(rec.get("setting_flags") or [])
    return arm_settings_from(seen, flags)


def arm_settings_from(
    seen: Mapping[Arm, Mapping[str, int]], flags: Mapping[Arm, list[Any]]
) -> dict[Arm, ArmSetting]:
    """ArmSettings from the count of records per arm and setting and the arm's flags in the
    records' order (repeats allowed)."""
    out: dict[Arm, ArmSetting] = {}
    for arm, counts in seen.items():
        fl = list(dict.fromkeys(str(f) for f in flags.get(arm, [])))
        if len(counts) == 1:
            (only,) = counts
            out[arm] = ArmSetting(only, fl)
        else:
            parts = ", ".join(f"{s} ({n} records)" for s, n in sorted(counts.items()))
            out[arm] = ArmSetting(
                "mixed", [f"records of this arm state different settings: {parts}", *fl]
            )
    return out


def parse_baseline(spec: str) -> tuple[str, str | None]:
    spec = spec.strip()
    if not spec or spec.count("/") > 1 or spec.startswith("/") or spec.endswith("/"):
        raise InputError(f"--baseline {spec!r} is not TOPOLOGY or TOPOLOGY/ARM")
    topo, _, arm = spec.partition("/")
    return topo, (arm or None)


def resolve_baseline(
    spec: str | None, arms: Iterable[Arm], settings: Mapping[Arm, str] | None = None
) -> Arm:
    """The baseline arm among ``arms`` (those with ok records).

    ``spec`` is TOPOLOGY or TOPOLOGY/ARM. TOPOLOGY alone picks that topology's only arm, or
    its arm labelled ``native``, or its one arm whose recorded setting (``settings``) is
    ``bm``/``vm`` (not a container). ``None`` tries DEFAULT_BASELINES in order (``ironic-bm``,
    then ``local/native`` for a single machine).
    """
    present = sorted(set(arms))
    settings = settings or {}
    names = ", ".join(a.label for a in present) or "none"
    if spec is None:
        for cand in DEFAULT_BASELINES:
            try:
                return resolve_baseline(cand, present, settings)
            except InputError:
                continue
        raise InputError(
            f"no baseline: neither ironic-bm nor local/native has ok records (arms: {names}); "
            "pass --baseline TOPOLOGY[/ARM]"
        )
    topo, arm = parse_baseline(spec)
    cands = [a for a in present if a.topology == topo and (arm is None or a.arm == arm)]
    if arm is None and len(cands) > 1:
        native = [a for a in cands if a.arm == "native"] or [
            a for a in cands if settings.get(a) in ("bm", "vm")
        ]
        cands = native if len(native) == 1 else cands
    if not cands:
        raise InputError(f"baseline {spec!r} has no ok records (arms present: {names})")
    if len(cands) > 1:
        raise InputError(
            f"baseline {spec!r} is ambiguous: {', '.join(a.label for a in cands)}; "
            "name the arm as TOPOLOGY/ARM"
        )
    return cands[0]
