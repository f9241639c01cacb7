"""The arms' environment fingerprints side by side, with what differs marked.

The first rows are the setting each record states (gpu_path, exec_env, virtualization,
sharing) and its cross-check flags; the rest are read from ``record.fingerprint``
(workloads.fingerprint.collect). An arm shows the
distinct values over its ok records, joined with " | " (two hosts of one arm with different
drivers show both); records that lack a fact are skipped, "—" when none has it. KEY_FIELDS
(driver, virtualization mode, container runtime, NUMA placement) always come first and are
the ones a reader is told to compare.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from report.mapping import Arm
from report.table import image_size

Getter = Callable[[dict[str, Any]], Any]


def _get(fp: dict[str, Any], path: str) -> Any:
    node: Any = fp
    for part in path.split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _gpus(fp: dict[str, Any], key: str) -> Any:
    gpus = _get(fp, "gpu.gpus") or []
    vals = [g.get(key) for g in gpus if isinstance(g, dict)]
    vals = [v for v in vals if v is not None]
    return ",".join(str(v) for v in dict.fromkeys(vals)) if vals else None


def _pcie(fp: dict[str, Any]) -> Any:
    gpus = _get(fp, "gpu.gpus") or []
    out = []
    for g in gpus:
        p = g.get("pcie") or {} if isinstance(g, dict) else {}
        if p.get("gen_current") is not None:
            out.append(f"gen{p.get('gen_current')} x{p.get('width_current')}")
    return ",".join(dict.fromkeys(out)) or None


def _virt(fp: dict[str, Any]) -> Any:
    modes = _get(fp, "gpu.virtualization_modes")
    if modes:
        return ",".join(modes)
    if _get(fp, "gpu.present") is False:
        return "no GPU"
    return _gpus(fp, "virtualization_mode")


def _vm(fp: dict[str, Any]) -> Any:
    vm = _get(fp, "vm")
    if not isinstance(vm, dict):
        return None
    if not vm.get("is_vm"):
        return "no"
    return f"yes ({vm.get('hypervisor') or vm.get('systemd_detect_virt') or 'detected'})"


def _numa(fp: dict[str, Any]) -> Any:
    nodes = _get(fp, "numa.nodes")
    gpu_node = _gpus(fp, "numa_node")
    usable = _get(fp, "cpu.usable_cpus")
    parts = []
    if nodes is not None:
        parts.append(f"{nodes} node(s)")
    if gpu_node is not None:
        parts.append(f"GPU on node {gpu_node}")
    if usable is not None:
        parts.append(f"{usable} usable CPUs")
    return ", ".join(parts) or None


def _runtime(fp: dict[str, Any]) -> Any:
    return (
        _get(fp, "container.runtime")
        or _get(fp, "execution_env")
        or ("none" if isinstance(_get(fp, "container"), dict) else None)
    )


def _framework(fp: dict[str, Any]) -> Any:
    pk = _get(fp, "software.packages") or {}
    backend = _get(fp, "software.backend.keras_backend")
    names = ("tensorflow", "tensorflow-cpu", "keras", "jax", "torch")
    vers = [f"{n} {pk[n]}" for n in names if isinstance(pk, dict) and n in pk]
    return ", ".join(([f"backend {backend}"] if backend else []) + vers) or None


def _stated(rec: dict[str, Any]) -> Any:
    if not rec.get("virtualization"):
        return "unknown setting (not recorded)"
    return (
        f"{rec.get('virtualization')} (gpu_path {rec.get('gpu_path')}, exec_env "
        f"{rec.get('exec_env')}, sharing {rec.get('sharing')})"
    )


def _flags(rec: dict[str, Any]) -> Any:
    flags = rec.get("setting_flags")
    if not rec.get("virtualization"):
        return None
    return "; ".join(str(f) for f in flags) if flags else "none"


# read from the record itself: the setting the lab stated, and the fingerprint's cross-check
RECORD_FIELDS: list[tuple[str, Getter]] = [
    ("Setting (stated by the lab)", _stated),
    ("Setting flags", _flags),
]
KEY_FIELDS: list[tuple[str, Getter]] = [
    (
        "NVIDIA driver",
        lambda fp: _get(fp, "gpu.driver_version") or (_get(fp, "gpu.reason") and "none"),
    ),
    ("GPU virtualization mode (NVML)", _virt),
    ("Container runtime", _runtime),
    ("NUMA placement", _numa),
]
OTHER_FIELDS: list[tuple[str, Getter]] = [
    ("VM detected", _vm),
    ("GPU", lambda fp: _gpus(fp, "name")),
    ("CUDA (driver)", lambda fp: _get(fp, "gpu.cuda_driver_version")),
    ("PCIe link", _pcie),
    ("MIG mode", lambda fp: _gpus(fp, "mig_mode")),
    ("Host", lambda fp: _get(fp, "host")),
    ("OS", lambda fp: _get(fp, "os.name")),
    ("Kernel", lambda fp: _get(fp, "kernel")),
    ("CPU", lambda fp: _get(fp, "cpu.model")),
    ("Framework", _framework),
    ("Python", lambda fp: _get(fp, "software.python")),
    ("git revision", lambda fp: _get(fp, "software.git.revision")),
]


@dataclass(frozen=True)
class EnvRow:
    field: str
    key: bool  # one of KEY_FIELDS
    values: tuple[str, ...]  # one per arm, in the arms' order

    @property
    def differs(self) -> bool:
        return len(set(self.values)) > 1


def _value(records: list[dict[str, Any]], getter: Getter, whole: bool = False) -> str:
    vals: list[str] = []
    for rec in records:
        try:
            v = getter(rec if whole else rec.get("fingerprint") or {})
        except (AttributeError, TypeError):
            v = None
        if v is None or v == "":
            continue  # a record without this fact (an old or partial fingerprint)
        if str(v) not in vals:
            vals.append(str(v))
    return " | ".join(vals) if vals else "—"


def compare(arms: list[Arm], per_arm: dict[Arm, list[dict[str, Any]]]) -> list[EnvRow]:
    rows = [
        EnvRow(name, True, tuple(_value(per_arm.get(a, []), getter, True) for a in arms))
        for name, getter in RECORD_FIELDS
    ]
    for fields, key in ((KEY_FIELDS, True), (OTHER_FIELDS, False)):
        for name, getter in fields:
            rows.append(EnvRow(name, key, tuple(_value(per_arm.get(a, []), getter) for a in arms)))
    return rows


# --- the banner: what ran, read from the records (never from the arm labels) ----------------


def _fp(rec: dict[str, Any]) -> dict[str, Any]:
    fp = rec.get("fingerprint")
    return fp if isinstance(fp, dict) else {}


def _params(rec: dict[str, Any]) -> dict[str, Any]:
    p = rec.get("params")
    return p if isinstance(p, dict) else {}


def _join(values: list[str]) -> str:
    return ", ".join(dict.fromkeys(v for v in values if v)) or "not recorded"


def device_of(rec: dict[str, Any]) -> str:
    """What computed: the GPU model(s), or "CPU only (<model>)", from the fingerprint and the
    device the framework says it used (``params.device.used``)."""
    fp = _fp(rec)
    used = _get(_params(rec), "device.used")
    cpu = _get(fp, "cpu.model")
    cpu_s = f"CPU only ({cpu})" if cpu else "CPU only"
    gpus = _gpus(fp, "name")
    if _get(fp, "gpu.present") is False or (not gpus and used == "cpu"):
        return cpu_s + ", no NVIDIA GPU"
    if gpus:
        n = _get(fp, "gpu.count")
        g = f"GPU {gpus}" + (f" x{n}" if isinstance(n, int) and n > 1 else "")
        return f"{g}, but the framework ran on the CPU" if used == "cpu" else g
    return "device not recorded"


def observed_place(rec: dict[str, Any]) -> str:
    """Where the fingerprint saw the run: container runtime and hypervisor, or neither."""
    fp = _fp(rec)
    parts = []
    if _get(fp, "container.in_container"):
        parts.append(f"in a {_get(fp, 'container.runtime') or 'container'} container")
    if _get(fp, "vm.is_vm"):
        parts.append(f"on a VM ({_get(fp, 'vm.hypervisor') or 'detected'})")
    if not parts:
        seen = isinstance(_get(fp, "container"), dict) or isinstance(_get(fp, "vm"), dict)
        return "no container, no VM" if seen else "not recorded"
    return " ".join(parts)


def full_image_size(model: str) -> int | None:
    """The model's full input size (workloads.models), None for a model it does not know."""
    from workloads.models import MODELS

    spec = MODELS.get(model)
    return spec.image_size if spec is not None else None


