"""The CLI docs keep their promises: troubleshooting quotes the project's own messages, the
docs are linked from the README, and architecture names modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _source_text() -> str:
    """Every message source (Python, playbooks) with implicit string concatenation joined and
    whitespace collapsed, so a message split over lines reads as one."""
    parts = []
    for root in ("infra", "workloads", "playbooks"):
        for path in (REPO / root).rglob("*"):
            if path.suffix in (".py", ".yml") and path.is_file():
                parts.append(path.read_text(encoding="utf-8", errors="replace"))
    text = "\n".join(parts)
    text = re.sub(r"\"\s*\n\s*f?\"", "", text)  # "a "\n f"b" -> "a b"
    return re.sub(r"\s+", " ", text)


def _quoted_messages() -> list[str]:
    doc = (DOCS / "troubleshooting.md").read_text()
    return re.findall(r"```text\n(.*?)\n```", doc, re.S)


def test_troubleshooting_lists_ten_errors() -> None:
    doc = (DOCS / "troubleshooting.md").read_text()
    assert len(re.findall(r"^## \d+\. ", doc, re.M)) == 10
    sections = re.split(r"^## \d+\. ", doc, flags=re.M)[1:]
    assert all("```text\n" in section for section in sections)  # each quotes its message


@pytest.mark.parametrize("message", _quoted_messages())
def test_each_quoted_error_is_the_projects_own(message: str) -> None:
    source = _source_text()
    literal = message.removeprefix("gpulab: error: ")
    fragments = [f.strip() for f in re.split(r"<[^>]*>", literal) if len(f.strip()) >= 7]
    assert sum(map(len, fragments)) >= 12, message
    missing = [f for f in fragments if f not in source]
    assert not missing, f"not found in infra/, workloads/, playbooks/: {missing}"


def test_readme_links_the_docs_and_they_exist() -> None:
    readme = (REPO / "README.md").read_text()
    for name in ("cli.md", "architecture.md", "troubleshooting.md"):
        assert f"(docs/{name})" in readme and (DOCS / name).is_file(), name


def test_architecture_names_real_modules() -> None:
    doc = (DOCS / "architecture.md").read_text()
    paths = set(re.findall(r"`?((?:infra|report|workloads|playbooks)/[\w/.-]+\.(?:py|yml))", doc))
    assert len(paths) >= 8
    missing = [p for p in sorted(paths) if not (REPO / p).exists()]
    assert not missing, missing
    assert doc.count("```mermaid") == 2
