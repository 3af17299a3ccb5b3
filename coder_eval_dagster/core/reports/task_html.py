"""task.html: one evaluation as a self-contained page (inline CSS, no scripts, works offline): its criteria (with
the judges' transcripts), a dialog, the hooks, and the transcript of the agent's turns."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

import yaml

from ..agents.base import OUTPUT_CHARS
from ..criteria.run_command import RunCommand
from ..layout import judge_transcript
from ..models.results import (
    CriterionResult,
    DialogMessage,
    EvaluationResult,
    HookRun,
    SimulationInfo,
    ToolCallRecord,
    TurnRecord,
    call_target,
)
from ..transcript import UserMessage, conversation
from .notes import run_time_notes
from .run_summary import usd
from .shown_text import criterion_score

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem;color:#222}
h1{font-size:1.4rem;margin-bottom:.2rem} .meta{color:#555;margin-bottom:1rem}
.badge{display:inline-block;padding:.1rem .5rem;border-radius:.6rem;font-size:.85rem;margin-right:.3rem}
.SUCCESS{background:#d6f5d6}.FAILURE,.MAX_TURNS_EXHAUSTED{background:#fbd5d5}.ERROR,.BUILD_FAILED,.TIMEOUT,
.TOKEN_BUDGET_EXCEEDED,.COST_BUDGET_EXCEEDED{background:#fde6c4}.NOT_GRADED{background:#e2e8f0}.info{background:#e2e8f0}.early{background:#fef3c7}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}th,td{border:1px solid #ddd;padding:.35rem .5rem;
text-align:left;vertical-align:top;font-size:.9rem}th{background:#f6f6f6}
pre{background:#f7f7f7;padding:.5rem;overflow-x:auto;font-size:.8rem;white-space:pre-wrap}
.pass{color:#137333}.fail{color:#b3261e}.neutral{color:#666}
.banner{border:2px solid #b3261e;background:#fdecea;padding:.7rem 1rem;border-radius:.4rem;margin:1rem 0}
.banner strong{color:#b3261e} dl.inputs{margin:0;font-size:.85rem} dl.inputs dt{font-weight:600;float:left;
clear:left;margin-right:.4rem} dl.inputs dd{margin:0 0 .2rem 0;white-space:pre-wrap;word-break:break-word}
.label{font-size:.75rem;color:#555;margin:.3rem 0 0}
.msg{border-radius:.5rem;padding:.4rem .7rem;margin:.4rem 0;max-width:85%;white-space:pre-wrap}
.msg.user{background:#e8f0fe;margin-right:auto}.msg.agent{background:#f1f3f4;margin-left:auto}
.msg .who{font-size:.75rem;color:#555;display:block}
.turn{border-left:3px solid #d0d7de;padding:.1rem 0 .1rem .8rem;margin:.8rem 0}.turn h3{font-size:1rem;margin:.2rem 0}
.turn .meta{font-weight:normal;font-size:.8rem;margin:0}.call{margin:.3rem 0}.call summary{cursor:pointer}
.success{color:#137333}.error{color:#b3261e}.unknown{color:#666}.cap{color:#a15c00;font-style:italic}
.judge td{background:#fafafa}
.notes{border:1px solid #e0b252;background:#fff8e1;padding:.4rem 1rem;border-radius:.4rem;margin:1rem 0}
.notes h2{font-size:1rem;margin:.2rem 0}.notes ul{margin:.2rem 0;padding-left:1.2rem}
"""


def _mark(criterion: CriterionResult) -> str:
    if not criterion.gating:
        return '<span class="neutral" title="informational">○</span>'
    return '<span class="pass">✓</span>' if criterion.passed else '<span class="fail">✗</span>'


def _criterion_row(criterion: CriterionResult) -> str:
    notes = []
    if not criterion.gating:
        notes.append('<span class="badge info">informational — not gated</span>')
    if criterion.advisory:
        notes.append('<span class="badge early">advisory — not gated</span>')
    error = f"<div class='fail'>{escape(criterion.error)}</div>" if criterion.error else ""
    details = escape(json.dumps(criterion.details, indent=1, ensure_ascii=False)[:4000])
    return (
        f"<tr><td>{_mark(criterion)}</td><td>{criterion.index}</td><td>{escape(criterion.type)}</td>"
        f"<td>{escape(criterion.description)} {''.join(notes)}{error}</td><td>{_inputs(criterion)}</td>"
        f"<td>{criterion_score(criterion, 3)}</td><td>{criterion.pass_threshold:g}</td><td>{criterion.weight:g}</td>"
        f"<td><details open><summary>result</summary><pre>{details}</pre></details></td></tr>"
    )


