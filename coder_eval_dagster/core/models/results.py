"""What an evaluation produces: task.json, in coder_eval's report schema, and the records behind the tables.

One model per record, used by the code and written to disk alike. Where our
attribute's name differs from the name coder_eval's schema gives the same
thing (its docs/REPORT_SCHEMA.md, ``EvaluationResult``), the field is written
under the schema's name (``written_as``) and read under it or under the name
earlier versions of ours wrote, so run folders written before stay readable
(``criteria`` -> ``success_criteria_results``, ``FAILED`` -> ``FAILURE``...).
What the schema computes from other fields (``iterations``,
``command_stats``, ``total_token_usage``' total...) is a computed field here
too: written on every dump, never stored apart from what it summarises.
Our own fields (``passed``, criterion ``inputs``, ``trajectory``...) stay
beside the schema's; coder_eval's readers ignore them. A task.json coder_eval
wrote reads too: what it leaves out is derived as it derives it (the verdicts
from the status and the scores, the dataset row from the resolved task; the
run and replicate from the folders, ``EvaluationResult.located``), and what it
records in its own form is read into ours (the agent's calls from its
iterations' ``commands``, a judge's spend from its ``token_usage``).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, computed_field, model_validator

# Every schema-named record: written under the schema's names, read under those or the attribute names.
SCHEMA_NAMES = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)
SPEND_IN_DIALOG = ("simulator_token_usage", "criteria_check_token_usage")  # earlier versions wrote them in simulation


def written_as(name: str, *earlier: str, **field: Any) -> Any:
    """A field written under the schema's ``name``, read under it, its attribute name or an ``earlier`` name."""
    return Field(serialization_alias=name, validation_alias=AliasChoices(name, *earlier), **field)


FinalStatus = Literal[
    "SUCCESS",
    "FAILURE",
    "ERROR",
    "TIMEOUT",
    "MAX_TURNS_EXHAUSTED",
    "TOKEN_BUDGET_EXCEEDED",
    "COST_BUDGET_EXCEEDED",
    "BUILD_FAILED",
    "NOT_GRADED",
]
EARLIER_STATUSES = {"FAILED": "FAILURE"}  # written by versions before the report schema
# the statuses of an agent a limit stopped mid-turn (an agent's own crash is an ERROR its error_details name)
CUT_SHORT_STATUSES = frozenset({"TIMEOUT", "TOKEN_BUDGET_EXCEEDED", "COST_BUDGET_EXCEEDED"})

# The run's buckets (coder_eval's FinalStatus categories): tasks_succeeded, tasks_failed, tasks_error, tasks_not_graded.
StatusCategory = Literal["succeeded", "failed", "error", "not_graded"]
STATUS_CATEGORY: dict[str, StatusCategory] = {
    "SUCCESS": "succeeded",
    "FAILURE": "failed",
    "TIMEOUT": "failed",
    "MAX_TURNS_EXHAUSTED": "failed",
    "TOKEN_BUDGET_EXCEEDED": "failed",
    "COST_BUDGET_EXCEEDED": "failed",
    "ERROR": "error",
    "BUILD_FAILED": "error",
    "NOT_GRADED": "not_graded",
}


def current_status(value: Any) -> Any:
    """A status as written now (``FAILED`` of earlier run folders reads as ``FAILURE``)."""
    return EARLIER_STATUSES.get(value, value) if isinstance(value, str) else value


Status = Annotated[FinalStatus, BeforeValidator(current_status)]


# Where a cost came from: the agent's own figure, tokens x prices (core/pricing.py), or nobody prices the model.
CostSource = Literal["reported", "priced", "unknown", "mixed"]  # mixed: a sum of reported and priced parts


class TokenUsage(BaseModel):
    """Tokens and cost, coder_eval's ``TokenUsage``: the prompt in three parts that sum to ``input_tokens``."""

    uncached_input_tokens: int = 0  # the fresh prompt (an API's ``input_tokens``), billed at the input rate
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    total_cost_usd: float | None = None
    cost_source: CostSource | None = None  # ours; None: no tokens spent

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def input_tokens(self) -> int:
        """The whole prompt: uncached + cache creation + cache read."""
        return self.uncached_input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @classmethod
    def of_turns(cls, turns: list[TurnRecord]) -> TokenUsage | None:
        """The sum over an agent's turns; None when it took none (an agentless task)."""
        return cls.summed([turn.usage for turn in turns])

    @classmethod
    def summed(cls, usages: list[TokenUsage]) -> TokenUsage | None:
        """The sum of usages (None for none); the cost sums the known costs, its source says whether any was not (a
        part of unknown cost with no tokens counted too: a call cut off before its usage came)."""
        if not usages:
            return None
        costs = [u.total_cost_usd for u in usages if u.total_cost_usd is not None]
        return cls(
            uncached_input_tokens=sum(u.uncached_input_tokens for u in usages),
            output_tokens=sum(u.output_tokens for u in usages),
            cache_creation_input_tokens=sum(u.cache_creation_input_tokens for u in usages),
            cache_read_input_tokens=sum(u.cache_read_input_tokens for u in usages),
            total_cost_usd=round(sum(costs), 6) if costs else None,
            cost_source=combined_source([u.cost_source for u in usages if u.spent or u.cost_source == "unknown"]),
        )

    @property
    def spent(self) -> bool:
        return bool(self.total_tokens)

    @property
    def priced_whole(self) -> bool:
        """Every token of it has a cost (a sum with an unpriced part keeps the known costs, source ``unknown``)."""
        return self.total_cost_usd is not None and self.cost_source != "unknown"


