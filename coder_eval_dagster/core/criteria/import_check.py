"""`import_check`: every absolute import of a Python file resolves in the sandbox's Python (coder_eval's old type)."""

from __future__ import annotations

import ast
import json
import shlex
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..models.base import SandboxPath
from ..models.criterion import CriterionBase
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext

# Run in the sandbox (its venv's python3 first on PATH, its folder first on sys.path): which modules resolve.
FIND_SPECS = """
import importlib.util, json, sys
def found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False
print(json.dumps([name for name in sys.argv[1:] if found(name)]))
"""


class ImportCheck(CriterionBase):
    type: Literal["import_check"]
    path: SandboxPath
    timeout: float = Field(default=30, gt=0)


def imported_modules(source: str) -> list[str]:
    """Every absolute import anywhere in the module (``import a.b`` and ``from a.b import c`` give ``a.b``), in
    order, once each; relative imports are the package's own and are left out."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return list(dict.fromkeys(names))


@checks(ImportCheck)
def check(criterion: ImportCheck, ctx: CheckContext) -> Outcome:
    path, resolved = ctx.resolve_file(criterion.path)
    source, _ = ctx.read_text(path)
    try:
        modules = imported_modules(source)
    except SyntaxError as exc:
        return Outcome(0.0, resolved, error=f"SyntaxError: {exc.msg} (line {exc.lineno})")
    if not modules:
        return Outcome(1.0, resolved | {"checked": 0, "note": "no imports to check"})
    run = ctx.sandbox.run(shlex.join(["python3", "-c", FIND_SPECS, *modules]), criterion.timeout)
    try:
        found = set(json.loads(run.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return Outcome(0.0, resolved, error=run.error or f"could not check the imports: {run.stderr.strip()[-500:]}")
    failed = [name for name in modules if name not in found]
    details = resolved | {"checked": len(modules), "importable": len(modules) - len(failed), "failed": failed}
    return Outcome((len(modules) - len(failed)) / len(modules), details)
