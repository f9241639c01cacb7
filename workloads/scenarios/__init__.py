"""Scenario and data-source registries.

A scenario runs ONE measurement in the current process (the runner starts one process per
repetition) and returns record fields. Register new ones with :func:`register`; see
docs/runner.md for the contract. Importing this module must stay cheap (no framework imports):
scenario modules import TensorFlow/Keras inside their functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from workloads.errors import InputError
from workloads.scenarios.sources import DATA_SOURCES as DATA_SOURCES  # re-exported

ProgressFn = Callable[[str, int, int], None]  # (phase, step, total)


@dataclass
class Job:
    """One measurement: a suite entry's resolved fields plus where and how it runs."""

    suite: str
    experiment: str
    model: str
    scenario: str = "single"
    data: str = "synthetic"
    batch: int = 32
    steps: int = 100
    warmup: int = 10
    repeat: int = 0
    image_size: int | None = None
    claims: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    backend: str = "tensorflow"
    launched_at: float = 0.0  # time.time() when the job's process was launched
    timeout_s: float = 1800.0
    # steps per host synchronization in the timed loop: "auto", "tf_cnn" (1) or an int
    sync_every: int | str = "auto"
    min_timed_s: float = 1.0  # a shorter timed window is flagged (params.timing.short_window)
    progress: ProgressFn | None = field(default=None, repr=False, compare=False)
    # time.time() at the end of the last timed step (set by on_step; not serialized)
    timed_end_unix: float | None = field(default=None, repr=False, compare=False)
    # seconds waited at a start barrier after the warm-up (set by on_step; not serialized)
    barrier_wait_s: float | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("progress")
        d.pop("timed_end_unix")
        d.pop("barrier_wait_s")
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Job:
        unset = ("progress", "timed_end_unix", "barrier_wait_s")
        return cls(**{k: v for k, v in d.items() if k not in unset})

    def on_step(self, phase: str, step: int, total: int) -> None:
        """After each step (workloads.timing.timed_loop): progress, start barrier, window end.

        After the last warm-up step a job started behind a start barrier (the ``sharing``
        scenario, ``shared`` with ``foreground_start: with-background``; workloads.scenarios.
        barrier) waits there until it is released, so timed windows start together, and keeps
        the seconds it waited (``barrier_wait_s``); after the last timed step the wall-clock
        time is kept (the window's end; its start is that minus the timed loop's wall-clock).
        """
        if phase == "timed" and step == total:
            self.timed_end_unix = time.time()
        if self.progress is not None:
            self.progress(phase, step, total)
        if phase == "warmup" and step == total:
            from workloads.scenarios.barrier import wait_in_child

            t0 = time.monotonic()
            if wait_in_child():
                self.barrier_wait_s = time.monotonic() - t0


ScenarioFn = Callable[[Job], dict[str, Any]]
OptionCheck = Callable[[Mapping[str, Any]], dict[str, Any]]

SCENARIOS: dict[str, ScenarioFn] = {}
OPTION_CHECKS: dict[str, OptionCheck] = {}
MODEL_NAMES: dict[str, Callable[[], Iterable[str]]] = {}
# Scenarios whose every measurement runs in child ``_measure`` processes (workloads.scenarios.
# jobs): their own process never imports the framework; the record's device and backend are
# the children's (each child checks the expected device itself).
MEASURED_IN_CHILDREN: set[str] = set()


def register(
    name: str,
    run: ScenarioFn,
    check_options: OptionCheck | None = None,
    model_names: Callable[[], Iterable[str]] | None = None,
    measured_in_children: bool = False,
) -> None:
    SCENARIOS[name] = run
    if check_options is not None:
        OPTION_CHECKS[name] = check_options
    if model_names is not None:
        MODEL_NAMES[name] = model_names
    if measured_in_children:
        MEASURED_IN_CHILDREN.add(name)


def _registry_models() -> Iterable[str]:
    from workloads.models import MODELS

    return MODELS


def model_names(scenario: str) -> list[str]:
    return sorted(MODEL_NAMES.get(scenario, _registry_models)())


def check_options(scenario: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Validate an entry's ``options`` for ``scenario``; InputError names the bad key."""
    check = OPTION_CHECKS.get(scenario)
    if check is None:
        if options:
            raise InputError(
                f"scenario {scenario!r} takes no options (got {', '.join(map(str, options))})"
            )
        return {}
    return check(options)


def get_scenario(name: str) -> ScenarioFn:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise InputError(
            f"unknown scenario {name!r} (known: {', '.join(sorted(SCENARIOS))})"
        ) from None


from workloads.scenarios import single as _single  # noqa: E402

register("single", _single.run, _single.check_options)

from workloads.scenarios import catalogue as _catalogue  # noqa: E402

_catalogue.register_all(register, DATA_SOURCES)