def message_usage(usage: Any) -> TokenUsage:
    """A Messages API ``usage`` (an SDK object or a dict) as our record; its cache counts may be absent or null."""

    def read(name: str) -> int:
        value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
        return int(value or 0)

    return TokenUsage(
        uncached_input_tokens=read("input_tokens"),
        output_tokens=read("output_tokens"),
        cache_creation_input_tokens=read("cache_creation_input_tokens"),
        cache_read_input_tokens=read("cache_read_input_tokens"),
    )


def _priced(usage: TokenUsage | None) -> bool:
    """No tokens, or a cost for every one of them; never a cost ``unknown``, whatever its tokens (a judge cut off
    before its first reply counted none, though its request may have been billed)."""
    if usage is not None and usage.cost_source == "unknown":
        return False
    if usage is None or not usage.spent:
        return True
    if usage.cost_source is None:  # written before costs said their source
        return usage.total_cost_usd is not None
    return usage.cost_source != "unknown"


def combined_source(sources: list[CostSource | None]) -> CostSource | None:
    """One source for a sum: ``unknown`` if any part has no cost, else the parts' one source, else ``mixed``."""
    if not sources:
        return None
    if any(source in (None, "unknown") for source in sources):
        return "unknown"
    known = set(sources)
    return known.pop() if len(known) == 1 else "mixed"


class CommandRun(BaseModel):
    """What one shell command did (output capped, secrets redacted): coder_eval's ``PostRunResult`` and more."""

    model_config = SCHEMA_NAMES

    command: str
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = written_as("duration_seconds", default=0.0)
    timed_out: bool = False
    # set by a driver that can tell (docker): the exit code is the kill's, which a criterion may expect
    oom_killed: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None


class HookRun(CommandRun):
    """A pre_run / post_run command as it ran (or was skipped)."""

    fail_on_error: bool = True
    skipped: bool = False


ToolCallStatus = Literal["success", "error", "unknown"]


def call_target(parameters: dict[str, Any]) -> str:
    """What a tool call acted on (a Bash command, a file path, a pattern), else its arguments as JSON: the one
    line a transcript names the call by."""
    for name in ("command", "file_path", "path", "pattern"):
        if isinstance(parameters.get(name), str):
            return str(parameters[name])
    return json.dumps(parameters, ensure_ascii=False, default=str)


