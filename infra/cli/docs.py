"""``gpulab docs [TOPIC]``: the documentation that ships with gpulab, read where it is installed.

The pages are the project's ``docs/`` (:data:`infra.paths.PROJECT`: the checkout's root, or
the copy of the project's files a wheel carries, ``setup.py`` putting ``docs/`` there), so the
help text can name a page as ``gpulab docs TOPIC`` and mean the same text in a checkout and in
an installed wheel.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from infra.cli.options import JsonOpt, add_examples
from infra.paths import PROJECT

DOCS = PROJECT / "docs"


def topics() -> dict[str, Path]:
    """Topic -> its page: every ``docs/*.md`` by its stem, then each JSON Schema
    (``cli-json.schema.json`` is topic ``cli-json``; ``results-schema.json`` is
    ``results-schema.json``, beside the page ``results-schema``)."""
    pages = {p.stem: p for p in sorted(DOCS.glob("*.md"))}
    for path in sorted(DOCS.glob("*.json")):
        name = path.name.removesuffix(".schema.json") if path.name.endswith(".schema.json") else ""
        pages[name if name and name not in pages else path.name] = path
    return pages


def title(path: Path) -> str:
    """A page's first heading (a schema's title)."""
    if path.suffix == ".json":
        import json

        try:
            return str(json.loads(path.read_text(encoding="utf-8")).get("title", path.name))
        except (OSError, ValueError):
            return path.name
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def docs_cmd(
    topic: Annotated[
        str | None,
        typer.Argument(
            metavar="TOPIC", help="A page (default: the list of pages).", show_default=False
        ),
    ] = None,
    path_only: Annotated[
        bool, typer.Option("--path", help="Print the page's file path instead of its text.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Show a page of the documentation (gpulab docs cli).

    Without TOPIC, the pages and their titles. The text is Markdown, as shipped; pipe it to a
    pager or a Markdown viewer (gpulab docs report | less). Exit 2 for an unknown topic."""
    from infra.cli.errors import UsageError
    from infra.cli.output import emit

    pages = topics()
    if topic is None:
        listed = [{"topic": t, "title": title(p), "path": p} for t, p in pages.items()]
        if json_out:
            emit({"topic": None, "pages": listed})
            return
        width = max(len(t) for t in pages)
        for item in listed:
            typer.echo(f"{item['topic']:<{width}}  {item['title']}")
        typer.echo(f"(in {DOCS.resolve()}; gpulab docs TOPIC shows one)")
        return
    path = pages.get(topic.removesuffix(".md"))
    if path is None:
        raise UsageError(f"no docs page {topic!r}; pages: {', '.join(pages)}")
    if json_out:
        emit({"topic": topic, "title": title(path), "path": path,
              "text": path.read_text(encoding="utf-8")})  # fmt: skip
        return
    if path_only:
        typer.echo(str(path.resolve()))
        return
    sys.stdout.write(path.read_text(encoding="utf-8"))


def register(app: typer.Typer) -> None:
    app.command("docs")(
        add_examples(docs_cmd, ["gpulab docs", "gpulab docs cli", "gpulab docs topologies | less"])
    )
