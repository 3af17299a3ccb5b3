"""The max_usd warning says whether the cost budget was checked between turns: by a reported or a priced cost."""

from __future__ import annotations

import pytest

from coder_eval_dagster.core.limits import LATE_COST_WARNING, NO_COST_WARNING, BudgetTracker
from coder_eval_dagster.core.models.limits import RunLimits
from coder_eval_dagster.core.models.results import TurnRecord


def warnings_after(costs: list[float | None], estimate: float | None = None, max_usd: float | None = 5.0) -> list[str]:
    """The warnings of a budget that saw turns of these costs (None: none reported), each estimated at
    ``estimate`` (None: the run does not price the model)."""
    budget = BudgetTracker(RunLimits(max_usd=max_usd), estimate=lambda _turn: estimate)
    for index, cost in enumerate(costs, 1):
        budget.add(TurnRecord(index=index, input_tokens=100, output_tokens=10, cost_usd=cost))
    budget.finish()
    return budget.warnings


@pytest.mark.parametrize(
    ("costs", "estimate", "max_usd", "warned"),
    [
        ([None, None, None], None, 5.0, [NO_COST_WARNING]),  # nothing reported, nothing priced
        ([None, None, 0.3], None, 5.0, [LATE_COST_WARNING]),  # reported at the exchange's end, after every turn
        ([None, None, None], 0.1, 5.0, []),  # priced as each turn ended (the CLI's report discarded)
        ([None, 0.2, None, 0.1], None, 5.0, []),  # a dialog's first exchange reported before the next
        ([0.3], None, 5.0, []),  # one turn, checked after it
        ([0.1, 0.1], None, 5.0, []),  # reported each turn
        ([None, None], None, None, []),  # no max_usd
    ],
    ids=["never", "only-at-the-end", "priced", "between-exchanges", "one-turn", "reported", "no-cap"],
)
def test_the_warning_is_there_exactly_when_no_turn_but_the_last_had_a_cost(
    costs: list[float | None], estimate: float | None, max_usd: float | None, warned: list[str]
) -> None:
    assert warnings_after(costs, estimate, max_usd) == warned