class ToolCallRecord(BaseModel):
    """One tool call of the agent, written as coder_eval's ``CommandTelemetry`` (``iterations[].commands``)."""

    model_config = SCHEMA_NAMES

    turn: int  # our TurnRecord.index (from 1)
    seq: int = Field(validation_alias=AliasChoices("seq", "sequence_number"))  # in its turn, from 1 (ours; earlier
    # files wrote it as sequence_number)
    # the schema's sequence_number: the call's place in its iteration, from 0; set when the iteration is written,
    # never read back (``seq`` and ``turn`` place the call)
    position: int | None = Field(default=None, serialization_alias="sequence_number", validation_alias="position")
    tool: str = written_as("tool_name")
    parameters: dict[str, Any] = Field(default_factory=dict)
    status: ToolCallStatus = written_as("result_status", default="unknown")
    duration_ms: float = 0.0
    output: str | None = written_as("result_summary", default=None)
    started_at: float | None = None  # epoch seconds, when the agent reports it (telemetry spans, the timestamp)
    timestamp: str | None = None  # the schema's: when the call was made (from started_at, else the run's start)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tool_id(self) -> str:
        return f"call-{self.turn}-{self.seq}"

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def error_message(self) -> str | None:
        """The schema's: a failed call's error (its output), else None."""
        return (self.output or "failed") if self.status == "error" else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def result_data(self) -> dict[str, Any] | list[Any] | None:
        """The schema's: the output parsed as a JSON object or array, else None."""
        text = (self.output or "").strip()
        if not text.startswith(("{", "[")):
            return None
        try:
            parsed = json.loads(text)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict | list) else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def result_tokens(self) -> int:
        """The schema's approximate size of the result (4 characters a token, rounded up; 0 with none)."""
        return -(-len(self.output or "") // 4)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def execution_started_at(self) -> str | None:
        return _iso(self.started_at)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def generation_completed_at(self) -> str | None:
        """When the model had asked for the call: the schema's ``timestamp``, the call's start as we record it."""
        return _iso(self.started_at)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def execution_completed_at(self) -> str | None:
        return _iso(self.started_at + self.duration_ms / 1000) if self.started_at is not None else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def assistant_turn_index(self) -> int:
        """The schema's index of the model turn, from 0."""
        return self.turn - 1


class TurnRecord(BaseModel):
    """One model turn of the agent: its tool calls, its text and its usage."""

    index: int
    calls: list[ToolCallRecord] = Field(default_factory=list)
    text: str | None = None
    input_tokens: int = 0  # uncached
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cost_usd: float | None = None
    cost_source: CostSource | None = None
    started_at: float | None = None  # epoch seconds: the round trip's start and end, when the agent reports them
    ended_at: float | None = None
    # How the agent said the exchange this turn ended came out (claude-code: its CLI's ResultMessage, as the schema's
    # result_summary: is_error, subtype, stop_reason, result); None: the agent reports none, or not on this turn.
    result_summary: dict[str, Any] | None = None

    @property
    def spent(self) -> bool:
        return bool(
            self.input_tokens or self.output_tokens or self.cache_read_input_tokens or self.cache_creation_input_tokens
        )

    @property
    def usage(self) -> TokenUsage:
        """This turn's tokens and cost as a usage record (what the prices and budgets read)."""
        return TokenUsage(
            uncached_input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens,
            total_cost_usd=self.cost_usd,
            cost_source=self.cost_source,
        )


def final_reply(turns: list[TurnRecord], cut_short: bool) -> str | None:
    """The final reply (``has_final_reply``, a visible turn): the last turn's text, when that turn ends the
    conversation: a text-only turn, or any last turn of an agent no time limit, budget or error cut. An earlier
    turn's words ("Let me check the logs first.") never are, nor those before a call that was cut: coder_eval's is
    the CLI's closing result, which a cut run lacks."""
    last = turns[-1] if turns else None
    if last is None or not last.text:
        return None
    return last.text if not last.calls or not cut_short else None


class Iteration(BaseModel):
    """coder_eval's ``TurnRecord``: one prompt to the agent and what came of it.

    A run is one iteration: a simulated dialog's exchanges are in the
    result's ``dialog``. ``turns`` (ours) holds each model turn's text and
    usage; its calls are in ``commands``, and the two rebuild the trajectory
    when task.json is read.
    """

    iteration: int
    user_input: str
    agent_output: str
    commands: list[ToolCallRecord]
    timestamp: str
    duration_seconds: float
    token_usage: TokenUsage | None
    model_used: str | None
    assistant_turn_count: int
    num_turns: int | None  # the agent's model turns; None for an agentless task's, as coder_eval writes it
    max_turns_exhausted: bool
    result_summary: dict[str, Any] | None  # the final reply, as the schema records it (``has_final_reply``)
    turns: list[dict[str, Any]]
    crashed: bool = False  # the agent failed mid-run (an ERROR of its stage): what came before is real work
    crash_reason: str | None = None
    # the schema's, which no agent here fills: its provider's retried errors and per-call costs, and its harness's
    # own start and end (the stages' times are in stage_durations)
    provider_errors: list[dict[str, Any]] = Field(default_factory=list)
    provider_call_costs: list[dict[str, Any]] = Field(default_factory=list)
    harness_startup_ms: float | None = None
    harness_teardown_ms: float | None = None
    tool_union_ms: float | None = None  # the wall time at least one call ran (None: no call's start is known)


def trajectory_of(iterations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model turns, each with its calls, from iterations as written (the inverse of ``Iteration``) or as
    coder_eval writes them (no ``turns``: ``_coder_eval_turns``)."""
    turns: list[dict[str, Any]] = []
    for iteration in iterations:
        calls = iteration.get("commands") or []
        if "turns" not in iteration:
            turns.extend(_coder_eval_turns(iteration, len(turns)))
        for turn in iteration.get("turns") or []:
            turns.append({**turn, "calls": [call for call in calls if call.get("turn") == turn.get("index")]})
    return turns


def _coder_eval_turns(iteration: dict[str, Any], before: int) -> list[dict[str, Any]]:
    """A coder_eval iteration's model turns, numbered on from ``before``: one per assistant message (its text and
    usage) or per ``assistant_turn_index`` its calls name (from 0 in the iteration; none: the first), each with
    those calls."""
    calls = [call for call in iteration.get("commands") or [] if isinstance(call, dict)]
    said = [m for m in iteration.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant"]
    made_in = [call.get("assistant_turn_index") or 0 for call in calls]
    count = max(len(said), iteration.get("assistant_turn_count") or 0, *(at + 1 for at in made_in))
    turns = []
    for at in range(count):
        own = [call for call, made in zip(calls, made_in, strict=True) if made == at]
        turns.append(
            {
                "index": before + at + 1,
                **(_message_turn(said[at]) if at < len(said) else {}),
                "calls": [_coder_eval_call(call, before + at + 1, seq) for seq, call in enumerate(own, start=1)],
            }
        )
    return turns


def _message_turn(message: dict[str, Any]) -> dict[str, Any]:
    """A coder_eval assistant message's text and tokens, as our turn's."""
    blocks = [b for b in message.get("content_blocks") or [] if isinstance(b, dict) and b.get("block_type") == "text"]
    return {
        "text": "\n".join(b.get("text") or "" for b in blocks) or None,
        "input_tokens": message.get("input_tokens") or 0,
        "output_tokens": message.get("output_tokens") or 0,
        "cache_read_input_tokens": message.get("cache_read_tokens") or 0,
        "cache_creation_input_tokens": message.get("cache_creation_tokens") or 0,
    }


def _coder_eval_call(call: dict[str, Any], turn: int, seq: int) -> dict[str, Any]:
    """A coder_eval ``CommandTelemetry`` as our call: its turn and place in it; a pending one's status unknown."""
    status, duration = call.get("result_status") or "unknown", call.get("duration_ms") or 0.0
    return {**call, "turn": turn, "sequence_number": seq, "result_status": status, "duration_ms": duration}


JUDGE_USAGE = "judge_usage"  # a judge's spend in its criterion's evidence (criteria/judging.py judge_usage)


def _judge_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """coder_eval's judge ``token_usage`` as our ``judge_usage``: its uncached prompt is our ``input_tokens`` (a file
    from before its split has only ``input_tokens``), its cost the one its run recorded."""
    cost = usage.get("total_cost_usd")
    return {
        "input_tokens": usage.get("uncached_input_tokens", usage.get("input_tokens", 0)),
        "output_tokens": usage.get("output_tokens", 0),
        "cache_read_input_tokens": usage.get("cache_read_input_tokens", 0),
        "cache_creation_input_tokens": usage.get("cache_creation_input_tokens", 0),
        "cost_usd": cost,
        "cost_source": None if cost is None else "reported",
    }


class CriterionResult(BaseModel):
    """One criterion's outcome, coder_eval's ``CriterionResult`` (basic, judge or classification kind)."""

    model_config = SCHEMA_NAMES

    JUDGE_TYPES: ClassVar[frozenset[str]] = frozenset({"llm_judge", "agent_judge", "system_one_judge"})
    DETAIL_CHARS: ClassVar[int] = 300  # each value in the ``details`` text
    TEXT: ClassVar[str] = "text"  # the evidence of a result coder_eval wrote: its ``details`` text, alone

    index: int
    type: str = written_as("criterion_type")
    description: str
    score: float
    passed: bool
    gating: bool
    weight: float
    pass_threshold: float
    error: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)  # what the criterion was asked to check (its fields)
    # The evidence as a structure (ours); the schema's ``details`` is the same as text.
    details: dict[str, Any] = written_as("evidence", "details", default_factory=dict)
    advisory: bool = False  # an unarmed criterion of an early-stopped run
    expected_label: str | None = None
    observed_label: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _coder_eval_form(cls, data: Any) -> Any:
        """A criterion as coder_eval writes it: its evidence is text only, kept as written; its verdict is the score
        against the threshold (0.9 and gating where it records none, its defaults)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("details"), str) and not data.get("evidence"):
            data["evidence"] = {cls.TEXT: data.pop("details")}
        if "passed" not in data and isinstance(data.get("token_usage"), dict):  # a judge's: its spend is ours
            data["evidence"] = {**(data.get("evidence") or {}), JUDGE_USAGE: _judge_usage(data["token_usage"])}
        if "passed" not in data and isinstance(data.get("score"), int | float):
            data = {"pass_threshold": 0.9, "gating": True, **data}
            data["passed"] = data["score"] >= data["pass_threshold"]
        return data

    @property
    def judge_usage(self) -> dict[str, Any] | None:
        """A judge's spend (tokens, cost, seconds); None for the other criteria. A reused verdict's is the original
        call's: what the verdict cost when it was made."""
        return self.details.get(JUDGE_USAGE)

    @property
    def reused(self) -> bool:
        """A judge verdict taken from an earlier scoring of the same input, no call made (criteria/reuse.py)."""
        return self.details.get("reused") is True

    @computed_field(alias="details")  # type: ignore[prop-decorator]  # mypy takes no decorator on a property
    @property
    def details_text(self) -> str | None:
        """The evidence as one string, ``key: value; ...`` (the schema's ``details``); None and "" left out, an empty
        list kept (``missing_includes: []`` is what a pass found). Text that coder_eval wrote stays as it is."""
        written = self.details.get(self.TEXT)
        if isinstance(written, str) and self.details.keys() <= {self.TEXT, JUDGE_USAGE}:
            return written
        parts = []
        for key, value in self.details.items():
            if value is None or value == "":
                continue
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            parts.append(f"{key}: {text[: self.DETAIL_CHARS] + '…' if len(text) > self.DETAIL_CHARS else text}")
        return "; ".join(parts) or None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def result_kind(self) -> Literal["basic", "judge", "classification"]:
        if self.expected_label is not None and self.observed_label is not None:
            return "classification"
        return "judge" if self.type in self.JUDGE_TYPES else "basic"

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def transcript_path(self) -> str | None:
        """A judge's transcript file, beside task.json (coder_eval's ``transcript_path``); None for other criteria
        and a judge that wrote none."""
        name = self.details.get("transcript")
        return name if self.result_kind == "judge" and isinstance(name, str) else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def findings(self) -> list[str] | None:
        """A judge's findings (coder_eval's judge results carry the list): those its verdict gave, else none; None
        for other criteria."""
        if self.result_kind != "judge":
            return None
        given = self.details.get("findings")
        return [str(item) for item in given] if isinstance(given, list) else []

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def evaluation_status(self) -> Literal["evaluated", "not_evaluated"]:
        """``not_evaluated``: a judge that gave no answer (its model call or agent failed), whose 0 says nothing of
        the row (the suite metrics leave it out); every other stored result was checked."""
        return "not_evaluated" if self.details.get("unavailable") is True else "evaluated"

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def token_usage(self) -> TokenUsage | None:
        """A judge's tokens and cost in the schema's record: what this scoring paid for it, so nothing (0 tokens,
        $0) for a reused verdict, whose original spend stays in ``judge_usage``; every spend total sums these."""
        usage = self.judge_usage
        if not usage:
            return None
        return TokenUsage(total_cost_usd=0.0) if self.reused else judge_token_usage(usage)


