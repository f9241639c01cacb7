"""Suites: YAML files under ``workloads/suites/``, validated on load (schema: docs/runner.md).

Every problem raises :class:`InputError` naming the suite, the entry and the key. Validation
needs no framework import, so a bad suite fails in milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from workloads import scenarios
from workloads.errors import InputError
from workloads.inputs import load_yaml

SUITES_DIR = Path(__file__).resolve().parent / "suites"
TOP_KEYS = ("name", "description", "defaults", "experiments", "deviations", "process_start")
# how a suite's measuring processes start (workloads/zygote.py): exec, each its own interpreter
# (the papers' runs: elapsed_s holds the framework's import), or fork from a zygote
PROCESS_STARTS = ("exec", "fork")
MAX_DEVIATIONS = 100  # lines of a suite's deviations list
ENTRY_KEYS = (
    "experiment",
    "model",
    "scenario",
    "data",
    "batch",
    "steps",
    "warmup",
    "repeats",
    "image_size",
    "claims",
    "options",
    "timeout_s",
)
DEFAULT_STEPS, DEFAULT_WARMUP, DEFAULT_TIMEOUT_S = 100, 10, 1800
# Repetitions when an entry does not say: 3, so a run has a spread (the seed suites set 5;
# the smoke suites set 1 on purpose, and the report flags n < 3).
DEFAULT_REPEATS = 3
# Upper bounds (docs/limits.md): each is far above any published experiment, so a typo (1e9)
# is refused in milliseconds instead of planning a run that never ends.
MAX_BATCH = 65536  # per device
MAX_STEPS = 1_000_000
MAX_WARMUP = 100_000
MAX_REPEATS = 1000
MAX_IMAGE_SIZE = 4096  # px
MAX_TIMEOUT_S = 7 * 24 * 3600.0
MAX_EXPERIMENTS = 1000  # entries of one suite
MAX_MEASUREMENTS = 10_000  # repetitions of all entries together


@dataclass(frozen=True)
class Entry:
    experiment: str
    model: str
    scenario: str = "single"
    data: str = "synthetic"
    batch: int = 32
    steps: int = DEFAULT_STEPS
    warmup: int = DEFAULT_WARMUP
    repeats: int = DEFAULT_REPEATS
    image_size: int | None = None
    claims: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class Suite:
    name: str
    entries: tuple[Entry, ...]
    description: str = ""
    path: str | None = None
    # where the suite still differs from the paper it reproduces, one line each; every
    # record carries them in params.suite_deviations (the report shows them by the claim)
    deviations: tuple[str, ...] = ()
    process_start: str = "exec"

    @property
    def measurements(self) -> int:
        return sum(e.repeats for e in self.entries)


def list_suites() -> list[str]:
    return sorted(p.stem for p in SUITES_DIR.glob("*.yaml"))


def _int(
    where: str, key: str, value: Any, minimum: int, label: Callable[[str], str], maximum: int
) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(
            f"{where}: {label(key)} must be an integer >= {minimum}, got {_short(value)}"
        )
    if value > maximum:
        raise InputError(f"{where}: {label(key)} must be at most {maximum}, got {_short(value)}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _plain(key: str) -> str:
    return key


def validate_entry(
    raw: Mapping[str, Any], where: str, label: Callable[[str], str] = _plain
) -> Entry:
    """Check one entry (defaults already merged) and resolve the model's defaults."""
    unknown = [k for k in raw if k not in ENTRY_KEYS]
    if unknown:
        raise InputError(
            f"{where}: unknown key {label(str(unknown[0]))!r} (allowed: {', '.join(ENTRY_KEYS)})"
        )
    for key in ("experiment", "model"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise InputError(f"{where}: {label(key)} is required (a non-empty string)")
    scenario = raw.get("scenario", "single")
    if scenario not in scenarios.SCENARIOS:
        raise InputError(
            f"{where}: unknown {label('scenario')} {scenario!r} "
            f"(known: {', '.join(sorted(scenarios.SCENARIOS))})"
        )
    model = raw["model"]
    known = scenarios.model_names(scenario)
    if model not in known:
        raise InputError(
            f"{where}: unknown {label('model')} {model!r} "
            f"(known for scenario {scenario!r}: {', '.join(known)})"
        )
    data = raw.get("data", "synthetic")
    if data not in scenarios.DATA_SOURCES:
        raise InputError(
            f"{where}: unknown {label('data')} source {data!r} "
            f"(known: {', '.join(sorted(scenarios.DATA_SOURCES))})"
        )
    from workloads.models import MODELS

    spec = MODELS.get(model)
    batch = _int(
        where, "batch", raw.get("batch", spec.default_batch if spec else 1), 1, label, MAX_BATCH
    )
    steps = _int(where, "steps", raw.get("steps", DEFAULT_STEPS), 1, label, MAX_STEPS)
    warmup = _int(where, "warmup", raw.get("warmup", DEFAULT_WARMUP), 0, label, MAX_WARMUP)
    repeats = _int(where, "repeats", raw.get("repeats", DEFAULT_REPEATS), 1, label, MAX_REPEATS)
    timeout = raw.get("timeout_s", DEFAULT_TIMEOUT_S)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 1 <= timeout <= MAX_TIMEOUT_S  # NaN fails both comparisons
    ):
        raise InputError(
            f"{where}: {label('timeout_s')} must be a number >= 1 (at most "
            f"{MAX_TIMEOUT_S:.0f}), got {_short(timeout)}"
        )
    image_size = raw.get("image_size")
    if image_size is not None:
        image_size = _int(where, "image_size", image_size, 1, label, MAX_IMAGE_SIZE)
        if spec is not None and image_size < spec.min_image_size:
            raise InputError(
                f"{where}: {label('image_size')} {image_size} is too small for "
                f"model {model!r} (at least {spec.min_image_size} px)"
            )
    claims = raw.get("claims", [])
    if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
        raise InputError(f"{where}: {label('claims')} must be a list of strings")
    options = raw.get("options") or {}
    if not isinstance(options, Mapping):
        raise InputError(f"{where}: {label('options')} must be a mapping")
    try:
        options = scenarios.check_options(scenario, options)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    return Entry(
        experiment=raw["experiment"],
        model=model,
        scenario=scenario,
        data=data,
        batch=batch,
        steps=steps,
        warmup=warmup,
        repeats=repeats,
        image_size=image_size,
        claims=tuple(claims),
        options=options,
        timeout_s=float(timeout),
    )


