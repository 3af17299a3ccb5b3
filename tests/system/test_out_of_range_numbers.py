"""Numbers out of the range the product can hold, through the installed CLI: a task or trajectory field over its
Parquet column's type is refused where it is written (file:line: field), and an option out of range is a usage
error naming it. The task passed `validate` and failed the run at its end (no run.json for any evaluation); an
option's value was an internal error (exit 3)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from coder_eval_dagster.core.models.limits import INT32_MAX, INT64_MAX
from coder_eval_dagster.core.tables import SCHEMAS

from .conftest import WRITES_A, SystemCli, replay_task_file, task_file

pytestmark = pytest.mark.slow


def test_the_bounds_are_the_table_columns_ranges() -> None:
    columns = SCHEMAS["task_results"]
    assert columns.field("expected_turns").type == pa.int32() and INT32_MAX == 2**31 - 1
    assert columns.field("turns").type == pa.int32()
    assert columns.field("input_tokens").type == pa.int64() and INT64_MAX == 2**63 - 1


def test_an_expected_turns_over_int32_is_refused_at_its_line(system_cli: SystemCli) -> None:
    task = task_file(system_cli.folder / "tasks", "big", agent={"type": "none"}, run_limits={"expected_turns": 2**31})
    said = system_cli.invalid(task).err
    assert f"{task}:" in said and "run_limits.expected_turns: Input should be less than or equal to 2147483647" in said
    outcome = system_cli("run", task, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 2 and "run_limits.expected_turns" in outcome.err, outcome.output
    assert "internal error" not in outcome.err


@pytest.mark.parametrize(
    ("turns", "said"),
    [
        ([{"usage": {"input_tokens": 10**23}, "text": "hi"}], "turns.0.usage.input_tokens: Input should be less"),
        (
            [{"usage": {"output_tokens": INT64_MAX}, "text": "a"}, {"usage": {"output_tokens": 1}, "text": "b"}],
            "turns: the turns' output_tokens add up to more than the run's tables hold (9223372036854775807)",
        ),
    ],
    ids=["one-turn", "their-sum"],
)
def test_replayed_tokens_over_int64_are_refused_in_the_trajectory(
    system_cli: SystemCli, turns: list[dict[str, object]], said: str
) -> None:
    task = replay_task_file(system_cli.folder / "tasks", "rep", turns, success_criteria=WRITES_A)
    refused = system_cli.invalid(task).err
    assert "rep.traj.yaml:" in refused and said in refused
    outcome = system_cli("run", task, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 2 and said in outcome.err, outcome.output


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (("prune", "--keep-days", "1000000"), "argument --keep-days: must be at most 100000 (days), got 1000000"),
        (("prune", "--keep-days", "inf"), "argument --keep-days: must be at most 100000 (days), got inf"),
        (("prune", "--keep-days", "nan"), "argument --keep-days: must be at most 100000 (days), got nan"),
        (("prune", "--keep-days", "1e400"), "argument --keep-days: must be at most 100000 (days), got 1e400"),
        (("history", "--days", "99999999999"), "argument --days: a whole number of days from 1 to 100000"),
        (
            ("run", "ok.yaml", "--concurrency", "99999999999999999999"),
            "argument --concurrency/-j/--max-parallel: must be at most 9223372036854775807",
        ),
        (("run", "ok.yaml", "--limit", str(2**64)), "argument --limit: must be at most 9223372036854775807"),
    ],
    ids=[
        "keep-days-million",
        "keep-days-inf",
        "keep-days-nan",
        "keep-days-1e400",
        "history-days",
        "concurrency",
        "limit",
    ],
)
def test_an_option_out_of_range_is_a_usage_error_naming_it(
    system_cli: SystemCli, command: tuple[str, ...], said: str
) -> None:
    system_cli.runs.mkdir()
    task_file(system_cli.folder, "ok", agent={"type": "none"})
    where = ("--runs-dir", system_cli.runs) if command[0] != "history" else ()
    arguments = (*command[:1], system_cli.runs, *command[1:]) if command[0] == "history" else (*command, *where)
    outcome = system_cli(*arguments, env={}, cwd=system_cli.folder)
    assert outcome.code == 2 and said in outcome.err, outcome.output
    assert "internal error" not in outcome.err