def judge_token_usage(usage: dict[str, Any]) -> TokenUsage:
    """A judge's spend (its ``judge_usage``) as the schema's token record."""
    return TokenUsage(
        uncached_input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cache_creation_input_tokens=usage.get("cache_creation_input_tokens", 0),
        cache_read_input_tokens=usage.get("cache_read_input_tokens", 0),
        total_cost_usd=usage.get("cost_usd"),
        cost_source=usage.get("cost_source"),
    )


# How a simulated dialog ended (coder_eval's SimulationTelemetry.stop_reason).
DialogStopReason = Literal[
    "stop_token", "criteria_passed", "max_turns", "budget", "error", "run_limit_exceeded", "agent_max_turns"
]  # agent_max_turns: coder_eval 0.12.16's, for an exchange that spent run_limits.max_turns (its folders read here)
EARLIER_DIALOG_STOPS = {"criteria_pass": "criteria_passed", "run_limits": "run_limit_exceeded"}


class DialogMessage(BaseModel):
    """One message of a simulated dialog; the user message opening exchange n and the agent's reply share ``turn`` n."""

    turn: int
    role: Literal["user", "agent"]
    text: str
    tokens: int = 0  # the simulator call (user) or the agent's exchange (agent): input_tokens + output_tokens
    criteria_passed: bool | None = None  # the per-turn check after this agent message (check_criteria)
    exchange_start: int | None = None  # an agent message: the trajectory index of its exchange's first turn
    started_at: float | None = None  # epoch seconds: the simulator call's start and end (telemetry spans)
    ended_at: float | None = None
    # The two parts of ``tokens``: the whole prompt (cache reads and writes included, as the dialog's budget counts
    # it) and the output; 0 in a file written before they were (its ``tokens`` alone).
    input_tokens: int = 0
    output_tokens: int = 0

    @model_validator(mode="after")
    def _summed(self) -> DialogMessage:
        """``tokens``, the one count earlier readers of task.json know, is the two parts' sum; a file written before
        them keeps its own."""
        if self.input_tokens or self.output_tokens:
            self.tokens = self.input_tokens + self.output_tokens
        return self


