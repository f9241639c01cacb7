"""No import circles among the product's modules (infra/, workloads/, report/).

The graph is read from the source with ``ast``: every ``import`` and ``from ... import`` of a
product module, at the top of a file or inside a function (a function-local import hides a
circle from the interpreter until the function runs, not from this test). Importing
``a.b.c`` from outside the package ``a.b`` also runs ``a/__init__.py`` and ``a/b/__init__.py``
first, so it counts as an import of those too; a module inside a package does not depend on
its own package's ``__init__`` unless it imports it by name.

``python -m tests.test_import_cycles`` prints the graph's size, its circles and the function-
local imports of product modules.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Container
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("infra", "workloads", "report")


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def product_modules(root: Path = REPO) -> dict[str, Path]:
    """Every module of the product packages under ``root``, by dotted name."""
    found: dict[str, Path] = {}
    for top in PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            found[module_name(root, path)] = path
    return found


def _imported(node: ast.AST, here: str, is_package: bool, modules: Container[str]) -> set[str]:
    """The product modules an import node names: ``from X import y`` names the module
    ``X.y`` where there is one, else ``X`` (whose ``y`` it takes)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = here.split(".") if is_package else here.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        module = ".".join([*base, node.module] if node.module else base)
    else:
        module = node.module or ""
    return {f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module
            for a in node.names}  # fmt: skip


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def edges(root: Path = REPO) -> dict[str, dict[str, list[tuple[int, bool]]]]:
    """module -> {imported module: [(line, at the top of the file), ...]}."""
    modules = product_modules(root)
    graph: dict[str, dict[str, list[tuple[int, bool]]]] = {m: {} for m in modules}
    for here, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        top = {id(n) for n in tree.body}
        top |= {id(n) for stmt in tree.body if isinstance(stmt, ast.If) for n in stmt.body}
        top |= {id(n) for stmt in tree.body if isinstance(stmt, ast.Try) for n in stmt.body}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = _imported(node, here, path.name == "__init__.py", modules)
            targets = {n for n in names if n in modules}
            for target in list(targets):  # the packages that importing it initializes first
                targets |= {p for p in _parents(target) if p in modules and
                            not here.startswith(p + ".") and p != here}  # fmt: skip
            for target in targets - {here}:
                graph[here].setdefault(target, []).append((node.lineno, id(node) in top))
    return graph


def circles(graph: dict[str, dict[str, list[tuple[int, bool]]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_circles() -> None:
    assert circles(edges()) == []


def test_the_check_sees_circles_through_function_imports_and_packages(tmp_path: Path) -> None:
    pkg = tmp_path / "infra"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("from infra.b import x\n")
    (pkg / "a" / "low.py").write_text("y = 1\n")
    (pkg / "b.py").write_text("def f():\n    from infra.a.low import y\n")  # a/__init__ first
    (pkg / "c.py").write_text("import infra.d\n")
    (pkg / "d.py").write_text("from . import c\n")
    for top in PACKAGES[1:]:
        (tmp_path / top).mkdir()
    graph = edges(tmp_path)
    assert graph["infra.b"] == {"infra.a.low": [(2, False)], "infra.a": [(2, False)]}
    assert circles(graph) == [["infra.a", "infra.b"], ["infra.c", "infra.d"]]


# Where imports inside functions must say why (start-up time: Pulumi, cloud SDKs, frameworks,
# a heavy module of our own). The list only grows, as files are brought to the rule.
SAYS_WHY = (
    "infra/config", "infra/keys", "infra/topologies", "infra/specs", "infra/preflight.py",
    "infra/program.py", "infra/automation.py", "infra/summary.py", "infra/hosts.py",
    "workloads/execenv.py", "workloads/setting.py",
)  # fmt: skip
OWNED_ELSEWHERE = ("infra/config/roles.py",)  # parsers of role inputs: brought to it later


def unexplained_imports(path: Path, rel: str) -> list[str]:
    """Imports inside a function of ``path`` without a comment saying why: on the import's
    line, on one of its group (the imports just before or after it), or on the line above."""
    lines = path.read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines), rel)
    top = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom) or id(node) in top:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        first = last = node.lineno - 1
        while first > 0 and lines[first - 1].lstrip().startswith(("import ", "from ")):
            first -= 1
        while last + 1 < len(lines) and lines[last + 1].lstrip().startswith(("import ", "from ")):
            last += 1
        group = lines[max(first - 1, 0) : last + 1]
        if not any("#" in line for line in group):
            found.append(f"{rel}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return found


def test_imports_inside_functions_say_why() -> None:
    found = []
    for where in SAYS_WHY:
        paths = [REPO / where] if where.endswith(".py") else sorted((REPO / where).rglob("*.py"))
        for path in paths:
            rel = path.relative_to(REPO).as_posix()
            if rel not in OWNED_ELSEWHERE:
                found += unexplained_imports(path, rel)
    assert found == []


def test_the_why_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import os\n\n"
        "def f():\n    import json\n\n"
        "def g():\n    # lazily: heavy\n    import pulumi\n    from pulumi import Output\n\n"
        "def h():\n    import yaml  # lazily: heavy\n"
    )
    assert unexplained_imports(tmp_path / "m.py", "m.py") == ["m.py:4: import json"]


def main() -> None:
    graph = edges()
    local = sorted(
        (m, t, line) for m, ts in graph.items() for t, seen in ts.items()
        for line, at_top in seen if not at_top
    )  # fmt: skip
    n_edges = sum(len(ts) for ts in graph.values())
    print(f"modules {len(graph)}, imports between them {n_edges}, function-local {len(local)}")
    for comp in circles(graph):
        print("circle:", " <-> ".join(comp))
    for m, t, line in local:
        print(f"local: {m}:{line} -> {t}")


if __name__ == "__main__":
    main()