def size_text(sizes: Iterable[int | None], model: str) -> str:
    """``28 px (full size)``, ``64 px (reduced, full 224 px)``; several sizes are listed."""
    got = sorted({s for s in sizes if s is not None})
    full = full_image_size(model)
    if not got:
        return f"not recorded (full size {full} px)" if full else "not recorded"
    text = ", ".join(str(s) for s in got) + " px"
    if full is None:
        return text
    if all(s == full for s in got):
        return f"{text} (full size)"
    return f"{text} (REDUCED, full {full} px)"


@dataclass(frozen=True)
class Banner:
    lines: list[tuple[str, str]]  # (what, text), in order
    arms: int
    single_arm: str | None  # the one line shown when nothing can be compared
    reduced: bool


def banner(
    arms: list[Arm],
    per_arm: dict[Arm, list[dict[str, Any]]],
    settings: dict[Arm, str],
    labels: dict[str, str],
    model_counts: dict[str, int] | None = None,
) -> Banner:
    """What ran, per arm and per model, for the top of the report.

    ``per_arm`` may hold one record per distinct environment; ``model_counts`` then gives
    the number of ok records per model (else the records are counted).
    """
    lines: list[tuple[str, str]] = []
    for a in arms:
        recs = per_arm.get(a, [])
        stated = labels.get(settings.get(a, "unknown"), "other")
        lines.append(
            (
                f"arm {a.label}",
                f"{_join([device_of(r) for r in recs])}; setting stated by the lab: {stated}; "
                f"seen by the fingerprint: {_join([observed_place(r) for r in recs])}",
            )
        )
    models: dict[str, list[dict[str, Any]]] = {}
    for a in arms:
        for r in per_arm.get(a, []):
            models.setdefault(str(r.get("model")), []).append(r)
    reduced = False
    for model, recs in sorted(models.items()):
        sizes = size_text([image_size(r) for r in recs], model)
        reduced = reduced or "REDUCED" in sizes
        steps = _join([str(r.get("steps")) for r in recs if r.get("steps") is not None])
        warm = _join([str(r.get("warmup")) for r in recs if r.get("warmup") is not None])
        batch = _join([str(r.get("batch_size")) for r in recs if r.get("batch_size")])
        lines.append(
            (
                f"model {model}",
                f"image size {sizes}; timed steps {steps} (warmup {warm}); batch {batch}; "
                f"{(model_counts or {}).get(model, len(recs))} ok record(s)",
            )
        )
    single = None
    if len(arms) == 1:
        single = (
            f"Nothing to compare: every record is from one arm ({arms[0].label}); the figures "
            "show absolute values only, and no ratio or published claim can be checked."
        )
    return Banner(lines, len(arms), single, reduced)