class SimulationInfo(BaseModel):
    """A dialog's outcome, coder_eval's ``SimulationTelemetry``; ``turns`` counts the completed exchanges."""

    model_config = SCHEMA_NAMES

    n_trials: int
    replicate_index: int
    stop_reason: Annotated[
        DialogStopReason | None, BeforeValidator(lambda v: EARLIER_DIALOG_STOPS.get(v, v) if isinstance(v, str) else v)
    ] = None
    simulator_input_tokens: int = 0  # the simulated user's spend (never counted against run_limits)
    simulator_output_tokens: int = 0
    simulator_failures: int = 0
    turns: int = written_as("total_turns", default=0)
    simulator_model: str | None = None


class CommandStats(BaseModel):
    """The agent's tool calls summed up, coder_eval's ``CommandStatistics``."""

    total_commands: int = 0
    commands_by_tool: dict[str, int] = Field(default_factory=dict)
    total_command_time_ms: float = 0.0
    avg_command_time_ms: float | None = None
    slowest_commands: list[dict[str, Any]] = Field(default_factory=list)
    successful_commands: int = 0
    failed_commands: int = 0
    unknown_commands: int = 0
    success_rate: float = 0.0  # successful / (successful + failed); 0.0 with none
    most_common_sequence: str | None = None

    SLOWEST: ClassVar[int] = 5

    @classmethod
    def of(cls, turns: list[TurnRecord]) -> CommandStats:
        """coder_eval's statistics: its most common sequence is of three calls in a row in the run's one iteration
        (coder_eval's turn, not a model turn: one rarely makes three calls), ``A → B → C``."""
        calls = [call for turn in turns for call in turn.calls]
        statuses = Counter(call.status for call in calls)
        decided = statuses["success"] + statuses["error"]
        total_ms = sum(call.duration_ms for call in calls)
        slowest = sorted(calls, key=lambda c: c.duration_ms, reverse=True)[: cls.SLOWEST]
        sequences = Counter(" → ".join(call.tool for call in calls[i : i + 3]) for i in range(len(calls) - 2))
        return cls(
            total_commands=len(calls),
            commands_by_tool=dict(Counter(call.tool for call in calls)),
            total_command_time_ms=round(total_ms, 1),
            avg_command_time_ms=round(total_ms / len(calls), 1) if calls else None,
            slowest_commands=[
                {"tool": c.tool, "duration_ms": c.duration_ms, "parameters": c.parameters, "tool_id": c.tool_id}
                for c in slowest
            ],
            successful_commands=statuses["success"],
            failed_commands=statuses["error"],
            unknown_commands=statuses["unknown"],
            success_rate=round(statuses["success"] / decided, 4) if decided else 0.0,
            most_common_sequence=sequences.most_common(1)[0][0] if sequences else None,
        )


# Why the watcher stopped: criterion_passed, criterion_failed or decision_budget_exceeded (the schema's names).
EARLIER_EARLY_STOPS = {"armed_criteria_passed": "criterion_passed", "armed_criterion_failed": "criterion_failed"}


class EarlyStopInfo(BaseModel):
    """Why the early-stop watcher ended the run, coder_eval's ``EarlyStopInfo``."""

    reason: str  # criterion_passed, criterion_failed or decision_budget_exceeded
    deciding_criterion_type: str
    deciding_criterion_description: str
    armed_criteria: list[str] = Field(default_factory=list)  # "type: description"
    # the model turns begun by the stop (coder_eval counts TurnStartEvents): max_turns minus turns_remaining_at_stop
    sdk_turn_index: int
    tool_call_index: int  # the deciding call, from 1
    elapsed_seconds: float
    turns_remaining_at_stop: int | None = None
    gate_threshold: float = 1.0


