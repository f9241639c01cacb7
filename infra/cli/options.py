"""Shared option types of the CLI: bounded integers, ``--json``, ``--state-url``, the options of
the commands that run arms on this machine, and the bench options (generated from
:data:`workloads.bench_options.OPTIONS`). An option that two commands take is defined here once."""

from __future__ import annotations

import enum
import inspect
import json
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from infra.cli.errors import UsageError, option_parser


def int_option(name: str, value: str | int | None, minimum: int, maximum: int) -> int | None:
    """``value`` as an int in ``minimum..maximum`` (None stays None), else a UsageError."""
    if value is None:
        return None
    from workloads.bench_options import to_int

    number = value if isinstance(value, int) else to_int(name, value)
    if not minimum <= number <= maximum:
        raise UsageError(f"{name} must be from {minimum} to {maximum}, got {number}")
    return number


def shown(text: str) -> str:
    """``text`` as a terminal can print it: a lone surrogate (a file name that is not UTF-8)
    as its escape, not an encoding error."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def bounded(flag: str, minimum: int, maximum: int, help: str, metavar: str = "N", **kw: Any) -> Any:
    """A typer.Option for an integer in ``minimum..maximum`` (the range is in its help); a bad
    value is one line naming the option (exit 2)."""
    return typer.Option(
        flag,
        parser=option_parser(lambda v: int_option(flag, v, minimum, maximum)),
        metavar=metavar,
        help=f"{help} ({minimum}..{maximum})",
        **kw,
    )


JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        help="One JSON object on stdout, also on failure: {ok, command, data, error} "
        "(gpulab docs cli-json); logs go to stderr.",
    ),
]
StateUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--state-url",
        envvar="PULUMI_BACKEND_URL",
        metavar="URL",
        help="Pulumi state backend, e.g. file://~/.pulumi-state (Pulumi's own variable).",
        show_envvar=True,
        show_default=False,
    ),
]


# -- the options of the commands that run arms on this machine (run local, study run) --------


class PythonMode(enum.StrEnum):
    """Where the docker arm's Python packages come from (``infra.local_run.PYTHON_MODES``)."""

    image = "image"
    host = "host"


ResultsDirOpt = Annotated[
    str | None,
    typer.Option(metavar="DIR", help="Results root (default: $GPULAB_RESULTS, else ./results)."),
]
DockerOpt = Annotated[
    bool,
    typer.Option(
        "--docker/--no-docker", help="Run the docker arms when a Docker engine is reachable."
    ),
]
DockerHostOpt = Annotated[
    str | None,
    typer.Option(
        metavar="URL", help="Docker engine address (default: DOCKER_HOST or the local socket)."
    ),
]
BaseImageOpt = Annotated[
    str | None,
    typer.Option(
        envvar="GPULAB_DOCKER_BASE",
        metavar="IMAGE",
        help="Base image of the docker arms (default tensorflow/tensorflow:<TF version>"
        "[-gpu]); it needs Python 3 and, unless --docker-python host, TensorFlow.",
    ),
]
DockerPythonOpt = Annotated[
    PythonMode,
    typer.Option(
        help="'image': the base image's Python packages; 'host': bind-mount this venv's "
        "site-packages read-only (the image needs the same Python minor version).",
    ),
]
ReportOpt = Annotated[
    bool,
    typer.Option(
        "--report/--no-report",
        help="Write the report (HTML, Markdown, CSV, figures) beside the records at the end.",
    ),
]


def print_json(data: Any) -> None:
    """``data`` as JSON on stdout, nothing else there."""
    sys.stdout.write(json.dumps(data, default=str, sort_keys=True, indent=2) + "\n")
    sys.stdout.flush()


# -- the bench options --------------------------------------------------------------------


def _bench_int(opt: Any) -> Callable[[str], int | None]:
    from workloads.bench_options import parse_int

    return option_parser(lambda value: parse_int(opt, value))


def bench_parameters() -> list[inspect.Parameter]:
    """The typer parameters of ``gpulab bench``, one per :data:`workloads.bench_options.OPTIONS`
    entry."""
    from workloads.bench_options import OPTIONS

    params: list[inspect.Parameter] = []
    for opt in OPTIONS:
        kw: dict[str, Any] = {"metavar": opt.metavar, "show_default": False}
        annotation: Any = str | None
        if opt.kind is int:
            kw["parser"] = _bench_int(opt)
            annotation = int | None
        elif opt.choices:
            choices: Any = enum.Enum(opt.dest, {c: c for c in opt.choices}, type=str)  # type: ignore[misc]  # names from the table
            annotation = choices | None
            kw["metavar"] = "|".join(opt.choices)
        help_text = opt.full_help()
        if opt.flag == "--out":
            help_text += " (default results/bench-<run id>.jsonl)"
        info = typer.Option(opt.flag, help=help_text, **kw)
        params.append(
            inspect.Parameter(
                opt.dest, inspect.Parameter.KEYWORD_ONLY, default=None,
                annotation=Annotated[annotation, info],
            )
        )  # fmt: skip
    return params


def with_parameters(fn: Callable[..., Any], extra: list[inspect.Parameter]) -> Callable[..., Any]:
    """``fn`` (taking ``**kwargs``) with ``extra`` appended to its signature for typer."""
    sig = inspect.signature(fn, eval_str=True)
    kept = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    fn.__signature__ = sig.replace(parameters=[*kept, *extra])  # type: ignore[attr-defined]
    fn.__annotations__ = {p.name: p.annotation for p in [*kept, *extra]}
    return fn


def add_examples(fn: Callable[..., Any], examples: list[str]) -> Callable[..., Any]:
    """``fn`` with an "Examples:" block (one command line each, never rewrapped) at the end of
    its help."""
    lines = "\n".join(f"  {e}" for e in examples)
    fn.__doc__ = f"{inspect.cleandoc(fn.__doc__ or '')}\n\nExamples:\n\n\b\n{lines}\n"
    return fn
