"""What a contributor builds on holds as docs/architecture.md says: the criterion union of every type registered,
the one TIMEOUT conversion of the agents, a --type help listing every registered agent type, the run folder's
names from core/layout.py."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Literal

from pydantic import TypeAdapter

from coder_eval_dagster.core import criteria, layout
from coder_eval_dagster.core.agents.base import AgentOutput
from coder_eval_dagster.core.criteria.outcome import Outcome
from coder_eval_dagster.core.models.criterion import CriterionBase


class LateCriterion(CriterionBase):
    type: Literal["late_criterion"]


def test_a_criterion_registered_after_import_parses_and_no_union_made_at_import_is_offered() -> None:
    assert not hasattr(criteria, "Criterion")
    criteria.checks(LateCriterion)(lambda criterion, ctx: Outcome(1.0, {}))
    try:
        parsed = TypeAdapter(criteria.criterion_union()).validate_python({"type": "late_criterion", "description": "d"})
        assert isinstance(parsed, LateCriterion)
    finally:
        criteria.unregister("late_criterion")


def test_a_timeout_names_the_limit_that_ran_out() -> None:
    output = AgentOutput().timed_out("turn_timeout")
    assert (output.stop_reason, output.final_status, output.error) == (
        "turn_timeout",
        "TIMEOUT",
        "run_limits.turn_timeout reached",
    )


def test_the_type_flag_lists_every_registered_agent_type() -> None:
    """A type registered before the run's options are built (an installed package's) is in --type's help."""
    program = (
        "from coder_eval_dagster.core.models.agent import AGENT_TYPES; AGENT_TYPES.register('late-agent'); "
        "from coder_eval_dagster.core.run_spec import RunSpec; print(RunSpec.model_fields['agent_type'].description)"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().startswith("agent type for every task (agent.type: claude-code, codex, opencode,")
    assert done.stdout.strip().endswith(", late-agent)")


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
    }


def test_no_module_spells_a_run_folder_file_name_layout_holds() -> None:
    """A file name of the run folder is written as layout's constant (models/base.py repeats some, checked)."""
    names = {value for key, value in vars(layout).items() if key.isupper() and isinstance(value, str) and "." in value}
    package = Path(layout.__file__).parent.parent
    spelled = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "layout.py" or path == package / "core" / "models" / "base.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstrings(tree)
        spelled += [
            f"{path.relative_to(package)}:{node.lineno} {node.value}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings
        ]
    assert spelled == []


def test_the_layout_tree_draws_the_tables_checked_file() -> None:
    from coder_eval_dagster.core.tables import CHECKED

    assert f"tables/<table>/{CHECKED}" in (layout.__doc__ or "")
