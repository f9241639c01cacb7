"""The ``gpulab`` console script.

Each command group lives in its own module with a ``register(app)`` function; heavy imports
(TensorFlow, pulumi, ansible-runner, openstacksdk) stay inside the command functions so that
``gpulab --help`` is instant. Bad input raises :class:`UsageError` (or the runner's
``InputError``): one line on stderr naming what is wrong, exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer

from infra.cli.errors import UsageError, fail
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

app = typer.Typer(
    name="gpulab",
    help="Build GPU labs, measure them with deep-learning workloads, compare topologies.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _name in COMMAND_MODULES:
    try:
        _mod = importlib.import_module(_name)
    except ModuleNotFoundError as _exc:
        if _exc.name != _name:
            raise
        continue
    _mod.register(app)


def main(argv: list[str] | None = None) -> int:
    try:
        rc = app(args=argv, standalone_mode=False)
    except (UsageError, InputError) as exc:
        fail(str(exc))
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        fail("aborted")
        return 130
    except KeyboardInterrupt:
        fail("interrupted")
        return 130
    except Exception as exc:
        # click's usage errors (typer may vendor its own copy of click, so match by class name)
        if any(cls.__name__ == "ClickException" for cls in type(exc).__mro__):
            exc.show()  # type: ignore[attr-defined]
            return int(exc.exit_code)  # type: ignore[attr-defined]
        raise
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
