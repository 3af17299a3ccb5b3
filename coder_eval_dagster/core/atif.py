"""Trajectories in Harbor's ATIF (the schema: models/atif.py): an evaluation's written out, and one read in to replay.

Out (``coder-eval export RUN_DIR --format atif``): the opening prompt and a
dialog's user messages are user steps; each agent turn is an agent step with
its text as the message, its tool calls (parameters as arguments; status
and duration in the call's ``extra``), what each returned as the step's
observation, the working folder the agent saw (``/sandbox``) as the step's
``extra.cwd``, and its usage as the step's metrics, where ``prompt_tokens``
counts the whole prompt (cache reads and writes included) as ATIF defines
and ``extra.cost_source`` says where the cost came from (``reported`` with
no ``cost_usd``: a turn whose cost the agent reported on a later turn, as
Claude Code reports one figure per exchange, on its last turn).

In (the replay agent, ``trajectory: FILE.json``): a file whose
``schema_version`` says ATIF plays as a replay trajectory: each agent step
is a turn, its tool calls the turn's calls (Claude Code's ``file_path``,
``old_string`` and ``new_string`` become the replay's ``path``, ``old`` and
``new``; an absolute path inside the session's working folder becomes
relative to the sandbox, and that folder in a Bash command the sandbox's
own, ``/sandbox``), user steps after the first agent step are a dialog's
user messages; system steps, copied context, observations and a message's
image and audio parts are not replayed (the calls run again and make their
own). A step's
``metrics.extra.cost_source`` (``reported``, ``priced``), where an export
wrote it, stays the turn's: the replay reports the usage and cost the run
it came from did.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any, Literal, get_args

from pydantic import ValidationError

from .layout import replicate_name
from .models import atif
from .models.results import EvaluationResult, ToolCallRecord, TurnRecord
from .models.trajectory import ToolCall, Trajectory, TrajectoryTurn, TurnUsage
from .problems import UNKNOWN_FIELD, InvalidInput, Loc, Problem, problems_from_validation
from .sandbox.holder import SANDBOX_PATH
from .transcript import UserMessage, conversation
from .version import PACKAGE, framework_version

LineOf = Callable[[Loc], int]
# Claude Code's parameter names -> the replay's, for the tools the replay really runs.
REPLAY_NAMES = {"file_path": "path", "old_string": "old", "new_string": "new"}
FILE_TOOLS = ("Read", "Write", "Edit")
# Where every sandbox driver shows the sandbox to its commands and agents: the working folder an export records.
WORKING_FOLDER = str(SANDBOX_PATH)
# What may stand before and after a folder in a command for it to be that folder, not part of a longer name or path
# (``/app`` in ``cd /app``, ``"/app/x"``, ``--dir=/app;``, ``PATH=/app/bin:$PATH``; not in ``/application``,
# ``/srv/app``, ``$(pwd)/app``).
BEFORE_A_PATH = r"\s;&|(<>'\"`=:,{"
AFTER_A_PATH = r"/\s;&|()<>'\"`:,}"


def is_atif(data: Any) -> bool:
    """An ATIF document says so in its ``schema_version`` (``ATIF-v1.7``)."""
    return isinstance(data, dict) and str(data.get("schema_version", "")).startswith("ATIF-")


def replay_trajectory(data: Any, source: str, line_of: LineOf) -> Trajectory:
    """A parsed trajectory file as the replay plays it: the replay format, or ATIF; problems name file, line, field."""
    if not is_atif(data):
        try:
            return Trajectory.model_validate(data)
        except ValidationError as exc:
            raise InvalidInput(problems_from_validation(exc, data, source, line_of, model=Trajectory)) from None
    try:
        document = atif.Trajectory.model_validate(data)
    except ValidationError as exc:
        problems = problems_from_validation(exc, data, source, line_of, model=atif.Trajectory)
        raise InvalidInput([_in_atif_terms(p, data["schema_version"]) for p in problems]) from None
    return from_atif(document, source, line_of)


def _in_atif_terms(problem: Problem, declared: str) -> Problem:
    """An unknown key is unknown to ATIF (the version the file says, else the newest), not to the task format (the
    did-you-mean, from the key's block, stays)."""
    if not problem.message.startswith(UNKNOWN_FIELD):
        return problem
    version = declared if declared in get_args(atif.AtifVersion) else get_args(atif.AtifVersion)[-1]
    return replace(problem, message=f"unknown field (not in {version})" + problem.message[len(UNKNOWN_FIELD) :])


# ----------------------------------------------------------------------------- in: ATIF -> replay


def from_atif(document: atif.Trajectory, source: str, line_of: LineOf) -> Trajectory:
    turns: list[TrajectoryTurn] = []
    for index, step in enumerate(document.steps):
        if step.source == "agent" and not step.is_copied_context:
            turns.append(_replay_turn(step, _working_folder(step, document), ("steps", index), source, line_of))
        elif step.source == "user" and turns:
            if turns[-1].user is not None:  # two user messages in a row are one message
                turns[-1] = TrajectoryTurn(user=f"{turns[-1].user}\n\n{step.text}")
            elif step.text.strip():
                turns.append(TrajectoryTurn(user=step.text))
    while turns and turns[-1].user is not None:  # a user message after the last agent step opens nothing
        turns.pop()
    if not turns:
        raise InvalidInput([Problem(source, line_of(("steps",)), "steps", "no agent step to replay")])
    return Trajectory(turns=turns)


def _replay_turn(step: atif.Step, cwd: str | None, where: Loc, source: str, line_of: LineOf) -> TrajectoryTurn:
    calls = [
        _replay_call(call, cwd, (*where, "tool_calls", index), source, line_of)
        for index, call in enumerate(step.tool_calls or [])
    ]
    return TrajectoryTurn(usage=_usage(step.metrics), calls=calls, text=step.text or None)


def _replay_call(call: atif.ToolCall, cwd: str | None, where: Loc, source: str, line_of: LineOf) -> ToolCall:
    arguments = dict(call.arguments)
    if call.function_name in FILE_TOOLS:
        arguments = {REPLAY_NAMES.get(name, name): value for name, value in arguments.items()}
        if isinstance(arguments.get("path"), str):
            arguments["path"] = _inside(arguments["path"], cwd)
    if call.function_name == "Bash" and isinstance(arguments.get("command"), str):
        arguments["command"] = _in_the_sandbox(arguments["command"], cwd)
    data = {**arguments, "tool": call.function_name}
    try:
        return ToolCall.model_validate(data)
    except ValidationError as exc:
        found = problems_from_validation(exc, data, source, line_of, (*where, "arguments"), model=ToolCall)
        raise InvalidInput(found) from None


def _working_folder(step: atif.Step, document: atif.Trajectory) -> str | None:
    """The session's working folder where the producer recorded it (Harbor's Claude Code: ``cwd``, ``cwds``)."""
    cwd = (step.extra or {}).get("cwd")
    if isinstance(cwd, str):
        return cwd
    cwds = (document.agent.extra or {}).get("cwds")
    return cwds[0] if isinstance(cwds, list) and len(cwds) == 1 and isinstance(cwds[0], str) else None


def _inside(path: str, cwd: str | None) -> str:
    """An absolute path inside the recorded working folder, relative to it (the sandbox stands in for it)."""
    if cwd is None or not path.startswith("/"):
        return path
    try:
        return PurePosixPath(path).relative_to(cwd).as_posix()
    except ValueError:
        return path


def _in_the_sandbox(command: str, cwd: str | None) -> str:
    """A command with the recorded working folder as the sandbox's (``cat /app/a.txt`` -> ``cat /sandbox/a.txt``), so
    that it finds what the replay's file calls put there: the folder only where it stands whole, never a longer name
    (``/application``) or another folder's part (``/srv/app``); a working folder of ``/`` is every path's, left be."""
    folder = PurePosixPath(cwd) if cwd is not None else None
    if folder is None or not folder.is_absolute() or folder in (PurePosixPath("/"), SANDBOX_PATH):
        return command
    whole = rf"(?<![^{BEFORE_A_PATH}]){re.escape(folder.as_posix())}(?=[{AFTER_A_PATH}]|$)"
    return re.sub(whole, WORKING_FOLDER, command)


def _usage(metrics: atif.Metrics | None) -> TurnUsage | None:
    """ATIF's prompt_tokens hold cache reads (cached_tokens) and writes (extra); the replay's input_tokens do not."""
    if metrics is None:
        return None
    written = (metrics.extra or {}).get("cache_creation_input_tokens")
    written = written if isinstance(written, int) and written > 0 else 0
    read = metrics.cached_tokens or 0
    return TurnUsage(
        input_tokens=max(0, (metrics.prompt_tokens or 0) - read - written),
        output_tokens=metrics.completion_tokens or 0,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=written,
        cost_usd=metrics.cost_usd,
        cost_source=_kept_source(metrics),
    )


def _kept_source(metrics: atif.Metrics) -> Literal["reported", "priced"] | None:
    """The cost source an export of ours recorded (``metrics.extra.cost_source``): ``reported`` (with a cost, or
    none: a later turn's reported cost covers this one), ``priced`` beside a cost; None for anything else (no
    source, ``unknown``: the replay prices the turn)."""
    source = (metrics.extra or {}).get("cost_source")
    if source == "reported":
        return "reported"
    return "priced" if source == "priced" and metrics.cost_usd is not None else None


# ----------------------------------------------------------------------------- out: evaluation -> ATIF


def to_atif(result: EvaluationResult, prompt: str | None = None) -> atif.Trajectory:
    """One evaluation's trajectory; ``prompt`` opens it unless a dialog's first message already does."""
    entries = conversation(result)
    opening: list[UserMessage] = (
        [] if not prompt or (entries and isinstance(entries[0], UserMessage)) else [UserMessage(prompt, 1)]
    )
    steps = [_step(number, entry) for number, entry in enumerate([*opening, *entries], start=1)]
    return atif.Trajectory(
        session_id=f"{result.run_id}/{result.variant_id}/{result.task_id}/{replicate_name(result.replicate)}",
        agent=atif.Agent(
            name=result.agent_type,
            version=framework_version(),
            model_name=result.model,
            extra={"cwds": [WORKING_FOLDER]},
        ),
        steps=steps,
        final_metrics=_final_metrics(result.trajectory, len(steps)),
        extra={
            "harness": PACKAGE,
            "run_id": result.run_id,
            "variant_id": result.variant_id,
            "task_id": result.task_id,
            "replicate": result.replicate,
            "final_status": result.final_status,
            "weighted_score": result.weighted_score,
        },
    )


def _step(number: int, entry: UserMessage | TurnRecord) -> atif.Step:
    if isinstance(entry, UserMessage):
        return atif.Step(step_id=number, source="user", message=entry.text)
    return atif.Step(
        step_id=number,
        source="agent",
        message=entry.text or "",
        tool_calls=[_tool_call(call) for call in entry.calls] or None,
        observation=atif.Observation(results=[_returned(call) for call in entry.calls]) if entry.calls else None,
        metrics=_metrics(entry),
        extra={"cwd": WORKING_FOLDER},  # where the agent's absolute paths are (Harbor's producers record it so)
    )


def _tool_call(call: ToolCallRecord) -> atif.ToolCall:
    return atif.ToolCall(
        tool_call_id=call.tool_id,
        function_name=call.tool,
        arguments=call.parameters,
        extra={"status": call.status, "duration_ms": call.duration_ms},
    )


def _returned(call: ToolCallRecord) -> atif.ObservationResult:
    return atif.ObservationResult(source_call_id=call.tool_id, content=call.output)


def _metrics(turn: TurnRecord) -> atif.Metrics | None:
    counts = (turn.input_tokens, turn.output_tokens, turn.cache_read_input_tokens, turn.cache_creation_input_tokens)
    if not any(counts) and turn.cost_usd is None:
        return None
    extra: dict[str, Any] = {}
    if turn.cache_creation_input_tokens:
        extra["cache_creation_input_tokens"] = turn.cache_creation_input_tokens
    if turn.cost_source is not None:  # reported with no cost_usd: the exchange's last turn reported this one's
        extra["cost_source"] = turn.cost_source
    return atif.Metrics(
        prompt_tokens=_prompt_tokens(turn),
        completion_tokens=turn.output_tokens,
        cached_tokens=turn.cache_read_input_tokens,
        cost_usd=turn.cost_usd,
        extra=extra or None,
    )


def _prompt_tokens(turn: TurnRecord) -> int:
    """The whole prompt, as ATIF counts it: uncached input, cache reads and cache writes."""
    return turn.input_tokens + turn.cache_read_input_tokens + turn.cache_creation_input_tokens


def _final_metrics(turns: list[TurnRecord], steps: int) -> atif.FinalMetrics:
    costs = [t.cost_usd for t in turns if t.cost_usd is not None]
    written = sum(t.cache_creation_input_tokens for t in turns)
    return atif.FinalMetrics(
        total_prompt_tokens=sum(_prompt_tokens(t) for t in turns),
        total_completion_tokens=sum(t.output_tokens for t in turns),
        total_cached_tokens=sum(t.cache_read_input_tokens for t in turns),
        total_cost_usd=round(sum(costs), 6) if costs else None,
        total_steps=steps,
        extra={"cache_creation_input_tokens": written} if written else None,
    )


def atif_json(document: atif.Trajectory) -> str:
    """The document as written: the RFC's keys only, unset optional ones left out."""
    return document.model_dump_json(exclude_none=True, indent=2) + "\n"
