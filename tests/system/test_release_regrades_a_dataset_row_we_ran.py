"""The released coder_eval's `evaluate <NN folder>` rebuilds a row-task we ran from our task.json's recorded config.

Its ``TaskDefinition`` must load ``task_config.resolved``: one it refuses (our unset fields, coder_eval's unknown
ones) it replaces by the task file, loudly, without the dataset row's values, and re-grades a passing row FAILURE.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from . import test_coder_eval_oracle as release
from .conftest import SystemCli, only_run, task_file

pytestmark = pytest.mark.xdist_group("coder-eval-oracle")  # one worker: the install runs once
oracle = release.oracle  # the released coder-eval, installed by its script (a skip without Python 3.13)

HAS_THE_ROW_S_WORD = {
    "type": "file_contains",
    "description": "the row's word",
    "path": "word.txt",
    "includes": ["${row.word}"],
}


def test_the_release_regrades_our_dataset_row_by_its_recorded_config(oracle: Path, system_cli: SystemCli) -> None:
    tasks = system_cli.folder / "tasks"
    task = task_file(
        tasks,
        "ds",
        agent={"type": "none"},
        sandbox={"driver": "tempdir", "python": None},
        dataset={"paths": ["rows.jsonl"]},
        pre_run=[{"command": "echo apple > word.txt"}],
        success_criteria=[HAS_THE_ROW_S_WORD],
    )
    (tasks / "rows.jsonl").write_text(json.dumps({"id": "r1", "word": "apple"}) + "\n")
    outcome = system_cli("run", task, "--runs-dir", "runs", env={})
    assert outcome.code == 0, outcome.output
    run = only_run(system_cli.runs)
    row = Path("runs") / run.path.name / "default" / "ds" / "r1" / "00"

    graded = release.run_oracle(oracle, system_cli, "evaluate", str(row), "--allow-recorded-commands")
    said = graded.stdout + graded.stderr
    assert graded.returncode == 0, said
    assert "does not validate" not in said and "falling back" not in said, said  # before: 15 validation errors
    assert "SUCCESS → SUCCESS" in graded.stdout, said  # before: SUCCESS → FAILURE (no row value applied)
    regraded = run.result("ds/r1")
    assert regraded["task_config"]["resolved"]["success_criteria"][0]["includes"] == ["apple"]
    assert [criterion["score"] for criterion in regraded["success_criteria_results"]] == [1.0]


# Tasks with what coder_eval's TaskDefinition knows only for some agent types, and fields of ours it does not know.
AGENTS_AND_OURS = {
    "claude": {
        "initial_prompt": "hi",
        "agent": {"sdk_options": {"effort": "high"}, "system_prompt": "be brief", "system_prompt_mode": "append"},
        "sandbox": {"network": {"allow": ["pypi.org:443"]}},
        "run_limits": {"max_turns": 5, "max_tool_calls": 9, "expected_tool_calls": 3},
        "post_run": [{"command": "true", "fail_on_error": False}],
        "expected_commands": 2,
    },
    "codex": {
        "initial_prompt": "hi",
        "agent": {"type": "codex", "model": "gpt-5", "sdk_options": {}, "plugins": []},
        "sandbox": {"driver": "docker", "image": "python:3.12", "docker": {"network": "none"}},
    },
    "opencode": {
        "initial_prompt": "hi",
        "agent": {"type": "opencode", "model": "anthropic/claude-sonnet-4-6", "variant": "high", "pure": True},
        "sandbox": {"docker": {"network": {"allow": ["example.org:443"]}}},
    },
}
LOADS = """
import json, sys
from coder_eval.models.tasks import TaskDefinition
for task_id, resolved in json.loads(sys.stdin.read()).items():
    TaskDefinition.model_validate(resolved)
print("loaded")
"""


def test_the_release_s_task_model_loads_what_we_record_of_each_agent_type(oracle: Path, tmp_path: Path) -> None:
    from coder_eval_dagster.core.evaluation import task_config
    from coder_eval_dagster.core.resolution import resolve
    from coder_eval_dagster.core.run_spec import RunSpec

    for task_id, changes in AGENTS_AND_OURS.items():
        task_file(tmp_path, task_id, **changes)
    resolution = resolve(RunSpec(task_paths=[str(tmp_path)]), base_layer=False)
    assert not resolution.problems and len(resolution.row_tasks) == 3, resolution.problems
    recorded = {rt.task_id: task_config(rt).resolved for rt in resolution.row_tasks}
    assert recorded["claude"]["expected_commands"] == 2 and recorded["claude"]["agent"]["type"] == "claude-code"

    loaded = subprocess.run(
        [str(oracle.parent / "python"), "-c", LOADS],
        input=json.dumps(recorded),
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "TELEMETRY_ENABLED": "false", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert loaded.stdout.strip() == "loaded", loaded.stderr  # before: sdk_options, sandbox.network... refused