class TaskConfig(BaseModel):
    """The task as it ran (coder_eval's ``TaskConfigRecord``): resolved, its file's text and path."""

    resolved: dict[str, Any]
    source_yaml: str
    source_file: str | None = None
    lineage: dict[str, Any] = Field(default_factory=dict)  # not recorded: resolution keeps no per-field layer


class RefusedConnection(BaseModel):
    """A connection the sandbox's network policy refused (``sandbox.network``): where to, and in which phase."""

    host: str
    port: int
    phase: str  # setup, pre_run, agent, score, post_run


class EvaluationResult(BaseModel):
    """One row-task x variant x replicate: task.json, coder_eval's ``EvaluationResult`` and ours beside it."""

    model_config = SCHEMA_NAMES

    run_id: str = ""  # coder_eval's task.json has none: its run folder's name (``located``)
    task_id: str
    base_task_id: str
    row_id: str | None = None
    variant_id: str
    # the folder's NN: from 0 (from 1 in earlier run folders; coder_eval's task.json has none: ``located``)
    replicate: int = written_as("replicate_index", default=0)
    description: str = written_as("task_description", "description", default="")
    agent_type: str
    model: str | None = written_as("model_used", default=None)  # the agent's report, else agent.model; None: none
    agent_model: str | None = None  # agent.model as configured (None: the agent's default): the forecast's key
    tags: list[str] = Field(default_factory=list)
    final_status: Status = "ERROR"
    success: bool = False
    weighted_score: float = 0.0
    error: str | None = written_as("error_message", default=None)
    # coder_eval's: {error_category, component} of an evaluation that ended for a reason other than its criteria
    error_details: dict[str, Any] | None = None
    started_at: str = ""
    finished_at: str | None = written_as("completed_at", default=None)
    trace_id: str | None = None  # the evaluation's OpenTelemetry trace (when telemetry exports)
    batch: int | None = None  # a sequential A/B's batch of the row (from 1); None outside one
    duration_s: float = written_as("duration_seconds", default=0.0)  # the evaluation's own time: its stages
    stage_durations: dict[str, float] = Field(default_factory=dict)  # seconds per stage (setup, pre_run, ...)
    phases_done: list[str] = Field(default_factory=list)  # sandbox, scoring: what a resumed run keeps
    rescored_at: str | None = None
    rescore_duration_s: float | None = None  # the last rescore's own scoring time
    turns: int = written_as("total_turns", default=0)  # the agent's model turns
    visible_turns: int = 0
    total_token_usage: TokenUsage | None = None  # the agent's; None: no agent ran
    max_turns_exhausted: bool = False
    stopped_early: bool = False
    early_stop_reason: Annotated[
        str | None, BeforeValidator(lambda v: EARLIER_EARLY_STOPS.get(v, v) if isinstance(v, str) else v)
    ] = None
    turns_remaining_at_stop: int | None = None
    early_stop: EarlyStopInfo | None = None
    expected_turns: int | None = None
    within_expected_turns: bool | None = None
    criteria: list[CriterionResult] = written_as("success_criteria_results", default_factory=list)
    pre_run_results: list[HookRun] = Field(default_factory=list)
    post_run_results: list[HookRun] = Field(default_factory=list)
    trajectory: list[TurnRecord] = Field(default_factory=list, exclude=True)  # written as ``iterations``
    # The agent stage ran (an agentless task's too: coder_eval records its one iteration, with no call); False
    # when the evaluation ended before it (a failed pre_run), where coder_eval records none.
    agent_ran: bool = False
    prompt: str | None = Field(default=None, exclude=True)  # written as ``iterations[0].user_input``
    warnings: list[str] = Field(default_factory=list)
    environment_info: dict[str, Any] = Field(default_factory=dict)  # judge_transport: anthropic | bedrock | none
    refused_connections: list[RefusedConnection] = Field(default_factory=list)  # by the egress policy
    simulation: SimulationInfo | None = None  # a simulated dialog's outcome; None: a single-shot run
    # Ours, beside the dialog's block (coder_eval's takes no other key): the simulated user's four token counts
    # and priced cost, and the judges' calls in the dialog's per-turn criteria checks.
    simulator_token_usage: TokenUsage | None = None
    criteria_check_token_usage: TokenUsage | None = None
    dialog: list[DialogMessage] = Field(default_factory=list)
    # The preserved sandbox as the run named its folder (relative when it was), as coder_eval records it: where its
    # `evaluate <NN folder>` re-grades. None: no sandbox was kept.
    sandbox_path: str | None = None
    task_config: TaskConfig | None = None
    # coder_eval's task.json's agent block, for its run.json row (a rebuild's); ours records none (docs)
    agent_config: dict[str, Any] | None = Field(default=None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _earlier_forms(cls, data: Any) -> Any:
        """task.json as written now, by versions before the report schema, or by coder_eval."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "trajectory" not in data and isinstance(data.get("iterations"), list):
            data["trajectory"] = trajectory_of(data["iterations"])
            data.setdefault("agent_ran", bool(data["iterations"]))
            data.setdefault("prompt", next((i.get("user_input") for i in data["iterations"]), None))
        if "total_token_usage" not in data and (data.get("input_tokens") or data.get("output_tokens")):
            data["total_token_usage"] = {
                "uncached_input_tokens": data.get("input_tokens", 0),
                "output_tokens": data.get("output_tokens", 0),
                "total_cost_usd": data.get("cost_usd"),
            }
        simulation = data.get("simulation")
        if isinstance(simulation, dict) and "simulator_input_tokens" in data:
            data["simulation"] = simulation = {
                **simulation,
                "simulator_input_tokens": data["simulator_input_tokens"],
                "simulator_output_tokens": data.get("simulator_output_tokens", 0),
            }
        if isinstance(simulation, dict) and any(key in simulation for key in SPEND_IN_DIALOG):
            data["simulation"] = {k: v for k, v in simulation.items() if k not in SPEND_IN_DIALOG}
            for key in SPEND_IN_DIALOG:
                data.setdefault(key, simulation.get(key))
        if "base_task_id" not in data and isinstance(data.get("task_id"), str):
            data = _coder_eval_result(data)
        return data

    def located(self, run_dir: Path, path: Path) -> EvaluationResult:
        """The result read from ``path`` in ``run_dir``, with what a task.json coder_eval wrote leaves to its folders:
        the run (its folder's name) and the replicate (the ``NN`` folder's; 0 in another layout, as coder_eval reads
        it)."""
        missing = {"run_id", "replicate"} - self.model_fields_set
        if not missing:
            return self
        name = path.parent.name
        found = {"run_id": run_dir.name, "replicate": int(name) if name.isdigit() else 0}
        return self.model_copy(update={field: found[field] for field in missing})

    @property
    def ended_at(self) -> str:
        """When the evaluation ended: ``completed_at``, else (a rescore stamps its own time there; coder_eval may
        record none) its start plus its duration."""
        if self.finished_at and self.rescored_at is None:
            return self.finished_at
        return _later(self.started_at, self.duration_s)

    # ------------------------------------------------------------------ the schema's computed fields

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def iterations(self) -> list[Iteration]:
        """The agent's one iteration (an agentless task's has no call); none when the agent stage never ran."""
        if not self.agent_stage_ran:
            return []
        crashed = self.final_status == "ERROR" and (self.error_details or {}).get("component") == "agent"
        reply = final_reply(self.trajectory, crashed or self.final_status in CUT_SHORT_STATUSES)
        # the agent's own word on how the run's last exchange ended
        summary = self.trajectory[-1].result_summary if self.trajectory else None
        if summary is None and reply:
            summary = {"is_error": False, "subtype": "success", "stop_reason": None, "result": reply}
        failed = bool(summary and summary.get("is_error"))  # no final reply (has_final_reply), whatever text came
        calls = [call for turn in self.trajectory for call in turn.calls]
        commands = [
            call.model_copy(
                update={"position": position, "timestamp": call.timestamp or _iso(call.started_at) or self.started_at}
            )
            for position, call in enumerate(calls)
        ]
        spans = sorted((c.started_at, c.started_at + c.duration_ms / 1000) for c in calls if c.started_at is not None)
        return [
            Iteration(
                iteration=1,
                user_input=self.prompt or "",
                agent_output=reply if reply and not failed else "",
                commands=commands,
                timestamp=self.started_at,
                duration_seconds=self.stage_durations.get("agent", 0.0),
                token_usage=self.total_token_usage,
                model_used=self.model,
                assistant_turn_count=len(self.trajectory),
                num_turns=len(self.trajectory) if self.agent_type != "none" else None,
                max_turns_exhausted=self.max_turns_exhausted,
                result_summary=summary,
                turns=[
                    turn.model_dump(exclude={"calls"} if turn.result_summary else {"calls", "result_summary"})
                    for turn in self.trajectory
                ],
                crashed=crashed,
                crash_reason=self.error if crashed else None,
                tool_union_ms=round(union_seconds(spans) * 1000, 1) if spans else None,
            )
        ]

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def iteration_count(self) -> int:
        return 1 if self.agent_stage_ran else 0

    @property
    def agent_stage_ran(self) -> bool:
        """What coder_eval records an iteration, the command figures and their statistics for (a result written
        before ``agent_ran`` was recorded: an agent that made turns)."""
        return self.agent_ran or bool(self.trajectory)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def total_assistant_turns(self) -> int | None:
        """The agent's model turns; None when its stage never ran (an ERROR before it), as coder_eval writes it."""
        return self.turns if self.agent_stage_ran else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def actual_commands(self) -> int | None:
        """The agent's tool calls (0 for an agentless task); None when the agent stage never ran, as coder_eval."""
        return sum(len(turn.calls) for turn in self.trajectory) if self.agent_stage_ran else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def expected_commands(self) -> int | None:
        """The task's ``expected_commands`` when the agent ran (coder_eval records it only then)."""
        expected = (self.task_config.resolved if self.task_config else {}).get("expected_commands")
        return expected if self.trajectory and isinstance(expected, int) and expected >= 1 else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def commands_efficiency(self) -> float | None:
        """coder_eval's: expected / max(actual, expected), 0.0 with no tool call; informational, never gating."""
        expected = self.expected_commands
        if expected is None:
            return None
        actual = self.actual_commands or 0
        return expected / max(actual, expected) if actual else 0.0

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def command_stats(self) -> CommandStats | None:
        """None when the agent stage never ran, as coder_eval leaves it (an agentless task's are zeros)."""
        return CommandStats.of(self.trajectory) if self.agent_stage_ran else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def setup_ms(self) -> float | None:
        return self._stage_ms("setup")

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def grading_ms(self) -> float | None:
        return self._stage_ms("score")

    def _stage_ms(self, stage: str) -> float | None:
        seconds = self.stage_durations.get(stage)
        return None if seconds is None else round(seconds * 1000, 1)

    # ------------------------------------------------------------------ spend (judges and the simulated user
    # are never counted against run_limits, which cap the agent only)

    @property
    def judge_token_usage(self) -> TokenUsage | None:
        """The judges' tokens and cost, summed over the criteria and a dialog's per-turn checks (None: no judge
        ran)."""
        usages = [c.token_usage for c in self.criteria if c.token_usage is not None]
        per_turn = self.criteria_check_token_usage
        return TokenUsage.summed(usages + ([per_turn] if per_turn else []))

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def judge_input_tokens(self) -> int:
        """The judges' uncached prompt tokens (as ``input_tokens`` counts the agent's)."""
        usage = self.judge_token_usage
        return usage.uncached_input_tokens if usage else 0

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def judge_output_tokens(self) -> int:
        usage = self.judge_token_usage
        return usage.output_tokens if usage else 0

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def judge_cost_usd(self) -> float | None:
        usage = self.judge_token_usage
        return usage.total_cost_usd if usage else None

    @property
    def agent_cost_usd(self) -> float | None:
        return self.total_token_usage.total_cost_usd if self.total_token_usage else None

    @property
    def simulator_cost_usd(self) -> float | None:
        usage = self.simulator_token_usage
        return usage.total_cost_usd if usage else None

    @property
    def total_cost_usd(self) -> float | None:
        """Agent + judges + simulated user; None when none of them has a cost."""
        costs = [c for c in (self.agent_cost_usd, self.judge_cost_usd, self.simulator_cost_usd) if c is not None]
        return round(sum(costs), 6) if costs else None

    @property
    def cost_complete(self) -> bool:
        """False when the costs are a floor: the agent, a judge or the simulated user spent tokens without a cost,
        or the agent was cut off by a timeout or before a turn's usage came (an early stop interrupting a round
        trip the API billed: that turn was never costed)."""
        if self.final_status == "TIMEOUT" or any(turn.cost_source == "unknown" for turn in self.trajectory):
            return False
        return all(
            _priced(usage) for usage in (self.total_token_usage, self.judge_token_usage, self.simulator_token_usage)
        )

    @property
    def simulator_input_tokens(self) -> int:
        return self.simulation.simulator_input_tokens if self.simulation else 0

    @property
    def simulator_output_tokens(self) -> int:
        return self.simulation.simulator_output_tokens if self.simulation else 0


