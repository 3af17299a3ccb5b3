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
