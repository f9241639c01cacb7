"""``gpulab list [WHAT]``: what gpulab knows, each from its own source (the registry of
topologies, the execution environments of :mod:`workloads.execenv`, the models, the shipped
suites and studies, the published claims the report judges); nothing here keeps a list."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Annotated, Any

import typer

from infra.cli.options import JsonOpt, add_examples


class What(enum.StrEnum):
    topologies = "topologies"
    envs = "envs"
    models = "models"
    suites = "suites"
    studies = "studies"
    claims = "claims"


Item = dict[str, Any]


def topologies() -> list[Item]:
    from infra.topologies import registry

    return [
        {
            "name": spec.name,
            "summary": spec.summary,
            "gpu_paths": list(spec.gpu_paths),
            "default_envs": list(spec.default_envs),
            "required_keys": [k.key for k in spec.keys if k.required and k.key != "topology"],
            "example": spec.stack_file or None,
        }
        for spec in registry().values()
    ]


def envs() -> list[Item]:
    from workloads import execenv

    out = []
    for name in execenv.names():
        env = execenv.get(name)
        out.append(
            {
                "name": name,
                "container": env.container,
                "aliases": list(env.aliases),
                "roles": list(env.roles),
                "why": env.why,
            }
        )
    return out


def models() -> list[Item]:
    from workloads.models import MODELS

    return [
        {
            "name": m.name,
            "default_batch": m.default_batch,
            "image_size": m.image_size,
            "channels": m.channels,
            "min_image_size": m.min_image_size,
            "description": m.description,
        }
        for m in MODELS.values()
    ]


def suites() -> list[Item]:
    from workloads.errors import InputError
    from workloads.suites import list_suites, load_suite

    out: list[Item] = []
    for name in list_suites():
        try:
            suite = load_suite(name)
        except InputError as exc:
            out.append({"name": name, "description": "", "entries": 0, "models": [],
                        "problem": str(exc)})  # fmt: skip
            continue
        out.append(
            {
                "name": name,
                "description": suite.description,
                "entries": len(suite.entries),
                "models": sorted({e.model for e in suite.entries}),
                "problem": None,
            }
        )
    return out


def studies() -> list[Item]:
    from infra.study.model import STUDIES_DIR
    from workloads.errors import InputError
    from workloads.inputs import load_yaml

    out: list[Item] = []
    for path in sorted(STUDIES_DIR.glob("*.yaml")):
        problem: str | None = None
        try:
            loaded = load_yaml(path, "study file")
        except InputError as exc:
            loaded, problem = {}, str(exc)
        if not isinstance(loaded, dict):
            loaded, problem = {}, problem or "not a mapping"
        doc: dict[str, Any] = loaded
        arms = doc["arms"] if isinstance(doc.get("arms"), list) else []
        out.append(
            {
                "name": path.stem,
                "description": str(doc.get("description") or ""),
                "arms": [a.get("name") for a in arms if isinstance(a, dict)],
                "repeats": doc.get("repeats") if isinstance(doc.get("repeats"), int) else None,
                "claims": [str(c) for c in doc.get("claims") or []],
                "file": path,
                "problem": problem,
            }
        )
    return out


def claims() -> list[Item]:
    from report.claim_table import NOT_CHECKABLE, units_needed
    from report.claims import all_checks
    from report.published import load_published

    pub = load_published()
    checks: dict[str, list[Any]] = {}
    for check in all_checks(pub):
        checks.setdefault(check.claim, []).append(check)
    return [
        {
            "id": claim,
            "text": text,
            "checkable": claim not in NOT_CHECKABLE,
            "why_not": NOT_CHECKABLE.get(claim),
            "units_needed": units_needed(claim),
            "tolerance": "; ".join(dict.fromkeys(c.tolerance for c in checks.get(claim, []))),
        }
        for claim, text in pub.claim_texts.items()
    ]


SOURCES: dict[What, Callable[[], list[Item]]] = {
    What.topologies: topologies,
    What.envs: envs,
    What.models: models,
    What.suites: suites,
    What.studies: studies,
    What.claims: claims,
}

# How each kind is shown as text: the columns of its table (item keys).
COLUMNS: dict[What, tuple[str, ...]] = {
    What.topologies: ("name", "summary", "required_keys"),
    What.envs: ("name", "container", "aliases", "roles"),
    What.models: ("name", "default_batch", "image_size", "min_image_size"),
    What.suites: ("name", "entries", "description"),
    What.studies: ("name", "arms", "repeats", "description"),
    What.claims: ("id", "checkable", "units_needed", "text"),
}
HINTS: dict[What, str] = {
    What.topologies: "gpulab init TOPOLOGY writes a stack file; gpulab docs topologies",
    What.envs: "gpulab:execution_envs of a stack; gpulab docs topologies",
    What.models: "gpulab bench --model NAME",
    What.suites: "gpulab bench --suite NAME, gpulab:suite of a stack",
    What.studies: "gpulab study run NAME (--on-local: on this machine); gpulab docs studies",
    What.claims: "gpulab report judges them; gpulab docs report",
}


def _cell(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def _print(what: What, items: list[Item]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"{what.value} ({len(items)})", title_justify="left")
    for col in COLUMNS[what]:
        table.add_column(col.replace("_", " "), overflow="fold")
    for item in items:
        table.add_row(*(Text(_cell(item.get(col))) for col in COLUMNS[what]))
    console = Console()
    console.print(table)
    console.print(Text(f"use: {HINTS[what]}"))


def list_cmd(
    what: Annotated[
        What | None,
        typer.Argument(
            metavar="WHAT",
            help="topologies, envs, models, suites, studies or claims (default: the names of "
            "each).",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """List what gpulab knows: topologies, envs, models, suites, studies, claims.

    Each list comes from where gpulab reads it: the topology registry, the execution
    environments' table, the models, the shipped suites and studies, and the published
    claims the report judges."""
    if what is None:
        every = {w.value: SOURCES[w]() for w in What}
        names = {k: [i.get("name") or i.get("id") for i in v] for k, v in every.items()}
        if json_out:
            from infra.cli.output import emit

            emit({"what": None, "items": names})
            return
        for kind, shown in names.items():
            typer.echo(f"{kind} ({len(shown)}): {', '.join(map(str, shown))}")
        typer.echo("gpulab list KIND for details")
        return
    items = SOURCES[what]()
    if json_out:
        from infra.cli.output import emit

        emit({"what": what.value, "items": items})
        return
    _print(what, items)


def register(app: typer.Typer) -> None:
    app.command("list")(
        add_examples(
            list_cmd,
            ["gpulab list", "gpulab list studies", "gpulab list topologies --json"],
        )
    )
