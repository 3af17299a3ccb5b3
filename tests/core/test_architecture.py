"""The layers hold: no import cycle in the package, the format imports nothing above it, the core no Dagster.

Imports are read from the source (module-level and inside functions; a block
under ``if TYPE_CHECKING:`` is for the type checker only and does not count),
so a lazy import cannot hide a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent.parent / "coder_eval_dagster"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.iter_child_nodes(tree):
        if _type_checking_only(node):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        else:
            found.extend(_import_nodes(node))
    return found


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The package modules an import statement loads (``from pkg import mod`` names the submodule)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return {f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names}


def imports_of(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return {
        target
        for node in _import_nodes(tree)
        for target in _targets(module, node)
        if target in MODULES or target.split(".")[0] == "dagster"
    }


GRAPH = {module: {t for t in imports_of(module) if t in MODULES and t != module} for module in MODULES}


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(GRAPH[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle() -> None:
    assert _cycles() == []


def test_the_format_imports_nothing_above_it() -> None:
    """core/models/ imports only itself, and leaf modules that import nothing of the package (core/files.py)."""
    leaves = {module for module, targets in GRAPH.items() if not targets}
    models = "coder_eval_dagster.core.models"
    upward = {
        (module, target)
        for module in GRAPH
        if module.startswith(models)
        for target in GRAPH[module]
        if not target.startswith(models) and target not in leaves
    }
    assert upward == set()


def test_criteria_import_no_agent() -> None:
    """The judges start their CLI with the helpers agents use too (core/agent_cli.py), never an agent module."""
    edges = {
        (module, target)
        for module in GRAPH
        if module.startswith("coder_eval_dagster.core.criteria")
        for target in GRAPH[module]
        if target.startswith("coder_eval_dagster.core.agents")
    }
    assert edges == set()


def test_the_core_imports_no_dagster() -> None:
    assert {
        module
        for module in MODULES
        if module.startswith("coder_eval_dagster.core")
        and any(target.split(".")[0] == "dagster" for target in imports_of(module))
    } == set()
