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
NO_COST_WARNING = "max_usd is set but the agent reported no cost; the cost budget was not checked"
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
        self.input_tokens += self.counted_input(turn)
        self.output_tokens += turn.output_tokens
        if turn.cost_usd is not None:
            self.cost_usd += turn.cost_usd
            self.cost_reported = True
            self.estimated_usd = 0.0  # a reported cost covers the turns since the last one
        elif self.estimate is not None:
            self.estimated_usd += self.estimate(turn) or 0.0
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
        known = self.cost_reported or self.estimated_usd > 0
        if limits.max_usd is not None and known and self.cost_usd + self.estimated_usd > limits.max_usd:
            self.breached = f"max_usd: {self.cost_usd + self.estimated_usd:.6g} > {limits.max_usd:g}"
            return COST_BUDGET_EXCEEDED
        return None

    def breach_message(self, breach: Breach) -> str:
        """What a stop for ``breach`` says: the budget and which cap it passed, by how much (coder_eval's figures)."""
        what = "cost" if breach == COST_BUDGET_EXCEEDED else "token"
        return f"run_limits {what} budget exceeded ({self.breached})"

    def finish(self) -> None:
        """The one-shot warning when a cost cap could not be checked."""
        if self.limits.max_usd is not None and not self.cost_reported and NO_COST_WARNING not in self.warnings:
            self.warnings.append(NO_COST_WARNING)