STAGE_MS = {"setup": "setup_ms", "score": "grading_ms"}  # our stages' times in coder_eval's task.json (ms)


def _coder_eval_result(data: dict[str, Any]) -> dict[str, Any]:
    """A task.json coder_eval wrote, with what it does not record derived as it derives it: the dataset row and tags
    from the resolved task, success from the status, turns, stage times, and each criterion's index (its position)
    and weight (the task's)."""
    resolved = (data.get("task_config") or {}).get("resolved") or {}
    base_task_id, row_id = _dataset_row(data["task_id"], resolved)
    specs = [spec if isinstance(spec, dict) else {} for spec in resolved.get("success_criteria") or []]
    criteria = data.get("success_criteria_results") or []
    derived = {
        "base_task_id": base_task_id,
        "row_id": row_id,
        "tags": resolved.get("tags") or [],
        "success": current_status(data.get("final_status")) == "SUCCESS",
        "total_turns": data.get("total_assistant_turns") or 0,
        "stage_durations": {stage: data[key] / 1000 for stage, key in STAGE_MS.items() if data.get(key) is not None},
    }
    # its nulls take our defaults (an ungraded weighted_score is null there)
    written = {key: value for key, value in data.items() if value is not None}
    return derived | written | {"success_criteria_results": [_at(i, c, specs) for i, c in enumerate(criteria)]}


