"""The import rules of CONTRIBUTING.md ("Layout: what may import what"), read from the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# package -> top-level modules it must never import (at any depth, lazily or not)
FORBIDDEN = {
    "workloads": {"infra", "report", "pulumi", "ansible", "ansible_runner", "matplotlib"},
    "report": {"infra", "pulumi", "ansible", "ansible_runner"},
}


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in ``path``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def offenders(
    package: str, bad: set[str] | None = None, prefix: str | None = None, root: Path = REPO
) -> list[str]:
    out = []
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for line, module in imports(path):
            if (bad and module.split(".")[0] in bad) or (prefix and module.startswith(prefix)):
                out.append(f"{rel}:{line}: {module}")
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_lower_packages_do_not_import_upper_ones(package: str) -> None:
    assert offenders(package, bad=FORBIDDEN[package]) == []


def test_nothing_below_the_cli_imports_it() -> None:
    found = [o for o in offenders("infra", prefix="infra.cli") if not o.startswith("infra/cli/")]
    assert found == []


def test_the_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "infra").mkdir()
    (tmp_path / "infra" / "m.py").write_text("def f():\n    from infra.cli.errors import E\n")
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "w.py").write_text("import pulumi\n")
    assert offenders("infra", prefix="infra.cli", root=tmp_path) == [
        "infra/m.py:2: infra.cli.errors"
    ]
    assert offenders("workloads", bad=FORBIDDEN["workloads"], root=tmp_path) == [
        "workloads/w.py:1: pulumi"
    ]
