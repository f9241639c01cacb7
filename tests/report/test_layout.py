"""The report is controller-side: a top-level package that nothing shipped to GPU hosts
(``workloads/``, the runner) imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def report_imports(root: Path) -> list[str]:
    """``file:line`` of every import of ``report`` / ``workloads.report`` under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            if any(n.split(".")[0] == "report" or n.startswith("workloads.report") for n in names):
                found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_nothing_under_workloads_imports_the_report() -> None:
    assert not (REPO / "workloads" / "report").exists()
    assert report_imports(REPO / "workloads") == []


def test_the_import_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import json\nfrom report.table import build_table\n")
    (tmp_path / "b.py").write_text("def f():\n    import workloads.report.load\n")
    assert report_imports(tmp_path) == ["a.py:2", "b.py:2"]


def test_the_runner_entry_point_loads_no_report_nor_matplotlib() -> None:
    code = (
        "import sys, workloads.__main__, workloads.bench, workloads.records, "
        "workloads.fingerprint, workloads.setting; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('report', 'matplotlib')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