def _dataset_row(task_id: str, resolved: dict[str, Any]) -> tuple[str, str | None]:
    """(base_task_id, row_id): the resolved task's suite and row, else the parts of ``<task_id>/<row_id>``."""
    if resolved:
        return resolved.get("suite_id") or task_id, resolved.get("row_id")
    base, _, row = task_id.partition("/")
    return base, row or None


def _at(index: int, criterion: Any, specs: list[dict[str, Any]]) -> Any:
    """A criterion result with its index and its criterion's weight (a gating one's 1.0 when the task is unknown)."""
    if not isinstance(criterion, dict):
        return criterion
    weight = specs[index].get("weight", 1.0) if index < len(specs) else float(criterion.get("gating", True))
    return {"index": index, "weight": weight, **criterion}


def instant(text: str) -> datetime:
    """An ISO time as written: ours in UTC (``Z``), coder_eval's without a zone (read as UTC, so that both compare)."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _later(text: str, seconds: float) -> str:
    """The ISO time ``text`` plus ``seconds``, written as ``text`` is (in UTC with ``Z``, or without a zone)."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    if moment.tzinfo is None:
        return moment.isoformat()
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def union_seconds(spans: list[tuple[float, float]]) -> float:
    """The seconds at least one of the (start, end) spans, sorted by start, was running."""
    total, reach = 0.0, float("-inf")
    for start, end in spans:
        total += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return total


def _iso(epoch_s: float | None) -> str | None:
    """An epoch time as the schema's ISO timestamp (UTC, Z)."""
    if epoch_s is None:
        return None
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
