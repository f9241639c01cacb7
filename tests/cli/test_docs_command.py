"""`gpulab docs [TOPIC]`: the pages that ship with gpulab (the help names them by topic), the
same text in a checkout and in an installed wheel (package data of infra.cli)."""

from __future__ import annotations

import json
import re
import tomllib

from tests.cli.conftest import REPO


def test_docs_lists_the_pages_and_shows_one(gpulab) -> None:
    r = gpulab("docs")
    assert r.returncode == 0
    for page in sorted((REPO / "docs").glob("*.md")):
        assert re.search(rf"^{re.escape(page.stem)}\s+", r.stdout, re.M), page.name
    cli = gpulab("docs", "cli")
    assert cli.returncode == 0 and cli.stdout == (REPO / "docs" / "cli.md").read_text()
    schema = gpulab("docs", "cli-json")
    assert json.loads(schema.stdout)["title"] == "gpulab --json output"
    bad = gpulab("docs", "nope")
    assert bad.returncode == 2 and "no docs page 'nope'; pages: ansible, " in bad.stderr


def test_every_docs_topic_the_help_names_exists(gpulab) -> None:
    """Help text says `gpulab docs TOPIC` where it used to say docs/<page>.md."""
    from infra.cli.docs import topics

    named: set[str] = set()
    for path in (REPO / "infra" / "cli").glob("*.py"):
        named |= set(re.findall(r"gpulab docs ([a-z][a-z-]+)", path.read_text()))
    assert named and not named - set(topics()), named - set(topics())


def test_the_docs_ship_as_package_data() -> None:
    """A wheel carries infra/cli/docs/* (the link to docs/ is followed when it is built)."""
    link = REPO / "infra" / "cli" / "docs"
    assert link.is_symlink() and link.resolve() == REPO / "docs"
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert {"docs/*.md", "docs/*.json"} <= set(data["package-data"]["infra.cli"])
