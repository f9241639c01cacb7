"""``gpulab init TOPOLOGY``: write ``Pulumi.<stack>.yaml`` for a topology, and make its directory a
gpulab lab project (:mod:`infra.cli.lab_project`) when it is none yet.

The values come from ``-c KEY=VALUE`` (as ``pulumi new -c``) and, on a terminal, from prompts
for each required key still missing (the topology's example stack offers its value when it
is no placeholder). Each value is checked as ``gpulab validate`` checks it before anything is
written; a bad one is exit 2 and no file. The file lists the topology's keys in its table's
order: the set ones, then each required key not given yet as a commented ``REQUIRED`` line,
then the optional ones commented out with their help and default. With every required value
given the file is valid (``gpulab validate`` passes); otherwise ``gpulab validate`` names each
missing value at once. Secrets are never written in plain text: a required secret gets the
examples' placeholder and the line says which ``pulumi config set --secret`` replaces it.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from infra.cli.errors import UsageError
from infra.cli.options import JsonOpt, add_examples

SECRET_PLACEHOLDER = {"secure": "v1:REPLACE_ME:run-pulumi-config-set-secret"}
_KEY = re.compile(r"^(?:gpulab:)?([a-z][a-z0-9_]*)$")


def _spec(topology: str) -> Any:
    from infra.topologies import get

    try:
        return get(topology)
    except ValueError as exc:
        raise UsageError(f"{exc} (gpulab list topologies)") from None


def _keys(spec: Any) -> dict[str, Any]:
    from infra.config.model import keys

    return {k.key: k for k in keys(spec)}


def _typed(key: Any, text: str) -> Any:
    """``text`` as the key's value: a string key takes it as it is; others read it as YAML
    (``2``, ``true``, ``[native, docker]``, ``{a: b}``)."""
    import yaml

    from infra.config.schema import pulumi_type

    kind = pulumi_type(key)
    if kind is not None and kind["type"] == "string":
        return text
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _check(key: Any, value: Any) -> str | None:
    from infra.config.model import parse

    return parse(key, value)[1]


def given_values(spec: Any, pairs: list[str]) -> dict[str, Any]:
    """``-c KEY=VALUE`` pairs as typed values; unknown keys, secrets and bad values refused,
    every problem in one line."""
    table = _keys(spec)
    values: dict[str, Any] = {}
    problems: list[str] = []
    for pair in pairs:
        name, sep, text = pair.partition("=")
        m = _KEY.match(name.strip())
        if not sep or m is None:
            problems.append(f"-c {pair[:60]!r} is not KEY=VALUE (e.g. -c image=ubuntu-22.04)")
            continue
        key = table.get(m[1])
        if key is None:
            problems.append(f"gpulab:{m[1]} is not a key of {spec.name} (keys: {', '.join(table)})")
        elif key.secret:
            problems.append(
                f"gpulab:{key.key} is a secret: after init, set it with `pulumi config set "
                f"--secret gpulab:{key.key} -s STACK` (a stack file holds it only encrypted)"
            )
        elif (problem := _check(key, value := _typed(key, text))) is not None:
            problems.append(problem)
        else:
            values[key.key] = value
    if problems:
        raise UsageError("; ".join(problems))
    return values


def _example_values(spec: Any) -> dict[str, Any]:
    """The topology's example stack's values that are no placeholder (prompt defaults)."""
    from infra.config import raw_from_stack_file
    from infra.config.placeholders import placeholder_keys
    from infra.paths import PROJECT

    path = PROJECT / spec.stack_file
    if not spec.stack_file or not path.is_file():
        return {}
    raw = raw_from_stack_file(path)
    hidden = set(placeholder_keys(raw))
    return {k: v for k, v in raw.items() if k not in hidden and not isinstance(v, dict)}


def prompt_missing(spec: Any, values: dict[str, Any]) -> None:
    """Ask for each required key not in ``values`` (not the secrets), re-asking until the
    answer is valid; the example's value is offered as the default."""
    examples = _example_values(spec)
    for key in _keys(spec).values():
        if not key.required or key.secret or key.key in values:
            continue
        shown = examples.get(key.key)
        while True:
            text = typer.prompt(
                f"gpulab:{key.key} ({key.help})",
                default=None
                if shown is None
                else str(shown).lower()
                if isinstance(shown, bool)
                else str(shown),
                err=True,
            )
            value = _typed(key, text)
            problem = _check(key, value)
            if problem is None:
                values[key.key] = value
                break
            typer.echo(f"  {problem}", err=True)


def _value(value: Any) -> str:
    """``value`` as one line of YAML (quoted where YAML needs it)."""
    import yaml

    text = yaml.safe_dump([value], default_flow_style=True, width=10_000)
    return text.strip()[1:-1]  # [v] -> v


def _line(key: str, value: Any) -> str:
    return f"gpulab:{key}: {_value(value)}"


def _comment(text: str) -> str:
    return " ".join(str(text).split())