# coder_eval's JudgeTranscript names, and the names a transcript written before them used
JUDGE_PARTS = (
    ("raw_verdict", "verdict", "the verdict"),
    ("tool_calls", "", "its tool calls"),
    ("judge_prompt", "prompt", "what the judge was shown"),
    ("judge_system_prompt", "system", "its instructions"),
)


def _judge_transcript(criterion: CriterionResult, folder: Path | None) -> str:
    """A judge's transcript (judge-N.yaml beside task.json), in a row under its criterion; folded, the verdict first."""
    name = judge_transcript(criterion.index)
    if folder is None or criterion.details.get("transcript") != name:
        return ""
    try:
        record = yaml.safe_load((folder / name).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        return f"<tr class='judge'><td></td><td colspan='8' class='fail'>{escape(name)}: {escape(str(exc))}</td></tr>"
    record = record if isinstance(record, dict) else {}
    parts = "".join(
        f"<details{' open' if key == 'raw_verdict' else ''}><summary>{label}</summary>"
        f"<pre>{_capped(_part_text(record.get(key) or record.get(earlier)))}</pre></details>"
        for key, earlier, label in JUDGE_PARTS
        if record.get(key) or record.get(earlier)
    )
    cut = " · cut to max_transcript_chars" if record.get("truncated") else ""
    return (
        f"<tr class='judge'><td></td><td colspan='8'><details><summary>judge transcript ({escape(name)}) · model "
        f"{escape(str(record.get('model')))} · score {escape(str(record.get('score')))}{cut}</summary>{parts}"
        "</details></td></tr>"
    )


def _part_text(value: Any) -> str:
    """A transcript part as text: an agent judge's tool calls one line each (tool, target, status, what came back)."""
    if not isinstance(value, list):
        return str(value)
    calls = [call for call in value if isinstance(call, dict)]
    return "\n".join(
        f"- {call.get('tool_name')}: {call.get('detail')} ({call.get('status')})\n  -> {call.get('result_preview')}"
        for call in calls
    )


def _shown_inputs(criterion: CriterionResult) -> dict[str, object]:
    """The inputs as the task set them, with the match mode an expected stdout was compared by even when it is the
    default (``exact``), which the recorded inputs leave out: the expected text means little without it."""
    if "expected_stdout" not in criterion.inputs or "stdout_match" in criterion.inputs:
        return criterion.inputs
    shown: dict[str, object] = {}
    for name, value in criterion.inputs.items():
        shown[name] = value
        if name == "expected_stdout":
            shown["stdout_match"] = RunCommand.model_fields["stdout_match"].default
    return shown


def _inputs(criterion: CriterionResult) -> str:
    """What the criterion checked: its command, path, expected output and match mode, assertions..."""
    items = []
    for name, value in _shown_inputs(criterion).items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        items.append(f"<dt>{escape(name)}</dt><dd>{escape(text[:1500])}</dd>")
    return f"<dl class='inputs'>{''.join(items)}</dl>" if items else ""


def _hooks(title: str, runs: list[HookRun]) -> str:
    if not runs:
        return ""
    items = []
    for run in runs:
        state = "skipped" if run.skipped else (run.error or f"exit {run.exit_code}")
        items.append(
            f"<details><summary><code>{escape(run.command)}</code> — {escape(state)} ({run.duration_s:.2f} s)"
            f"</summary><p class='label'>stdout</p><pre>{escape(run.stdout) or '(empty)'}</pre>"
            f"<p class='label'>stderr</p><pre>{escape(run.stderr) or '(empty)'}</pre></details>"
        )
    return f"<h2>{title}</h2>{''.join(items)}"


# What a transcript shows of each tool call's input and result; the agents record at most AGENT_RESULT_CHARS.
SHOWN_CHARS = 4000
GIST_CHARS = 120  # a folded call's line: its command or path
AGENT_RESULT_CHARS = OUTPUT_CHARS
OPEN_CALLS = 40  # a longer transcript starts with its calls folded (each one line)


def _capped(text: str) -> str:
    """``text`` escaped, cut at SHOWN_CHARS with the cut said."""
    if len(text) <= SHOWN_CHARS:
        return escape(text)
    note = f"[cut here: {SHOWN_CHARS:,} of {len(text):,} characters shown]"
    return f"{escape(text[:SHOWN_CHARS])}\n<span class='cap'>{note}</span>"


def _returned(call: ToolCallRecord) -> str:
    if call.output is None:
        return "<p class='label'>result: none recorded</p>"
    note = (
        f" <span class='cap'>(at the agent's {AGENT_RESULT_CHARS:,}-character cap: the rest was not recorded)</span>"
        if len(call.output) >= AGENT_RESULT_CHARS
        else ""
    )
    return f"<p class='label'>result{note}</p><pre>{_capped(call.output) or '(empty)'}</pre>"


def _gist(call: ToolCallRecord) -> str:
    """The call's target on one line, cut at GIST_CHARS: a folded call says what it ran or read."""
    line = " ".join(call_target(call.parameters).split())
    return line if len(line) <= GIST_CHARS else line[: GIST_CHARS - 1] + "…"


def _call(call: ToolCallRecord, open_: bool) -> str:
    arguments = json.dumps(call.parameters, indent=1, ensure_ascii=False)
    return (
        f"<details class='call'{' open' if open_ else ''}><summary><code>{escape(call.tool)}</code> "
        f"<span class='{call.status}'>{call.status}</span> · {call.duration_ms:.0f} ms · "
        f"<code class='gist'>{escape(_gist(call))}</code></summary>"
        f"<p class='label'>input</p><pre>{_capped(arguments)}</pre>{_returned(call)}</details>"
    )


def _usage(turn: TurnRecord) -> str:
    cost = "" if turn.cost_usd is None else f" · ${turn.cost_usd:.4f}"
    return (
        f"{turn.input_tokens:,} in (+{turn.cache_read_input_tokens:,} cache read, "
        f"+{turn.cache_creation_input_tokens:,} cache write) / {turn.output_tokens:,} out{cost}"
    )


def _turn(turn: TurnRecord, open_calls: bool) -> str:
    text = f"<div class='msg agent'><span class='who'>agent</span>{escape(turn.text)}</div>" if turn.text else ""
    calls = "".join(_call(call, open_calls) for call in turn.calls)
    return f"<div class='turn'><h3>Turn {turn.index} <span class='meta'>{_usage(turn)}</span></h3>{text}{calls}</div>"


def _transcript(result: EvaluationResult) -> str:
    """Turn by turn: the agent's words, each tool call's input and result; a dialog's user messages in between."""
    if not result.trajectory:
        return ""
    open_calls = sum(len(turn.calls) for turn in result.trajectory) <= OPEN_CALLS
    parts = [
        f"<div class='msg user'><span class='who'>user · {_opened(result, entry.exchange, 'exchange')}</span>"
        f"{escape(entry.text)}</div>"
        if isinstance(entry, UserMessage)
        else _turn(entry, open_calls)
        for entry in conversation(result)
    ]
    note = (
        f"<p class='meta'>{len(result.trajectory)} turn(s). Tool results as the agent recorded them (the built-in "
        f"agents keep the first {AGENT_RESULT_CHARS:,} characters); inputs and results shown up to "
        f"{SHOWN_CHARS:,} characters.</p>"
    )
    return f"<h2>Transcript</h2>{note}{''.join(parts)}"


def _opened(result: EvaluationResult, exchange: int, word: str) -> str:
    """The exchange a user message opened (``word`` n); the message after the last one, a closing remark before the
    stop token, opened none."""
    info = result.simulation
    closing = info is not None and info.stop_reason == "stop_token" and exchange > info.turns
    return "closing message" if closing else f"{word} {exchange}"


def _speaker(result: EvaluationResult, message: DialogMessage) -> str:
    """Who wrote a dialog message: the agent, the simulated user, or the task's author (an ``initial_prompt``
    opening the dialog: a simulated user's message records its call's time, the author's none)."""
    if message.role == "agent":
        return "agent"
    authored = message is result.dialog[0] and message.started_at is None
    return "task prompt" if authored else "simulated user"


def _trial(info: SimulationInfo) -> str:
    """Which replicate the dialog is, from 1: of its n_trials when they made the replicates; repeats made them when
    n_trials is 1, and their count is not in the result."""
    number = info.replicate_index + 1
    return f"trial {number} of {info.n_trials}" if info.n_trials > 1 else f"replicate {number}"


def _dialog(result: EvaluationResult) -> str:
    """A simulated dialog as a conversation, with how it ended."""
    info = result.simulation
    if info is None:
        return ""
    bubbles = []
    for message in result.dialog:
        passed = message.criteria_passed
        check = "" if passed is None else f" · criteria {'pass' if passed else 'fail'}"
        where = f"turn {message.turn}" if message.role == "agent" else _opened(result, message.turn, "turn")
        bubbles.append(
            f"<div class='msg {message.role}'><span class='who'>{_speaker(result, message)} · {where}"
            f" · {message.tokens} tokens{check}</span>{escape(message.text)}</div>"
        )
    head = (
        f"<p class='meta'>{info.turns} exchange(s), ended by {escape(str(info.stop_reason))} · {_trial(info)}"
        f" · simulator tokens {result.simulator_input_tokens} in / {result.simulator_output_tokens} out</p>"
    )
    return f"<h2>Dialog</h2>{head}{''.join(bubbles)}"


def _tokens(result: EvaluationResult) -> str:
    """The agent's four token counts and each cost with its source (judges and simulated user apart)."""
    usage = result.total_token_usage
    parts = [
        f"tokens {usage.uncached_input_tokens} in (+{usage.cache_read_input_tokens} cache read, "
        f"+{usage.cache_creation_input_tokens} cache write) / {usage.output_tokens} out · agent {usd(usage)}"
        if usage
        else "no agent tokens"
    ]
    if result.judge_token_usage:
        parts.append(f"judges {usd(result.judge_token_usage)}")
    if result.simulator_token_usage:
        parts.append(f"simulated user {usd(result.simulator_token_usage)}")
    return " · ".join(parts)


def render_task_html(result: EvaluationResult, folder: Path | None = None) -> str:
    """The page; ``folder`` (the evaluation's) adds the judges' transcripts kept there."""
    gating = [c for c in result.criteria if c.gating and not c.advisory]
    passed = sum(c.passed for c in gating)
    badges = [f'<span class="badge {result.final_status}">{result.final_status}</span>']
    if result.stopped_early:
        badges.append(f'<span class="badge early">stopped early ({escape(result.early_stop_reason or "")})</span>')
    expected = result.expected_turns  # as its run-time note (within_expected_turns is also False for a failure)
    if expected is not None and result.visible_turns > expected:
        badges.append('<span class="badge early">over expected turns</span>')
    if result.warnings:
        badges.append(f'<span class="badge early">{len(result.warnings)} warning(s)</span>')
    error = (
        f"<div class='banner'><strong>{escape(result.final_status)}</strong>: {escape(result.error)}</div>"
        if result.error
        else ""
    )
    head = (
        "<tr><th></th><th>#</th><th>type</th><th>description</th><th>inputs</th><th>score</th><th>threshold</th>"
        "<th>weight</th><th></th></tr>"
    )
    rows = "".join(_criterion_row(c) + _judge_transcript(c, folder) for c in result.criteria)
    criteria = f"<table>{head}{rows}</table>" if rows or result.final_status != "ERROR" else _not_checked(result)
    title = escape(f"{result.task_id} [{result.variant_id}] #{result.replicate:02d}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{_CSS}</style></head><body>
<h1>{title}</h1>
<div class="meta">{"".join(badges)} weighted score {result.weighted_score:.3f} ·
{passed}/{len(gating)} gating criteria passed · {result.duration_s:.2f} s · agent {escape(result.agent_type)}
· turns {result.turns} (visible {result.visible_turns})
· {_tokens(result)}{_trace(result)}</div>
{error}{_notes(result)}<p>{escape(result.description)}</p>
<h2>Criteria</h2>{criteria}
{_dialog(result)}{_hooks("pre_run", result.pre_run_results)}{_transcript(result)}
{_hooks("post_run", result.post_run_results)}
</body></html>
"""


# The stages an ERROR's message starts with (Evaluation.fail's reasons), and the stage of each error component (an
# agent's own error text names none)
_FAILED_STAGES = ("sandbox setup", "pre_run", "agent", "criteria", "post_run", "decide", "finish")
_COMPONENT_STAGES = {"agent": "agent", "sandbox": "sandbox setup", "evaluator": "criteria"}


def _failed_stage(result: EvaluationResult) -> str:
    """The stage an ERROR ended in, as its message or its error component names it."""
    error = result.error or ""
    named = next((stage for stage in _FAILED_STAGES if error.startswith(f"{stage} ")), None)
    component = (result.error_details or {}).get("component", "")
    return named or _COMPONENT_STAGES.get(component, "the harness")


def _not_checked(result: EvaluationResult) -> str:
    """In place of an empty criteria table: why there is no verdict to show."""
    return f"<p class='fail'>criteria not checked: the evaluation ended as ERROR in {escape(_failed_stage(result))}</p>"


def _notes(result: EvaluationResult) -> str:
    """run.md's run-time notes of this evaluation (its warnings among them): a SUCCESS may have been cut off."""
    notes = run_time_notes(result)
    if not notes:
        return ""
    items = "".join(f"<li><strong>{note.kind}</strong>: {escape(note.text)}</li>" for note in notes)
    return f"<div class='notes' id='notes'><h2>Run-time notes</h2><ul>{items}</ul></div>"


def _trace(result: EvaluationResult) -> str:
    """The evaluation's trace id, to look it up in the telemetry backend (nothing when telemetry was off)."""
    return f" · trace <code>{escape(result.trace_id)}</code>" if result.trace_id else ""