def parse_suite(doc: Any, name: str, path: str | None = None) -> Suite:
    where = f"suite {name!r}"
    if not isinstance(doc, Mapping):
        raise InputError(f"{where}: must be a YAML mapping with an 'experiments' list")
    unknown = [k for k in doc if k not in TOP_KEYS]
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(TOP_KEYS)})")
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise InputError(f"{where}: 'defaults' must be a mapping")
    bad = [k for k in defaults if k not in ENTRY_KEYS or k == "experiment"]
    if bad:
        raise InputError(
            f"{where}: unknown key {bad[0]!r} in defaults "
            f"(allowed: {', '.join(k for k in ENTRY_KEYS if k != 'experiment')})"
        )
    items = doc.get("experiments")
    if not isinstance(items, list) or not items:
        raise InputError(f"{where}: 'experiments' must be a non-empty list")
    if len(items) > MAX_EXPERIMENTS:
        raise InputError(
            f"{where}: 'experiments' has {len(items)} entries, at most {MAX_EXPERIMENTS}"
        )
    entries: list[Entry] = []
    seen: set[tuple[str, str, str, str, int, int | None]] = (
        set()
    )  # one experiment may span models/batches (a figure's bars)
    for i, item in enumerate(items):
        label = f"{where}: experiments[{i}]"
        if not isinstance(item, Mapping):
            raise InputError(f"{label} must be a mapping")
        if isinstance(item.get("experiment"), str):
            label += f" ({item['experiment']})"
        entry = validate_entry({**defaults, **item}, label)
        ident = (
            entry.experiment,
            entry.model,
            entry.scenario,
            entry.data,
            entry.batch,
            entry.image_size,
        )
        if ident in seen:
            raise InputError(
                f"{label}: experiment {entry.experiment!r} appears twice with the "
                "same model, scenario, data, batch and image_size"
            )
        seen.add(ident)
        entries.append(entry)
    suite_name = doc.get("name", name)
    if not isinstance(suite_name, str) or not suite_name or len(suite_name) > 200:
        raise InputError(f"{where}: 'name' must be a non-empty string of up to 200 characters")
    deviations = doc.get("deviations") or []
    if (
        not isinstance(deviations, list)
        or len(deviations) > MAX_DEVIATIONS
        or not all(isinstance(d, str) and d.strip() for d in deviations)
    ):
        raise InputError(
            f"{where}: 'deviations' must be a list of at most {MAX_DEVIATIONS} non-empty strings"
        )
    start = doc.get("process_start", "exec")
    if start not in PROCESS_STARTS:
        raise InputError(
            f"{where}: 'process_start' must be one of {', '.join(PROCESS_STARTS)}, "
            f"got {str(start)[:40]!r}"
        )
    suite = Suite(suite_name, tuple(entries), str(doc.get("description", "")), path)
    suite = replace(suite, deviations=tuple(d.strip() for d in deviations), process_start=start)
    return _bounded(suite)