def render(spec: Any, stack: str, values: dict[str, Any]) -> str:
    """The stack file: header, set keys, REQUIRED lines still to fill, optional keys."""
    keys = _keys(spec)
    lines = [
        f"# Stack {stack}: topology {spec.name} ({_comment(spec.summary)}).",
        "# Written by `gpulab init`. Check it with `gpulab validate "
        f"{stack}`, build it with `gpulab up {stack}`.",
        "# Every key: gpulab docs topologies. A commented-out optional key takes its default.",
        "config:",
    ]
    todo: list[str] = []
    optional: list[str] = []
    for key in keys.values():
        help_text = _comment(key.help)
        if key.key in values:
            lines += [f"  # {help_text}", f"  {_line(key.key, values[key.key])}"]
        elif key.required and key.secret:
            todo += [
                f"  # REQUIRED secret ({help_text}): `pulumi config set --secret "
                f"gpulab:{key.key} -s {stack}` replaces this placeholder",
                f"  {_line(key.key, SECRET_PLACEHOLDER)}",
            ]
        elif key.required:
            todo += [f"  # REQUIRED: {help_text}", f"  # gpulab:{key.key}:"]
        else:
            default = key.default if not callable(key.default) else None
            shown = f" (default {_value(default)})" if default not in (None, (), {}, "") else ""
            modes = f" [gpulab:mode {', '.join(sorted(key.modes))}]" if key.modes else ""
            optional.append(f"  # gpulab:{key.key}: {help_text}{shown}{modes}")
    if todo:
        lines += ["", "  # --- still to set (gpulab validate names each) ---", *todo]
    if optional:
        lines += ["", "  # --- optional ---", *optional]
    return "\n".join(lines) + "\n"


def problems_of(text: str) -> list[str]:
    """What ``gpulab validate`` would say of the stack file ``text`` ([] when valid)."""
    from infra.config import ConfigError, load_stack_file

    with tempfile.TemporaryDirectory(prefix="gpulab-init-") as tmp:
        path = Path(tmp) / "Pulumi.check.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_stack_file(path)
        except ConfigError as exc:
            return list(exc.problems)
    return []


def init_cmd(
    topology: Annotated[
        str,
        typer.Argument(
            metavar="TOPOLOGY",
            help="The lab's topology (gpulab list topologies).",
            show_default=False,
        ),
    ],
    stack: Annotated[
        str | None,
        typer.Option(
            "-s",
            "--stack",
            metavar="NAME",
            help="Stack name: the file is Pulumi.<NAME>.yaml (default: TOPOLOGY).",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        list[str] | None,
        typer.Option(
            "-c",
            "--config",
            metavar="KEY=VALUE",
            help="A gpulab:* value (repeat it); lists and numbers as YAML, e.g. "
            "-c execution_envs=[native,docker]. gpulab:lab defaults to the stack name.",
            show_default=False,
        ),
    ] = None,
    directory: Annotated[
        Path,
        typer.Option(
            "--dir",
            metavar="DIR",
            help="Where to write (made a gpulab lab project: Pulumi.yaml and "
            "__main__.py, unless it has a Pulumi.yaml).",
            show_default=".",
        ),
    ] = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Replace a stack file that exists.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Write a stack file (Pulumi.<stack>.yaml) for a topology, from -c KEY=VALUE or prompts.

    On a terminal, gpulab asks for each required value not given with -c (the example's value
    is the default); otherwise the file lists the values still to set as REQUIRED lines and
    `gpulab validate` names them all at once. A value is checked before anything is written:
    a bad one is exit 2 and no file. Secrets are never written: `pulumi config set --secret`
    sets them. Exit 0 when written (the output says whether it is valid yet), 2 on bad input."""
    from infra.cli import lab_project
    from infra.cli.stack_ref import _NAME
    from infra.keys.types import LAB_RE
    from workloads.files import make_dirs, write_text

    spec = _spec(topology)
    name = stack or spec.name
    if not _NAME.match(name):
        raise UsageError(f"--stack {name[:60]!r} is not a stack name (letters, digits, '-', '_')")
    values = {"topology": spec.name, **given_values(spec, config or [])}
    if "lab" not in values and re.fullmatch(LAB_RE, name):
        values["lab"] = name
    target = directory / f"Pulumi.{name}.yaml"
    if target.exists() and not force:
        raise UsageError(f"{target} exists: --force replaces it, or choose another --stack")
    if sys.stdin.isatty() and not json_out:
        prompt_missing(spec, values)
    text = render(spec, name, values)
    problems = problems_of(text)
    missing = [k.key for k in _keys(spec).values() if k.required and k.key not in values]
    if problems and not missing:  # every value given, yet they do not go together
        raise UsageError("; ".join(problems))
    make_dirs(directory)
    project = lab_project.write(directory.resolve())
    write_text(target, text)
    data = {"stack": name, "topology": spec.name, "file": target.resolve(),
            "project_files": project, "valid": not problems, "missing": missing,
            "problems": problems}  # fmt: skip
    if json_out:
        from infra.cli.output import emit

        emit(data)
        return
    for path in project:
        typer.echo(f"wrote {path} (a gpulab lab project)", err=True)
    typer.echo(f"wrote {target}")
    if problems:
        typer.echo(f"still to set: {', '.join('gpulab:' + k for k in missing)}; "
                   f"`gpulab validate {name}` names each", err=True)  # fmt: skip
    else:
        typer.echo(f"valid: next `gpulab preflight {name}`, then `gpulab up {name}`", err=True)


def register(app: typer.Typer) -> None:
    app.command("init")(
        add_examples(
            init_cmd,
            [
                "gpulab init local -s mylab",
                "gpulab init nova-pci -s pci -c image=ubuntu-22.04 -c pci_alias=a100:1 ...",
                "gpulab init vsphere-gpu --dir labs/vgpu    # asks for each required value",
            ],
        )
    )
