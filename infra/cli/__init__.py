"""The ``gpulab`` console script.

Each command group lives in its own module with a ``register(app)`` function; heavy imports
(TensorFlow, pulumi, ansible-runner, openstacksdk) stay inside the command functions so that
``gpulab --help`` is instant. Bad input raises :class:`UsageError` (or the runner's
``InputError``): one line on stderr naming what is wrong, exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer
import typer.main
from typer._click import exceptions as click_exc  # typer's own copy of click

from infra.cli.errors import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    OptionError,
    UsageError,
    fail,
    interrupted_line,
)
from infra.signals import exit_code
from workloads.errors import InputError

# Command modules, each owning its commands. Order is the order of ``gpulab --help``.
COMMAND_MODULES = (
    "infra.cli.lifecycle",  # run, up, measure, down, rebuild, status, outputs
    "infra.cli.bench",  # bench
    "infra.cli.data",  # data
    "infra.cli.validate",  # validate
    "infra.cli.cloud",  # preflight, audit
    "infra.cli.report",  # report
    "infra.cli.compare",  # compare
    "infra.cli.export",  # export
    "infra.cli.inventory",  # inventory
    "infra.cli.study",  # study run|status|report
)

CONTEXT = {"help_option_names": ["-h", "--help"]}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpulab {version()}")
        raise typer.Exit(0)


def version() -> str:
    """The installed package's version (its metadata), else the checkout's pyproject.toml."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("gpulab")
    except PackageNotFoundError:
        return "unknown (not installed)"


app = typer.Typer(
    name="gpulab",
    help="Build GPU labs, measure them with deep-learning workloads, compare topologies.\n\n"
    "Exit codes: 0 ok, 1 a step or a check failed, 2 bad input (one line on stderr), "
    "130 interrupted by Ctrl-C (SIGINT), 143 stopped by SIGTERM (docs/cli.md).",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
)


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True,
            help="Print gpulab's version and exit.",
        ),
    ] = False,
) -> None:  # fmt: skip
    """Build GPU labs, measure them with deep-learning workloads, compare topologies."""


for _name in COMMAND_MODULES:
    try:
        _mod = importlib.import_module(_name)
    except ModuleNotFoundError as _exc:
        if _exc.name != _name:
            raise
        continue
    _mod.register(app)


def _tidy(cmd: Any) -> None:
    """Every command: -h as well as --help, and a metavar on every parameter (a flag shows
    none; others their name in capitals), never typer's ``<bool>``/``<str>``."""
    cmd.context_settings.setdefault("help_option_names", ["-h", "--help"])
    help_opt = cmd.get_help_option(typer.Context(cmd, help_option_names=["-h", "--help"]))
    for param in [*cmd.params, *([help_opt] if help_opt is not None else [])]:
        choice = getattr(getattr(param, "type_descriptor", None), "is_choice", False)
        if param.metavar is None and not choice:
            flag = getattr(param, "is_flag", False) or getattr(param, "count", False)
            param.metavar = "" if flag else (param.name or "value").upper().replace("_", "-")
        param.display_type_rich = _display(param)
    for sub in getattr(cmd, "commands", {}).values():
        _tidy(sub)


def _display(param: Any) -> Callable[[Any], str | None]:
    """How the type column shows ``param``: its metavar, or its choices (a|b), no brackets."""
    shown = param.display_type_rich

    def display(ctx: Any) -> str | None:
        if param.metavar is not None:
            return str(param.metavar)
        text: str | None = shown(ctx)
        return text[1:-1] if text and text[0] == "<" and text[-1] == ">" else text

    return display


def command() -> Any:
    """The click command of the whole CLI, tidied (see :func:`_tidy`)."""
    cmd = typer.main.get_command(app)
    _tidy(cmd)
    return cmd


def main(argv: list[str] | None = None) -> int:
    try:
        rc = command().main(args=argv, prog_name="gpulab", standalone_mode=False)
    except (UsageError, InputError, OptionError) as exc:
        fail(str(exc))
        return EXIT_USAGE
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        fail("aborted")
        return EXIT_INTERRUPTED
    except KeyboardInterrupt as exc:  # (typer itself turns one in a command into exit 130)
        fail(interrupted_line(exc))
        return exit_code(exc)
    except click_exc.NoArgsIsHelpError as exc:  # `gpulab data`: the group's help
        typer.echo(exc.format_message(), err=True)
        return EXIT_USAGE
    except click_exc.ClickException as exc:  # click's usage errors: one line too
        fail(exc.format_message().replace("Value error, ", "").rstrip("."))
        return EXIT_USAGE if isinstance(exc, click_exc.UsageError) else int(exc.exit_code)
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
