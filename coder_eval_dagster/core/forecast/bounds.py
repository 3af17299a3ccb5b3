"""A row-task with no history: what its limits let one evaluation spend at most, priced with the run's prices.

Each payer is bounded by the tightest limit that covers it, or left unknown:

- the agent: ``run_limits.max_usd``; a token cap that counts every token
  (``max_total_tokens``, or ``max_input_tokens`` + ``max_output_tokens``,
  with ``count_cached_input`` and ``count_cache_creation`` on: otherwise
  cache reads and writes are outside it); ``max_turns`` turns of at most the
  model's context window each, or ``max_tool_calls`` + 1 (a dialog: + its
  exchanges) such turns, since every turn but an exchange's last makes a call.
  Tokens are priced at the model's dearest rate.
- an ``llm_judge``: one call whose prompt is at most its instructions, its
  capped files, output, tool calls and dialog, and the reference (a token per
  character at most), and whose answer is at most ``max_tokens``.
- an ``agent_judge``: ``max_turns`` turns of at most its model's window.
- the simulated user: ``simulation.max_turns`` messages of at most its
  model's window, or ``simulation.max_total_tokens``.
- the duration: ``task_timeout``, else ``turn_timeout`` (one exchange; a dialog: x ``simulation.max_turns``).

A limit is checked after each turn (claude-code reports its cost once per
exchange), so the evaluation that crosses it overshoots by that turn: the
bound is the limit as the harness enforces it, not a hard ceiling.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..criteria.agent_judge import AgentJudge, judge_config
from ..criteria.judge_base import JudgeBase
from ..criteria.llm_judge import CLOSING, SYSTEM_PROMPT, TOOLS, LlmJudge
from ..models.limits import RunLimits
from ..models.results import TokenUsage
from ..models.task import Task
from ..pricing import PriceBook
from ..reference import reference_text
from ..resolution import RowTask
from ..routing import Backend, translate_model
from ..simulation import simulator_model
from .figures import Figures

RATE_SAMPLE_TOKENS = 1_000  # priced to find a rate per token: small enough to stay in a model's base price tier
SECTION_CHARS = 400  # a judge prompt section's heading, untrusted-data preamble and truncation note, at most


@dataclass(frozen=True)
class Part:
    """One payer's bound per evaluation: USD and tokens (None: nothing bounds it), and what bounds it ("": the
    payer is absent, it spends nothing)."""

    usd: float | None
    tokens: float | None
    why: str

    @classmethod
    def absent(cls) -> Part:
        return cls(0.0, 0.0, "")


def bound(row_task: RowTask, prices: PriceBook, backend: Backend) -> tuple[Figures, tuple[str, ...]]:
    """One evaluation of ``row_task`` at most, and a note per payer saying what bounds it."""
    task = row_task.task
    agent = agent_bound(task, prices, backend)
    judges = judges_bound(task, row_task.task_dir, prices, backend)
    simulator = simulator_bound(task, prices, backend)
    duration, duration_why = duration_bound(task)
    figures = Figures.of(
        {
            "agent_usd": agent.usd,
            "judges_usd": judges.usd,
            "simulator_usd": simulator.usd,
            "agent_tokens": agent.tokens,
            "judge_tokens": judges.tokens,
            "simulator_tokens": simulator.tokens,
            "duration_s": duration,
        }
    )
    payers = {"agent": agent, "judges": judges, "simulated user": simulator}
    notes = tuple(f"{payer}: {part.why}" for payer, part in payers.items() if part.why) or ("no model call",)
    return figures, (*notes, duration_why)


# ----------------------------------------------------------------------------- the agent


def agent_bound(task: Task, prices: PriceBook, backend: Backend) -> Part:
    if task.agent.resolved_type == "none":
        return Part.absent()
    limits = task.run_limits
    model = task.agent.model
    found = [Part(limits.max_usd, None, f"max_usd {limits.max_usd:g}")] if limits.max_usd else []
    found += token_cap(limits, prices, model, backend)
    exchanges = task.simulation.max_turns if task.simulated and task.simulation else 1
    if limits.max_turns is not None:  # a cap on each exchange's turns
        shown = "max_turns" if exchanges == 1 else f"max_turns {limits.max_turns} x {exchanges} exchanges: turns"
        found.append(turns_bound(prices, model, backend, limits.max_turns * exchanges, shown))
    if limits.max_tool_calls is not None:  # every model turn but an exchange's last makes a call
        turns = limits.max_tool_calls + exchanges
        found.append(turns_bound(prices, model, backend, turns, f"max_tool_calls {limits.max_tool_calls}: turns"))
    return tightest(found, "no max_usd, max_turns, max_tool_calls or token cap")


def token_cap(limits: RunLimits, prices: PriceBook, model: str | None, backend: Backend) -> list[Part]:
    """The bound of the agent's token caps, when they count every token: cache reads and writes are counted only
    with ``count_cached_input`` and ``count_cache_creation``, so a cap without them bounds no cost."""
    if limits.max_total_tokens is not None:
        tokens, limit = limits.max_total_tokens, f"max_total_tokens {limits.max_total_tokens:,}"
    elif limits.max_input_tokens is not None and limits.max_output_tokens is not None:
        tokens = limits.max_input_tokens + limits.max_output_tokens
        limit = f"max_input_tokens + max_output_tokens {tokens:,}"
    else:
        return []
    if not (limits.count_cached_input and limits.count_cache_creation):
        return [Part(None, None, f"{limit} leaves cached tokens out (count_cached_input, count_cache_creation)")]
    return [priced_tokens(prices, model, backend, tokens, limit)]


# ----------------------------------------------------------------------------- the judges


def judges_bound(task: Task, task_dir: Path, prices: PriceBook, backend: Backend) -> Part:
    judges = [criterion for criterion in task.success_criteria if isinstance(criterion, JudgeBase)]
    if not judges:
        return Part.absent()
    parts = [judge_bound(criterion, task, task_dir, prices, backend) for criterion in judges]
    unbounded = [part.why for part in parts if part.usd is None]
    why = "; ".join(part.why for part in parts)
    if unbounded:
        return Part(None, None, why)
    return Part(sum(part.usd or 0.0 for part in parts), sum(part.tokens or 0.0 for part in parts), why)


def judge_bound(criterion: JudgeBase, task: Task, task_dir: Path, prices: PriceBook, backend: Backend) -> Part:
    if isinstance(criterion, LlmJudge):
        model = translate_model(criterion.model, backend)
        prompt = judge_prompt_chars(criterion, task, task_dir)
        usage = TokenUsage(uncached_input_tokens=prompt, output_tokens=criterion.max_tokens)
        usd = prices.cost(model, usage, backend)
        why = f"llm_judge {model}: one call of at most {prompt:,} + {criterion.max_tokens:,} tokens"
        return Part(usd, usage.total_tokens, why if usd is not None else f"{why}, no price known for it")
    if isinstance(criterion, AgentJudge):
        judge_model = judge_config(criterion.agent).model
        return turns_bound(prices, judge_model, backend, criterion.max_turns, f"agent_judge {judge_model}: max_turns")
    return Part(None, None, f"{criterion.type}: a judge the forecast does not know")


def judge_prompt_chars(criterion: LlmJudge, task: Task, task_dir: Path) -> int:
    """The longest prompt the judge can be sent, in characters (what judging.render_prompt caps, section by
    section; the reference is shown whole)."""
    fixed = len(SYSTEM_PROMPT) + len(json.dumps(TOOLS)) + len(CLOSING) + len(criterion.prompt) + SECTION_CHARS
    capped_sections = [
        *[criterion.max_file_chars + len(entry) for entry in criterion.files],
        *([criterion.max_file_chars] if criterion.include_agent_output else []),
        *([criterion.max_file_chars] if criterion.include_tool_calls else []),
        *([criterion.max_dialog_chars] if criterion.include_dialog else []),
    ]
    reference = len(reference_text(task, task_dir) or "") if criterion.include_reference else 0
    return fixed + sum(size + SECTION_CHARS for size in capped_sections) + reference


# ----------------------------------------------------------------------------- the simulated user


def simulator_bound(task: Task, prices: PriceBook, backend: Backend) -> Part:
    settings = task.simulation
    if settings is None or not settings.enabled or task.agent.resolved_type == "replay":
        return Part.absent()  # a replayed dialog's user is recorded: no model speaks
    model = translate_model(simulator_model(task), backend)
    found = [turns_bound(prices, model, backend, settings.max_turns, "simulation.max_turns")]
    if settings.max_total_tokens is not None:
        tokens = settings.max_total_tokens
        found.append(priced_tokens(prices, model, backend, tokens, f"simulation.max_total_tokens {tokens:,}"))
    return tightest(found, f"no price or context window known for {model}")


# ----------------------------------------------------------------------------- shared


def turns_bound(prices: PriceBook, model: str | None, backend: Backend, turns: int, limit: str) -> Part:
    """``turns`` model calls, each of at most the model's context window."""
    window = prices.context_window(model, backend)
    if window is None:
        return Part(None, None, f"{limit} {turns}, but no context window known for {model or 'the default model'}")
    return priced_tokens(prices, model, backend, turns * window, f"{limit} {turns} x the {window:,}-token window")


