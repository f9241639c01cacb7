"""The ``gpulab`` console script.

Each command group lives in its own module with a ``register(app)`` function. The modules are
imported only when their command runs or shows its help (:class:`LazyGroup`): ``gpulab --help``
lists the commands from :data:`COMMANDS` without importing any of them, and heavy imports
(TensorFlow, pulumi, ansible-runner, openstacksdk, rich) stay inside the command functions.
Bad input raises :class:`UsageError` (or the runner's ``InputError``): one line on stderr
naming what is wrong, exit code 2, never a traceback. With ``--json`` every outcome is one
JSON object on stdout (:mod:`infra.cli.output`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, MutableMapping
from typing import Annotated, Any, NamedTuple

import typer
import typer.main
from typer._click import exceptions as click_exc  # typer's own copy of click
from typer.core import TyperGroup

from infra.cli import output
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


class Entry(NamedTuple):
    module: str  # the module whose register(app) adds the command
    section: str  # where `gpulab --help` lists it
    help: str  # its one-line help (the command's own first line: tests/cli/test_lazy.py)


# Every command, in the order of `gpulab --help`. A module is imported when one of its commands
# runs or shows its help, never for the list.
COMMANDS: dict[str, Entry] = {
    "doctor": Entry(
        "infra.cli.doctor",
        "Start here",
        "Check what this machine can run, and how to fix what it lacks.",
    ),
    "list": Entry(
        "infra.cli.listing",
        "Start here",
        "List what gpulab knows: topologies, envs, models, suites, studies, claims.",
    ),
    "init": Entry(
        "infra.cli.scaffold",
        "Start here",
        "Write a stack file (Pulumi.<stack>.yaml) for a topology, from -c KEY=VALUE or prompts.",
    ),
    "docs": Entry(
        "infra.cli.docs", "Start here", "Show a page of the documentation (gpulab docs cli)."
    ),
    "validate": Entry(
        "infra.cli.validate",
        "Labs",
        "Check a stack file's gpulab:* config (types, required keys, enums, CIDRs, counts).",
    ),
    "preflight": Entry(
        "infra.cli.cloud",
        "Labs",
        "Check that the cloud can hold the stack's topology before `gpulab up`.",
    ),
    "up": Entry(
        "infra.cli.lifecycle",
        "Labs",
        "Build or update the lab, configure its hosts, measure; print the outputs.",
    ),
    "measure": Entry(
        "infra.cli.lifecycle",
        "Labs",
        "Measure a built lab again without rebuilding it (only the workload runs re-run).",
    ),
    "status": Entry(
        "infra.cli.lifecycle", "Labs", "The stack's last update and what its outputs hold."
    ),
    "outputs": Entry("infra.cli.lifecycle", "Labs", "The stack outputs (secrets masked)."),
    "inventory": Entry(
        "infra.cli.inventory", "Labs", "Write the Ansible inventory the lab uses (no secrets)."
    ),
    "down": Entry(
        "infra.cli.lifecycle",
        "Labs",
        "Destroy the lab's resources; results and the stack file stay.",
    ),
    "rebuild": Entry(
        "infra.cli.lifecycle", "Labs", "Destroy, then up again with the same stack config."
    ),
    "audit": Entry(
        "infra.cli.cloud", "Labs", "List what of the lab is left in the cloud after `gpulab down`."
    ),
    "run": Entry(
        "infra.cli.lifecycle", "Measure", "Run a lab's workloads without the Pulumi engine."
    ),
    "bench": Entry(
        "infra.cli.bench",
        "Measure",
        "Measure training throughput (tf_cnn_benchmarks method) and write result records.",
    ),
    "study": Entry(
        "infra.cli.study",
        "Measure",
        "Studies: arms (stack + execution environment) x repeats, one verdict report.",
    ),
    "data": Entry(
        "infra.cli.data", "Measure", "Write input data (ImageNet-format shards, MNIST IDX files)."
    ),
    "report": Entry(
        "infra.cli.report",
        "Results",
        "Compare arms normalized to a baseline, judge the published claims, write HTML/MD/CSV.",
    ),
    "compare": Entry(
        "infra.cli.compare",
        "Results",
        "Two runs (or two periods) side by side: fingerprint and throughput per paired group.",
    ),
    "export": Entry(
        "infra.cli.export",
        "Results",
        "Write the records as Parquet, or their medians as OpenMetrics (optionally pushed).",
    ),
}

# -h as well as --help; help text wrapped to the terminal, at most 100 columns
CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class _LazyCommands(MutableMapping[str, Any]):
    """The root's commands: the names from :data:`COMMANDS`, each module imported (and its
    commands built) on first access."""

    def __init__(self, eager: MutableMapping[str, Any]) -> None:
        self.loaded: dict[str, Any] = dict(eager)

    def _load(self, name: str) -> None:
        for cmd_name, cmd in _built(COMMANDS[name].module).items():
            self.loaded.setdefault(cmd_name, cmd)

    def __getitem__(self, name: str) -> Any:
        if name not in self.loaded and name in COMMANDS:
            self._load(name)
        return self.loaded[name]

    def __setitem__(self, name: str, cmd: Any) -> None:
        self.loaded[name] = cmd

    def __delitem__(self, name: str) -> None:
        del self.loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter([*COMMANDS, *(n for n in self.loaded if n not in COMMANDS)])

    def __len__(self) -> int:
        return len(set(COMMANDS) | set(self.loaded))

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in self.loaded


_BUILT: dict[str, dict[str, Any]] = {}  # module -> its click commands, built once a process


def _built(module: str) -> dict[str, Any]:
    """The click commands ``module``'s ``register(app)`` adds (imported and built once)."""
    if module not in _BUILT:
        sub = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)
        importlib.import_module(module).register(sub)
        commands = dict(typer.main.get_group(sub).commands)
        for cmd in commands.values():
            _tidy(cmd)
        _BUILT[module] = commands
    return _BUILT[module]


