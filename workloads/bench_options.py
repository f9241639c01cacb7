"""The bench options, defined once: ``python -m workloads bench`` (argparse, below) and
``gpulab bench`` (typer, ``infra/cli/bench.py``) are both generated from :data:`OPTIONS`.

Each :class:`BenchOption` gives the flag, its type, its bounds (the suite limits of
``workloads.suites``), its choices, the environment variable that gives its default, and its
help. Integers are parsed here (:func:`parse_int`), so a bad value is the same one line naming
the option on both command lines. Standard library only: the runner ships to GPU hosts alone.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workloads.errors import InputError
from workloads.execenv import aliases, names
from workloads.suites import (
    MAX_BATCH,
    MAX_IMAGE_SIZE,
    MAX_REPEATS,
    MAX_STEPS,
    MAX_WARMUP,
    PROCESS_STARTS,
)

KERAS_BACKENDS = ("tensorflow", "jax", "torch")
MAX_DIGITS = 20  # a longer integer is refused before it is converted


@dataclass(frozen=True)
class BenchOption:
    """One option of ``bench``."""

    flag: str  # "--steps"
    help: str
    kind: type = str  # int or str
    metavar: str = "TEXT"
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    env: str | None = None  # the variable that gives the default
    default: str | None = None  # the default when neither the option nor ``env`` is given
    group: str | None = None  # options of one group exclude each other; exactly one is given
    runner_required: bool = False  # required by ``python -m workloads bench``

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def range_text(self) -> str:
        if self.minimum is None:
            return ""
        return (
            f"{self.minimum}..{self.maximum}" if self.maximum is not None else f">= {self.minimum}"
        )

    def full_help(self) -> str:
        """The help with the range, the choices and the default's variable."""
        parts = [self.help]
        if self.range_text:
            parts.append(f"({self.range_text})")
        if self.env:
            fallback = f", else {self.default}" if self.default else ""
            parts.append(f"(default ${self.env}{fallback})")
        return " ".join(parts)

    def default_value(self, environ: Mapping[str, str] | None = None) -> str | None:
        env = os.environ if environ is None else environ
        return (env.get(self.env) if self.env else None) or self.default


OPTIONS: tuple[BenchOption, ...] = (
    BenchOption("--suite", "suite name under workloads/suites/ or a .yaml path", metavar="NAME",
                group="what"),
    BenchOption("--model", "one model instead of a suite (gpulab list models)",
                metavar="MODEL", group="what"),
    BenchOption("--batch", "per-device batch (default: the model's; --model only)", int, "N",
                1, MAX_BATCH),
    BenchOption("--steps", "timed steps (default 100)", int, "STEPS", 1, MAX_STEPS),
    BenchOption("--warmup", "warm-up steps, not timed (default 10)", int, "STEPS", 0,
                MAX_WARMUP),
    BenchOption("--repeats", "repetitions, each its own process (default: the suite's, else 3; "
                "10000 measurements in all)", int, "N", 1, MAX_REPEATS),
    BenchOption("--image-size", "square input size in px (default: the model's; --model only)",
                int, "PIXELS", 1, MAX_IMAGE_SIZE),
    BenchOption("--out", "JSON Lines file the records are appended to", metavar="FILE",
                runner_required=True),
    BenchOption("--topology", "topology label", metavar="NAME", env="GPULAB_TOPOLOGY",
                default="local"),
    BenchOption("--arm", "comparison-arm label", metavar="LABEL", env="GPULAB_ARM",
                default="native"),
    BenchOption("--gpu-path", "the host's gpu_path, as the lab states it (none: records carry "
                "no setting)", metavar="PATH", env="GPULAB_GPU_PATH"),
    BenchOption("--exec-env", f"execution environment: {', '.join(names())} (or "
                f"{', '.join(aliases())}; else native)", metavar="ENV",
                env="GPULAB_EXEC_ENV"),
    BenchOption("--sharing", "GPU sharing: exclusive, vgpu, bitfusion, time-slicing, mps, mig "
                "[:DETAIL] (else from gpu_path)", metavar="KIND", env="GPULAB_SHARING"),
    BenchOption("--keras-backend", "Keras backend (default TensorFlow, or $KERAS_BACKEND)",
                metavar="NAME", choices=KERAS_BACKENDS),
    BenchOption("--sync-every", "timed steps per host sync: auto (blocks of at least 1 s at "
                "the warm-up's speed), N, or tf_cnn (every step, as tf_cnn_benchmarks)",
                metavar="auto|N|tf_cnn", env="GPULAB_SYNC_EVERY", default="auto"),
    BenchOption("--process-start", "how each measuring process starts: exec (its own "
                "interpreter; elapsed_s holds the framework's import, as the papers' runs) or "
                "fork (from a zygote that imported it once: seconds less a process on a CPU) "
                "(default: the suite's process_start, else exec)", metavar="exec|fork",
                env="GPULAB_PROCESS_START", choices=PROCESS_STARTS),
)  # fmt: skip