def _bounded(suite: Suite) -> Suite:
    """A suite whose plan (every repetition of every entry) stays within MAX_MEASUREMENTS."""
    if suite.measurements > MAX_MEASUREMENTS:
        raise InputError(
            f"suite {suite.name!r}: {suite.measurements} measurements (repeats of all "
            f"experiments), at most {MAX_MEASUREMENTS}"
        )
    return suite


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False where the name itself is refused (longer than a file name
    may be: ENAMETOOLONG, which ``is_file`` raises)."""
    try:
        return path.is_file()
    except OSError:
        return False


def load_suite(name_or_path: str) -> Suite:
    """A suite by name (``workloads/suites/<name>.yaml``) or by path to a ``.yaml`` file."""
    path = Path(name_or_path)
    if not (name_or_path.endswith((".yaml", ".yml")) or _is_file(path)):
        path = SUITES_DIR / f"{name_or_path}.yaml"
        if not _is_file(path):
            raise InputError(f"unknown suite {name_or_path!r} (known: {', '.join(list_suites())})")
    doc = load_yaml(path, "suite file")  # bounded: aliases, depth, duplicate keys
    if doc is None:
        raise InputError(f"suite file {str(path)!r} is empty")
    if not isinstance(doc, Mapping):
        raise InputError(
            f"suite file {str(path)!r} must be a YAML mapping with an 'experiments' list"
        )
    return parse_suite(doc, path.stem, str(path))


def cli_label(key: str) -> str:
    return "--" + key.replace("_", "-")


def model_suite(model: str, **fields: Any) -> Suite:
    """A one-entry suite for ``--model M [--batch ...]``; errors name the command-line option."""
    raw = {"experiment": f"{model}-single", "model": model}
    raw.update({k: v for k, v in fields.items() if v is not None})
    entry = validate_entry(raw, f"--model {model}", cli_label)
    return _bounded(Suite(f"model:{model}", (entry,), "one model from the command line"))


def with_overrides(suite: Suite, **overrides: Any) -> Suite:
    """``--steps/--warmup/--repeats`` applied to every entry of a suite."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if not given:
        return suite
    entries = []
    for e in suite.entries:
        raw = {k: getattr(e, k) for k in ENTRY_KEYS}
        raw["claims"] = list(e.claims)
        raw["options"] = dict(e.options)
        raw.update(given)
        entries.append(validate_entry(raw, f"suite {suite.name!r}", cli_label))
    return _bounded(replace(suite, entries=tuple(entries)))


def resolve_suite(
    suite: str | None,
    model: str | None,
    batch: int | None = None,
    steps: int | None = None,
    warmup: int | None = None,
    repeats: int | None = None,
    image_size: int | None = None,
) -> Suite:
    """The suite a bench command line asks for, validated (InputError on bad input)."""
    if model is not None:
        return model_suite(
            model, batch=batch, steps=steps, warmup=warmup, repeats=repeats, image_size=image_size
        )
    assert suite is not None
    if batch is not None or image_size is not None:
        raise InputError(
            "--batch and --image-size apply to --model only (a suite sets them per entry)"
        )
    return with_overrides(load_suite(suite), steps=steps, warmup=warmup, repeats=repeats)
