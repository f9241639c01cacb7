"""`gpulab docs [TOPIC]`: the pages that ship with gpulab (the help names them by topic), the
same text in a checkout and in an installed wheel (the project's docs/, which the wheel carries:
tests/test_install.py runs `gpulab docs` from an installed wheel)."""

from __future__ import annotations

import ast
import json
import re

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


def test_the_docs_are_the_projects_and_ship_with_its_files() -> None:
    """The pages are read from infra.paths.PROJECT/docs (no second copy or link inside a
    package), and setup.py copies docs/ into the wheel's project files."""
    from infra.cli.docs import DOCS
    from infra.paths import PROJECT

    assert DOCS == PROJECT / "docs" and DOCS.resolve() == REPO / "docs"
    assert not (REPO / "infra" / "cli" / "docs").exists()
    tree = ast.parse((REPO / "setup.py").read_text())
    copied = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "PROJECT_FILES"
    )
    assert "docs" in copied
