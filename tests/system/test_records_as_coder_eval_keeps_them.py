"""What a run records where the guide and coder_eval 0.12.16 say how, through the installed CLI.

A replayed call of a tool the agent was not given is refused (a live agent's
CLI refuses it); command statistics are coder_eval's (zeros for an agentless task,
the most common three calls in a row of the run's one iteration, coder_eval's turn); a criterion whose check failed
passes at ``pass_threshold: 0`` (the guide's rule); a resume that ran nothing
keeps the run's end; a rescore says that post_run left the sandbox it grades;
``history --days`` counts UTC days (the tables' ``run_date``) in any zone.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .conftest import SystemCli, replay_task_file, task_file

EDITS = {"calls": [{"tool": "Read", "path": "x.txt"}, {"tool": "Edit", "path": "x.txt", "old": "x", "new": "y"}]}
TURNS = [
    {"calls": [{"tool": "Write", "path": "x.txt", "content": "x"}, {"tool": "Bash", "command": "touch ran.txt"}]},
    *[EDITS] * 4,  # Read, Edit, Read, Edit...: three calls in a row across model turns, counted as coder_eval does
    *[{"calls": [{"tool": "Write", "path": n, "content": n}] * 2 + [{"tool": "Read", "path": n}]} for n in "ef"],
]


def _tasks(folder: Path) -> None:
    replay_task_file(
        folder,
        "tools",
        TURNS,
        agent={
            "type": "replay",
            "trajectory": "tools.traj.yaml",
            "allowed_tools": ["Write", "Read", "Bash"],
            "disallowed_tools": ["Bash"],
        },
        success_criteria=[{"type": "file_exists", "path": "x.txt", "description": "written"}],
    )
    task_file(
        folder,
        "cleaned",
        agent={"type": "none"},
        pre_run=[{"command": "echo a > a.txt && echo k > kept.txt"}],
        post_run=[{"command": "rm kept.txt"}],
        success_criteria=[
            {"type": "file_exists", "path": "kept.txt", "description": "kept before post_run"},
            {"type": "file_contains", "path": "nope.txt", "includes": ["x"], "pass_threshold": 0, "description": "r"},
        ],
    )


def _history_days(cli: SystemCli, zone: str) -> list[str]:
    outcome = cli("history", cli.runs, "--days", "1", "--format", "json", env={"TZ": zone})
    assert outcome.code == 0, outcome.output
    return sorted({row["run_date"][:10] for row in json.loads(outcome.out)["pass_rate_per_day"]})


def test_a_run_records_tools_statistics_thresholds_and_times_as_coder_eval(system_cli: SystemCli) -> None:
    _tasks(system_cli.folder / "tasks")
    outcome, run = system_cli.run(system_cli.folder / "tasks", env={})
    assert outcome.code == 0, outcome.output

    tools = run.result("tools")
    calls = [(c["tool_name"], c["result_status"]) for it in tools["iterations"] for c in it["commands"]][:4]
    assert calls == [("Write", "success"), ("Bash", "error"), ("Read", "success"), ("Edit", "error")]
    assert not (run.evaluation("tools") / "sandbox" / "ran.txt").exists()  # refused: nothing ran
    assert (run.evaluation("tools") / "sandbox" / "x.txt").read_text() == "x"  # the Edit never ran either
    assert tools["command_stats"]["most_common_sequence"] == "Read → Edit → Read"  # in the iteration, across turns
    assert tools["environment_info"]["system_prompt_semantics"] == "append"  # coder_eval's marker of the regime

    cleaned = run.result("cleaned")
    assert cleaned["final_status"] == "SUCCESS"  # the erroring check at threshold 0 passes, as the guide says
    assert [c["passed"] for c in cleaned["success_criteria_results"]] == [True, True]
    assert cleaned["success_criteria_results"][1]["error"]
    # agentless: coder_eval 0.12.16 records the agent stage's one iteration, with no call, and zero statistics
    assert (cleaned["iteration_count"], cleaned["actual_commands"]) == (1, 0)
    assert [len(iteration["commands"]) for iteration in cleaned["iterations"]] == [0]
    stats = cleaned["command_stats"]
    assert (stats["total_commands"], stats["success_rate"], stats["avg_command_time_ms"]) == (0, 0.0, None)
    (row,) = [r for r in run.summary["task_results"] if r["task_id"] == "cleaned"]
    assert (row["actual_commands"], row["iteration_count"], row["agent_wall_ms"]) == (0, 1, None)

    ended = run.summary["end_time"], run.summary["total_duration_seconds"]
    resumed = system_cli("run", "--resume", run.path, env={})
    assert resumed.code == 0, resumed.output
    assert (run.summary["end_time"], run.summary["total_duration_seconds"]) == ended  # nothing ran: same end

    rescored = system_cli("rescore", run.path, env={})
    assert "the post_run commands of cleaned ran after the run's criteria" in rescored.err, rescored.output
    assert run.result("cleaned")["final_status"] == "FAILURE"  # kept.txt is as post_run left it: gone

    today = datetime.now(UTC).date()
    (table,) = system_cli.runs.glob("tables/task_results/run_date=*/*.parquet")
    yesterday = table.parent.with_name(f"run_date={today - timedelta(days=1)}")
    yesterday.mkdir()
    shutil.copy(table, yesterday / "earlier.parquet")  # a run of the UTC day before
    for zone in ("Pacific/Kiritimati", "Pacific/Pago_Pago"):  # UTC+14 and UTC-11: another local day at any hour
        assert _history_days(system_cli, zone) == [today.isoformat()], zone
