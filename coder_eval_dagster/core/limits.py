"""run_limits at run time: cumulative budgets checked after each completed turn, soft budgets after the agent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

from .models.limits import RunLimits
from .models.results import TurnRecord

Breach = Literal["TOKEN_BUDGET_EXCEEDED", "COST_BUDGET_EXCEEDED"]  # a breached budget's final status
TOKEN_BUDGET_EXCEEDED: Final = "TOKEN_BUDGET_EXCEEDED"
COST_BUDGET_EXCEEDED: Final = "COST_BUDGET_EXCEEDED"
# max_usd is checked after a turn only when the turns so far have a cost (reported, or at the run's prices)
NO_COST_WARNING = "max_usd is set but no turn had a cost (none reported or priced): the cost budget was not checked"
LATE_COST_WARNING = (
    "max_usd is set but no turn had a cost until the last (none reported or priced before it): "
    "the cost budget was checked only at the end"
)
EXPECTED_TURNS_SLACK = 1.5  # visible turns a task may use per expected turn and still be within expected_turns


def within_expected_turns(visible_turns: int, expected_turns: int) -> bool:
    """The guide's measure: within 1.5x expected_turns (the headline share)."""
    return visible_turns <= EXPECTED_TURNS_SLACK * expected_turns


def soft_budget_warnings(limits: RunLimits, visible_turns: int, tool_calls: int) -> list[str]:
    """The soft budgets (expected_turns, expected_tool_calls) an agent overran: warned of, never stopped for."""
    warnings = []
    expected = limits.expected_turns
    if expected is not None and not within_expected_turns(visible_turns, expected):
        warnings.append(
            f"used {visible_turns} visible turns, over run_limits.expected_turns {expected} "
            f"(x{EXPECTED_TURNS_SLACK:g} = {EXPECTED_TURNS_SLACK * expected:g})"
        )
    if limits.expected_tool_calls is not None and tool_calls > limits.expected_tool_calls:
        warnings.append(
            f"used {tool_calls} tool calls, over run_limits.expected_tool_calls {limits.expected_tool_calls}"
        )
    return warnings


@dataclass
class BudgetTracker:
    """Cumulative usage of the subject agent against the token and cost caps."""

    limits: RunLimits
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_reported: bool = False
    turns: int = 0  # the turns added
    costed_from: int | None = None  # the first turn after which the cost was known: max_usd checked from there
    warnings: list[str] = field(default_factory=list)
    # A turn's cost at the run's prices while its agent has reported none yet (Claude Code reports an exchange's
    # cost at its end): max_usd binds after each turn, not after the exchange. None: no estimate.
    estimate: Callable[[TurnRecord], float | None] | None = None
    estimated_usd: float = 0.0  # the estimates of the turns since the last reported cost
    breached: str = ""  # which cap the breach ``add`` returned passed, and by how much (``max_input_tokens: 205 > 1``)

    def counted_input(self, turn: TurnRecord) -> int:
        counted = turn.input_tokens
        if self.limits.count_cached_input:
            counted += turn.cache_read_input_tokens
        if self.limits.count_cache_creation:
            counted += turn.cache_creation_input_tokens
        return counted

    def add(self, turn: TurnRecord) -> Breach | None:
        """Add a completed turn; the breached budget's final status, if any."""
        self.turns += 1
        self.input_tokens += self.counted_input(turn)
        self.output_tokens += turn.output_tokens
        if turn.cost_usd is not None:
            self.cost_usd += turn.cost_usd
            self.cost_reported = True
            self.estimated_usd = 0.0  # a reported cost covers the turns since the last one
        elif self.estimate is not None:
            self.estimated_usd += self.estimate(turn) or 0.0
        if self.costed_from is None and self.cost_known:
            self.costed_from = self.turns
        limits = self.limits
        used = {
            "max_input_tokens": self.input_tokens,
            "max_output_tokens": self.output_tokens,
            "max_total_tokens": self.input_tokens + self.output_tokens,
        }
        for name, tokens in used.items():
            cap = getattr(limits, name)
            if cap is not None and tokens > cap:
                self.breached = f"{name}: {tokens} > {cap}"
                return TOKEN_BUDGET_EXCEEDED
        if limits.max_usd is not None and self.cost_known and self.cost_usd + self.estimated_usd > limits.max_usd:
            self.breached = f"max_usd: {self.cost_usd + self.estimated_usd:.6g} > {limits.max_usd:g}"
            return COST_BUDGET_EXCEEDED
        return None

    @property
    def cost_known(self) -> bool:
        """Whether the turns so far have a cost to hold against max_usd: one reported, or estimated at the run's
        prices (an estimate of 0 is a turn that spent nothing, no price)."""
        return self.cost_reported or self.estimated_usd > 0

    def breach_message(self, breach: Breach) -> str:
        """What a stop for ``breach`` says: the budget and which cap it passed, by how much (coder_eval's figures)."""
        what = "cost" if breach == COST_BUDGET_EXCEEDED else "token"
        return f"run_limits {what} budget exceeded ({self.breached})"

    def finish(self) -> None:
        """The one-shot warning when max_usd could not be checked between turns."""
        warning = self.unchecked_cost_warning()
        if warning is not None and warning not in self.warnings:
            self.warnings.append(warning)

    def unchecked_cost_warning(self) -> str | None:
        """Why max_usd stopped nothing it could have: no turn had a cost, or only the last of several had (Claude
        Code's report at an exchange's end, for a model the run does not price), when no turn was left to stop.
        None when it was checked, or is not set."""
        if self.limits.max_usd is None:
            return None
        if self.costed_from is None:
            return NO_COST_WARNING
        return LATE_COST_WARNING if 1 < self.costed_from == self.turns else None
