"""The file sensor under `coder-eval dev`'s daemon: an edit of a file a criterion reads through ``$TASK_DIR`` runs
its task, and so does a revert after the operator resets the sensor's cursor with the docs' command (run outside
the repository): its run key was the first tick's again, and Dagster skipped it as done."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from ..support.helpers import criterion, task_with, write, write_task
from .test_automation import AGENTLESS, BIN, Operator

pytestmark = pytest.mark.slow
NEVER = "0 0 1 1 *"  # the nightly schedule: not during the test
RESET = [
    str(BIN / "dagster"),
    "sensor",
    "cursor",
    "task_files_sensor",
    "--delete",
    "-m",
    "coder_eval_dagster.definitions",
]


def reset_cursor(operator: Operator) -> None:
    """The docs' command, until a tick after it starts from no cursor (a tick under way when it ran may write its
    own cursor after it); that tick runs nothing: every key was evaluated."""

    def reset() -> Any:
        return subprocess.run(RESET, env=operator.env, cwd=operator.root, capture_output=True, timeout=120, check=True)

    for _ in range(3):
        ticks = operator.ticks_seeing(reset)
        assert not [run_id for tick in ticks for run_id in tick.run_ids]
        if json.loads(ticks[-1].cursor)["requests"] == 0:
            return
    raise AssertionError("the sensor's cursor was not reset")


def test_a_task_dir_edit_and_a_revert_after_a_cursor_reset_run(tmp_path: Path) -> None:
    operator = Operator(tmp_path, NEVER)
    operator.init_home()
    check = write(operator.tasks / "family/alpha/check.txt", "A")
    reads_task_dir = [criterion("run_command", command="test -f $TASK_DIR/check.txt")]
    write_task(
        operator.tasks / "family/alpha", task_with(task_id="alpha", success_criteria=reads_task_dir, **AGENTLESS)
    )
    with operator.serve():
        (first,) = operator.runs_of(dg.RunsFilter(tags={"coder_eval/trigger": "files"}), 1)
        (edited,) = operator.change(lambda: write(check, "B"))
        assert operator.materialized(edited) == ["alpha|default"]
        reset_cursor(operator)
        (reverted,) = operator.change(lambda: write(check, "A"))
        assert operator.materialized(reverted) == ["alpha|default"]
        assert len({run.tags["dagster/run_key"] for run in (first, edited, reverted)}) == 3