def to_int(flag: str, text: str) -> int:
    """``text`` as an int, or one InputError naming ``flag`` (long text is never converted)."""
    raw = text.strip()
    if len(raw) > MAX_DIGITS or not raw.lstrip("+-").isdigit() or not raw.isascii():
        raise InputError(f"{flag} must be an integer, got {text[:40]!r}")
    return int(raw)


def parse_int(option: BenchOption, text: str | int | None) -> int | None:
    """``text`` as an int within the option's bounds (None stays None), else one InputError
    worded as the suite's checks word it."""
    value = text if text is None or isinstance(text, int) else to_int(option.flag, text)
    if value is None or option.minimum is None:
        return value
    if value < option.minimum:
        raise InputError(f"{option.flag} must be an integer >= {option.minimum}, got {value}")
    if option.maximum is not None and value > option.maximum:
        raise InputError(f"{option.flag} must be at most {option.maximum}, got {value}")
    return value


def check_choice(option: BenchOption, value: str | None) -> str | None:
    if value is not None and option.choices and value not in option.choices:
        raise InputError(
            f"unknown {option.flag} {value[:40]!r} (known: {', '.join(option.choices)})"
        )
    return value


def finish(values: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The parsed values of every option: integers converted and bounded, choices checked,
    defaults from the environment filled in, exactly one of each group. InputError otherwise."""
    out: dict[str, Any] = {}
    for opt in OPTIONS:
        value = values.get(opt.dest)
        if opt.kind is int:
            out[opt.dest] = parse_int(opt, value)
            continue
        if value is None:
            value = opt.default_value(environ)
        out[opt.dest] = check_choice(opt, value)
    out["sync_every"] = check_sync_every(out.get("sync_every") or "auto")
    for group in {o.group for o in OPTIONS if o.group}:
        members = [o for o in OPTIONS if o.group == group]
        if sum(out[o.dest] is not None for o in members) != 1:
            names = " or ".join(f"{o.flag} {o.metavar}" for o in members)
            raise InputError(f"give exactly one of {names}")
    return out


def check_sync_every(value: str | int) -> int | str:
    """``auto``, ``tf_cnn`` or an integer >= 1, else one InputError naming --sync-every."""
    from workloads.timing import parse_sync_every

    try:
        return parse_sync_every(value)
    except ValueError:
        raise InputError(
            f"--sync-every must be auto, tf_cnn or an integer >= 1, got {str(value)[:40]!r}"
        ) from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options as argparse arguments (values stay text; :func:`finish` converts them)."""
    for opt in OPTIONS:
        p.add_argument(
            opt.flag,
            dest=opt.dest,
            metavar=opt.metavar,
            required=opt.runner_required,
            help=opt.full_help() + (f" (one of {', '.join(opt.choices)})" if opt.choices else ""),
        )


def flags() -> Sequence[str]:
    return [o.flag for o in OPTIONS]
