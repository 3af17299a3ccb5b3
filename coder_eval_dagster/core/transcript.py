"""An evaluation's conversation in order: the agent's turns, with a dialog's user messages where its exchanges begin.

task.html's transcript and the ATIF export both follow it. A turn does not
record which exchange of a simulated dialog it belongs to; the dialog's agent
messages do record what each exchange's turns said (their texts, joined) and
spent (input + output tokens), which places each boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

from .models.results import DialogMessage, EvaluationResult, TurnRecord
from .simulation import NO_TEXT


@dataclass(frozen=True)
class UserMessage:
    """A user message of a dialog: the opening prompt (exchange 1) or the simulated user's next one."""

    text: str
    exchange: int


Entry = TurnRecord | UserMessage


def conversation(result: EvaluationResult) -> list[Entry]:
    """The agent's turns; with a dialog, each exchange's turns after the user message that opened it."""
    if not result.dialog:
        return list(result.trajectory)
    users = [m for m in result.dialog if m.role == "user"]
    sizes = exchange_sizes(result.trajectory, [m for m in result.dialog if m.role == "agent"])
    entries: list[Entry] = []
    start = 0
    for index, user in enumerate(users):
        end = start + (sizes[index] if index < len(sizes) else 0)
        entries += [UserMessage(user.text, user.turn), *result.trajectory[start:end]]
        start = end
    entries += result.trajectory[start:]  # turns no recorded exchange accounts for (a dialog cut short)
    return entries


def exchange_sizes(turns: list[TurnRecord], replies: list[DialogMessage]) -> list[int]:
    """How many of ``turns`` each exchange took, in order, from the agent messages that close them."""
    sizes, start = [], 0
    for reply in replies:
        end = _exchange_end(turns, start, reply)
        sizes.append(end - start)
        start = end
    return sizes


def _spent(taken: list[TurnRecord]) -> tuple[int, int]:
    """What a reply records its exchange spent: every input token and the output (``simulation._agent_tokens``),
    or, in a result written before cached tokens counted, the uncached input and the output."""
    return sum(t.usage.total_tokens for t in taken), sum(t.input_tokens + t.output_tokens for t in taken)


def _exchange_end(turns: list[TurnRecord], start: int, reply: DialogMessage) -> int:
    """The first end after ``start`` at which the turns since said and spent what ``reply`` records (else all)."""
    for end in range(start + 1, len(turns) + 1):
        taken = turns[start:end]
        said = "\n\n".join(t.text for t in taken if t.text) or NO_TEXT
        if said == reply.text and reply.tokens in _spent(taken):
            return end
    return len(turns)