def priced_tokens(prices: PriceBook, model: str | None, backend: Backend, tokens: int, limit: str) -> Part:
    """``tokens`` at the model's dearest rate (whatever mix of prompt, cache and output they turn out to be)."""
    rate = dearest_rate(prices, model, backend)
    if rate is None:
        return Part(None, tokens, f"{limit}, but no price known for {model or 'the default model'}")
    return Part(tokens * rate, tokens, f"{limit} at ${rate * 1e6:g}/M tokens")


def dearest_rate(prices: PriceBook, model: str | None, backend: Backend) -> float | None:
    """USD per token of the model's dearest kind of token (usually output), or None when it has no price."""
    samples = [
        TokenUsage(uncached_input_tokens=RATE_SAMPLE_TOKENS),
        TokenUsage(output_tokens=RATE_SAMPLE_TOKENS),
        TokenUsage(cache_creation_input_tokens=RATE_SAMPLE_TOKENS),
        TokenUsage(cache_read_input_tokens=RATE_SAMPLE_TOKENS),
    ]
    costs = [prices.cost(model, usage, backend) for usage in samples]
    known = [cost for cost in costs if cost is not None]
    return max(known) / RATE_SAMPLE_TOKENS if known else None


def tightest(found: list[Part], nothing: str) -> Part:
    """The smallest USD bound among ``found``; when none has one, unbounded, and why (``nothing``: no limit)."""
    priced = [part for part in found if part.usd is not None]
    if not priced:
        return Part(None, None, "unbounded: " + ("; ".join(part.why for part in found) or nothing))
    return min(priced, key=lambda part: part.usd or 0.0)


def duration_bound(task: Task) -> tuple[float | None, str]:
    """``turn_timeout`` bounds one exchange with the agent: a single-shot task's whole conversation."""
    limits = task.run_limits
    if limits.task_timeout is not None:
        return limits.task_timeout, f"time: task_timeout {limits.task_timeout:g} s"
    if limits.turn_timeout is None:
        return None, "time: unbounded (no task_timeout)"
    if task.simulation is None or not task.simulation.enabled:
        return limits.turn_timeout, f"time: turn_timeout {limits.turn_timeout:g} s"
    exchanges = task.simulation.max_turns
    seconds = exchanges * limits.turn_timeout
    return seconds, f"time: simulation.max_turns {exchanges} x turn_timeout {limits.turn_timeout:g} s"
