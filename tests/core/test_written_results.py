"""The summary of a run takes the results its own scoring step wrote from memory, and a task.json changed since
from the file."""

from __future__ import annotations

import os
from pathlib import Path

from coder_eval_dagster.core.credentials import Credentials
from coder_eval_dagster.core.layout import RESULT_FILE
from coder_eval_dagster.core.models.results import EvaluationResult
from coder_eval_dagster.core.routing import ApiRoute
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.runs import collect_results


def _written(folder: Path, context: RunContext, task_id: str) -> EvaluationResult:
    result = EvaluationResult(
        run_id="r", task_id=task_id, base_task_id=task_id, variant_id="default", replicate=0, agent_type="none"
    )
    path = folder / "default" / task_id / "00" / RESULT_FILE
    path.parent.mkdir(parents=True)
    path.write_text(result.model_dump_json(indent=2))
    context.remember_result(path, result)
    return result


def test_a_result_is_taken_from_memory_only_while_its_file_is_the_one_written(tmp_path: Path) -> None:
    context = RunContext(ApiRoute("direct", secret="k"), Credentials())
    kept = _written(tmp_path, context, "kept")
    changed = _written(tmp_path, context, "changed")
    rewritten = tmp_path / "default/changed/00" / RESULT_FILE
    rewritten.write_text(changed.model_copy(update={"final_status": "FAILURE"}).model_dump_json())
    os.utime(rewritten, ns=(1, 1))  # another process's write: another time and size
    results = {r.task_id: r for r in collect_results(tmp_path, context.written_result)}
    assert results["kept"] is kept
    assert results["changed"] is not changed and results["changed"].final_status == "FAILURE"
    assert context.written == {}  # taken once: a second summary reads the files
