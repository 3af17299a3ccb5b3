"""Reports say why: the terminal summary, run.md and task.html name the error or the failing criteria."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import criterion, run_cli, run_folders, task_with, write_task

AGENTLESS = {"agent": {"type": "none"}, "initial_prompt": None, "sandbox": {"python": None}}


def test_reports_name_the_error_or_the_failing_criteria(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    tasks = tmp_path / "tasks"
    write_task(
        tasks,
        task_with(task_id="good", success_criteria=[criterion("run_command", command="true")], **AGENTLESS),
        "a.yaml",
    )
    write_task(
        tasks,
        task_with(
            task_id="wrong",
            success_criteria=[
                criterion("run_command", command="echo 41", expected_stdout="42", description="prints the answer")
            ],
            **AGENTLESS,
        ),
        "b.yaml",
    )
    write_task(
        tasks,
        task_with(
            task_id="broken",
            pre_run=[{"command": "echo setting up; echo oops >&2; exit 9"}],
            success_criteria=[criterion("run_command", command="true")],
            **AGENTLESS,
        ),
        "c.yaml",
    )
    result = run_cli("run", tasks, "--runs-dir", tmp_path / "runs")
    assert result.code == 1
    assert "prints the answer" in result.out and "pre_run command 1 failed" in result.out  # the why column

    (run_dir,) = run_folders(tmp_path / "runs")
    run_md = (run_dir / "run.md").read_text()
    assert "| default | 3 | 1 | 1 | 50.0% | 0.500 |" in run_md  # per variant; the ERROR (broken) left out of the rate
    assert "[wrong](default/wrong/00/task.html)" in run_md
    wrong_line = next(line for line in run_md.splitlines() if "[wrong]" in line)
    assert "run_command" in wrong_line and "prints the answer" in wrong_line and "0.00" in wrong_line
    broken_line = next(line for line in run_md.splitlines() if "[broken]" in line)
    assert "pre_run command 1 failed (exit code 9)" in broken_line

    wrong = (run_dir / "default/wrong/00/task.html").read_text()
    assert "<dt>command</dt><dd>echo 41</dd>" in wrong and "<dt>expected_stdout</dt><dd>42</dd>" in wrong
    broken = (run_dir / "default/broken/00/task.html").read_text()
    assert "class='banner'><strong>ERROR</strong>: pre_run command 1 failed" in broken
    assert "<p class='label'>stdout</p><pre>setting up" in broken and "<p class='label'>stderr</p><pre>oops" in broken


def test_the_analysts_latest_run_of_each_night_query_selects_the_latest_run(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    import duckdb

    from coder_eval_dagster.core.tables import write_table

    guide = (Path(__file__).parent.parent.parent / "docs" / "analysts.md").read_text()
    sql = next(block for block in guide.split("```sql")[1:] if "latest run of each night" in block).split("```")[0]
    tables = tmp_path / "runs" / "tables"
    # and a run of something else later that night, which the query's variants leave out
    for run_id, hour, success, variant_id in (
        ("early", 1, False, "baseline"),
        ("late", 5, True, "baseline"),
        ("other", 6, False, "default"),
    ):
        row = {
            "run_id": run_id,
            "run_ts": datetime(2026, 12, 1, hour, tzinfo=UTC),
            "variant_id": variant_id,
            "task_id": "t",
            "base_task_id": "t",
            "row_id": None,
            "replicate": 0,
            "final_status": "SUCCESS" if success else "FAILURE",
            "success": success,
            "weighted_score": float(success),
        }
        write_table(tables, "task_results", run_id, row["run_ts"], [row])
    first_statement = sql.split(";")[0].replace("runs/tables", str(tables))
    ((_date, variant, score, pass_rate),) = duckdb.sql(first_statement).fetchall()
    assert (variant, score, pass_rate) == ("baseline", 1.0, 1.0)  # the late run only, not the day's average