class LazyGroup(TyperGroup):
    """The root command group: commands listed from :data:`COMMANDS`, loaded when used."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.commands = _LazyCommands(self.commands)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for name, entry in COMMANDS.items():
            sections.setdefault(entry.section, []).append((name, entry.help))
        for section, rows in sections.items():
            with formatter.section(section):
                formatter.write_dl(rows)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpulab {version()}")
        raise typer.Exit(0)


def version() -> str:
    """The installed package's version (its metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("gpulab")
    except PackageNotFoundError:
        return "unknown (not installed)"


app = typer.Typer(
    name="gpulab",
    cls=LazyGroup,
    help="Build GPU labs, measure them with deep-learning workloads, compare topologies.\n\n"
    "New here: gpulab doctor, gpulab list studies, gpulab init local, gpulab docs. "
    "Every command: -h for its options and examples, --json (where offered) for one JSON "
    "object on stdout. Exit codes: 0 ok, 1 a step or a check failed, 2 bad input (one line on "
    "stderr), 130 interrupted by Ctrl-C (SIGINT), 143 stopped by SIGTERM (gpulab docs cli).",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
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


def _tidy(cmd: Any) -> None:
    """Every command: -h as well as --help; a metavar on every parameter (a flag shows none,
    others their name in capitals), never typer's ``<bool>``/``<str>``; an argument shown by
    its metavar alone, ``NAME`` when required and ``[NAME]`` when not (typer writes
    ``{NAME}``), with ``...`` when it takes several."""
    cmd.context_settings.setdefault("help_option_names", ["-h", "--help"])
    for param in cmd.params:
        kind = getattr(param, "type_descriptor", None)
        choices = getattr(kind, "choices", None) if getattr(kind, "is_choice", False) else None
        if param.metavar is None and choices:
            param.metavar = "|".join(str(getattr(c, "value", c)) for c in choices)
        elif param.metavar is None:
            flag = getattr(param, "is_flag", False) or getattr(param, "count", False)
            param.metavar = "" if flag else (param.name or "value").upper().replace("_", "-")
        if param.param_type_name == "argument":
            param.display_type_rich = lambda ctx: None
            param._usage_display_name = _usage_name(param)
    for sub in getattr(cmd, "commands", {}).values():
        _tidy(sub)


def _usage_name(param: Any) -> Callable[[], str]:
    name = param.metavar or (param.name or "value").upper()
    shown = (name if param.required else f"[{name}]") + ("..." if param.nargs != 1 else "")
    return lambda: shown


def command() -> Any:
    """The click command of the whole CLI (its commands load when used)."""
    return typer.main.get_command(app)


def command_name(root: Any, argv: list[str]) -> str:
    """The command ``argv`` names, as typed after ``gpulab`` (``"study status"``): the leading
    words that are commands."""
    words: list[str] = []
    group = root
    for token in argv:
        commands = getattr(group, "commands", None)
        if token.startswith("-") or commands is None or token not in commands:
            break
        words.append(token)
        group = commands[token]
    return " ".join(words)


def _wants_json(argv: list[str]) -> bool:
    return "--json" in (argv[: argv.index("--")] if "--" in argv else argv)


def _failed(message: str, code: int, show: Callable[[str], None] = fail) -> int:
    show(message)
    output.emit_error(message, code)
    return code


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    root = command()
    try:
        output.start(command_name(root, args), _wants_json(args))
        rc = root.main(args=args, prog_name="gpulab", standalone_mode=False)
    except (UsageError, InputError, OptionError) as exc:
        return _failed(str(exc), EXIT_USAGE)
    except typer.Exit as exc:
        return _exited(int(exc.exit_code))
    except typer.Abort:
        return _failed("aborted", EXIT_INTERRUPTED)
    except KeyboardInterrupt as exc:  # (typer itself turns one in a command into exit 130)
        return _failed(interrupted_line(exc), exit_code(exc))
    except click_exc.NoArgsIsHelpError as exc:  # `gpulab data`: the group's help
        return _failed(exc.format_message(), EXIT_USAGE, lambda m: typer.echo(m, err=True))
    except click_exc.ClickException as exc:  # click's usage errors: one line too
        message = exc.format_message().replace("Value error, ", "").rstrip(".")
        code = EXIT_USAGE if isinstance(exc, click_exc.UsageError) else int(exc.exit_code)
        return _failed(message, code)
    return _exited(rc if isinstance(rc, int) else 0)  # (click returns a command's Exit code)


def _exited(code: int) -> int:
    """A command ended with ``code``: a failure that printed its data but not yet its line
    gets the line on stderr; one that printed no envelope gets one (``--json``)."""
    if code and output.STATE.unprinted:
        fail(output.STATE.unprinted)
    if code:
        output.emit_error(output.last_error() or f"exit {code}", code)
    return code


if __name__ == "__main__":
    sys.exit(main())
