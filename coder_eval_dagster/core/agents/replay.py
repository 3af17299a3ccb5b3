"""The `replay` agent: plays a recorded trajectory in the sandbox, with no model call.

Every call really happens (Bash runs, Write writes, Read reads, Edit edits)
and is recorded exactly as a live agent's would be, so every criterion,
limit and early-stop rule can be exercised without an API key. Limits are
honoured between calls (time) and after each turn (budgets); a turn they
cut short keeps the calls that ran but not its text, the final reply a
live agent cut off never gives. A ``user:``
item ends an exchange of a simulated dialog: the replay goes on past it
only when the dialog asks for another exchange (without a dialog, the
replay ends there).
"""

from __future__ import annotations

import os
import secrets
import shlex
import time
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from ..files import MiB, open_beneath, read_capped_fd, write_all
from ..limits import BudgetTracker
from ..models.results import FinalStatus, ToolCallRecord, ToolCallStatus, TurnRecord
from ..models.trajectory import ToolCall, Trajectory, TrajectoryTurn, TurnUsage
from ..resolution import load_trajectory
from ..sandbox.base import Sandbox
from ..sandbox.mocks import agent_command
from .base import OUTPUT_CHARS, AgentInput, AgentOutput, StopReason, TimeLimit, budget_stop_reason, recorded_output

# A Bash call's time limit when the task sets neither turn_timeout nor task_timeout
# (the longest Claude Code's own Bash tool allows).
DEFAULT_CALL_TIMEOUT_S = 600.0


# The file tools are carried out by the harness itself, on the sandbox folder on this machine (as root on CI),
# while the agent's processes may still be changing it: every path is opened by ``open_beneath``, never through a
# link that leaves the sandbox nor one swapped in after a check, and only a regular file is read or written (a FIFO
# or a device is an error at once, never waited on), as the agent's own tool would see it from inside.
EDIT_CAP = 64 * MiB  # what Edit reads of a file (a larger one is an error, not read whole)


def _open(sandbox: Sandbox, params: dict[str, Any], flags: int, make_parents: bool = False) -> int:
    """The call's file: relative to the sandbox, or absolute inside the folder its commands see as theirs
    (``/sandbox/app.py``, as Claude Code writes them); any other path leaves the sandbox (PermissionError)."""
    links_at = PurePosixPath(sandbox.workdir)
    return open_beneath(sandbox.root, str(params["path"]), flags, links_at, make_parents)


def _write(params: dict[str, Any], sandbox: Sandbox) -> tuple[ToolCallStatus, str | None]:
    data = str(params["content"]).encode("utf-8")
    fd = _open(sandbox, params, os.O_WRONLY | os.O_CREAT, make_parents=True)
    try:
        os.ftruncate(fd, 0)  # once it is known to be a regular file (O_TRUNC would act before)
        write_all(fd, data)
    finally:
        os.close(fd)
    return "success", None


def _read(params: dict[str, Any], sandbox: Sandbox) -> tuple[ToolCallStatus, str | None]:
    fd = _open(sandbox, params, os.O_RDONLY)
    try:
        data = read_capped_fd(fd, OUTPUT_CHARS * 4)  # the start only: the output is clipped anyway
    finally:
        os.close(fd)
    return "success", recorded_output(data.decode("utf-8", errors="replace"))


def _edit(params: dict[str, Any], sandbox: Sandbox) -> tuple[ToolCallStatus, str | None]:
    fd = _open(sandbox, params, os.O_RDWR)  # read and written through the one descriptor
    try:
        data = read_capped_fd(fd, EDIT_CAP)
        if len(data) > EDIT_CAP:
            return "error", f"file too large to edit: over {EDIT_CAP} bytes"
        content, old = data.decode("utf-8"), str(params["old"])
        if old not in content:
            return "error", "old string not found"
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        write_all(fd, content.replace(old, str(params["new"]), 1).encode("utf-8"))
    finally:
        os.close(fd)
    return "success", None


FILE_TOOLS: dict[str, Callable[[dict[str, Any], Sandbox], tuple[ToolCallStatus, str | None]]] = {
    "Write": _write,
    "Read": _read,
    "Edit": _edit,
}


# Said in a Bash call's output (its stderr) when the sandbox has no bash (a docker image without one) to run it.
NO_BASH_NOTE = "[coder-eval: no bash in the sandbox: this Bash call ran under /bin/sh]"


def in_bash(command: str) -> str:
    """``command`` as a recorded Bash call runs: under bash, as Claude Code's Bash tool runs it (``set -o pipefail``,
    ``[[ ]]``, ``{a,b}``, ``source``, ``<(...)``), where the sandbox's own ``/bin/sh`` (what ``sandbox.run`` starts,
    with its timeout, process group, environment and capture) finds one on its PATH, before the shims and mock folders
    go first (``agent_command``'s first lines then run in bash); else under that ``/bin/sh``, with ``NO_BASH_NOTE``.
    Both ``exec``: the same process, and neither shell's variable below is exported to the command. The command
    comes in a quoted here-document, as written (quoted, each ``'`` took five bytes: a long heredoc of the agent's
    went past the kernel's 128 KiB for one argument); its end marker is random, so no command line matches it.
    Its stderr goes with its stdout, in the order written, as the Bash tool gives the model one stream."""
    end = f"CODER_EVAL_END_{secrets.token_hex(8)}"
    return (
        f"__coder_eval_command=$(cat <<'{end}'\n{command}\n{end}\nprintf .)\n"  # `.`: $(...) keeps its newlines
        "__coder_eval_command=${__coder_eval_command%?.}\n"  # less the here-document's own last newline too
        "__coder_eval_bash=$(command -v bash)\n"
        'case $__coder_eval_bash in /*) [ -x "$__coder_eval_bash" ] && exec "$__coder_eval_bash" -c '
        '"$__coder_eval_command" 2>&1;; esac\n'
        f"echo {shlex.quote(NO_BASH_NOTE)} >&2\n"
        'exec /bin/sh -c "$__coder_eval_command" 2>&1'
    )


def play_call(call: ToolCall, sandbox: Sandbox, timeout: float) -> tuple[ToolCallStatus, str | None]:
    """Do what the call says; (status, output)."""
    params = call.parameters
    try:
        if call.tool == "Bash":
            done = sandbox.run(in_bash(agent_command(str(params["command"]), sandbox)), timeout)
            output = as_bash_tool_returns(done.stderr + done.stdout)  # stderr: only NO_BASH_NOTE's line, if any
            if done.ok:
                return "success", recorded_output(output or NO_OUTPUT)
            return "error", recorded_output(done.error or _with_exit_code(done.exit_code, output))
        if call.tool in FILE_TOOLS:
            return FILE_TOOLS[call.tool](params, sandbox)
    except (OSError, ValueError) as exc:  # (UnreadableFile, UnicodeDecodeError, a NUL in a path)
        return "error", str(exc)
    return "success", None  # Skill and any other tool: recorded as given


NO_OUTPUT = "(Bash completed with no output)"  # what Claude Code's Bash tool says for a silent command


def as_bash_tool_returns(output: str) -> str:
    """A command's output as Claude Code's Bash tool returns it to the model (measured through its bundled CLI):
    without its leading blank lines and its trailing white space."""
    lines = output.split("\n")
    first = next((index for index, line in enumerate(lines) if line.strip()), len(lines))
    return "\n".join(lines[first:]).rstrip()


def _with_exit_code(code: int | None, output: str) -> str:
    """A failed command's output as Claude Code's Bash tool returns it, its exit code first (a silent ``exit 3``
    would otherwise leave its call's error_message nothing to say); one a signal ended is the shell's 128 + N."""
    shown = 128 - code if code is not None and code < 0 else code
    return f"Exit code {shown}" + (output and f"\n{output}")


class Replay:
    """One play-through; an object so that the limits' bookkeeping stays in one place."""

    def __init__(self, agent_input: AgentInput, trajectory: Trajectory):
        self.input = agent_input
        self.trajectory = trajectory
        self.output = AgentOutput()
        self.budget = BudgetTracker(agent_input.limits)
        # Turns whose cost the recording says a later turn reported (Claude Code's, exported to ATIF: one figure per
        # exchange, on its last turn), that turn not played yet: priced at the end if it never is, as a live agent's.
        self.awaiting_cost: list[TurnRecord] = []
        # turn_timeout bounds one exchange with the agent (the guide's communicate() call), not each of its turns
        self.exchange_started = time.monotonic()

    def time_left(self) -> float | None:
        """Seconds until the exchange or the task times out (None: no limit)."""
        limits = self.input.limits
        candidates = [self.input.seconds_left()]
        if limits.turn_timeout is not None:
            candidates.append(limits.turn_timeout - (time.monotonic() - self.exchange_started))
        known = [c for c in candidates if c is not None]
        return min(known) if known else None

    def timed_out(self) -> bool:
        left = self.time_left()
        if left is None or left > 0:
            return False
        task_left = self.input.seconds_left()
        which: TimeLimit = "task_timeout" if task_left is not None and task_left <= 0 else "turn_timeout"
        seconds = getattr(self.input.limits, which)
        self.stop(which, "TIMEOUT", f"run_limits.{which} of {seconds:g} s reached")
        return True

    def stop(self, reason: StopReason, status: FinalStatus | None, error: str | None) -> None:
        self.output.stop_reason = reason
        self.output.final_status = status
        self.output.error = error

    def play(self) -> AgentOutput:
        index = 0
        for turn in self.trajectory.played:
            if turn.user is not None:  # the end of an exchange: the dialog decides whether another follows
                if self.input.next_message(self.output) is None:
                    return self.conclude()
                self.exchange_started = time.monotonic()
                continue
            index += 1
            if self.input.sandbox.interrupt.is_set():  # no model turn follows an interrupt (nor its cost)
                self.stop("error", None, "the run was interrupted")
                return self.conclude()
            if not self.play_turn(index, turn):
                return self.conclude()
        if self.input.dialog is not None:
            self.input.next_message(self.output)  # the last exchange is complete too
        return self.conclude()

    def conclude(self) -> AgentOutput:
        for turn in self.awaiting_cost:  # cut off before the turn that reported their cost
            turn.cost_source = None
            self.input.price(turn)
        return self.output.conclude(self.budget, None, None, self.input.limits.max_turns)

    def play_turn(self, index: int, turn: TrajectoryTurn) -> bool:
        """Play one agent turn; False when a limit, a budget or the watcher ended the run."""
        limits = self.input.limits
        if limits.max_turns is not None and self.output.exchange_turns >= limits.max_turns:
            self.stop("max_turns", None, None)
            return False
        record = TurnRecord(index=index, started_at=time.time())
        finished = self.play_calls(index, turn, record)
        if finished:
            record.text = turn.text  # a turn cut short never reached its final words, as a live agent's would not
        if turn.usage is not None:
            self.use(record, turn.usage)
        record.ended_at = time.time()
        self.output.open_turn(record)
        stopped = self.output.early_stop_reason or self.output.stop_reason == "max_tool_calls"
        if stopped or self.output.final_status is not None or self.timed_out():
            return False
        breach = self.budget.add(record)
        if breach:
            self.stop(budget_stop_reason(breach), breach, f"{self.budget.breach_message(breach)} after turn {index}")
            return False
        return True

    def use(self, record: TurnRecord, usage: TurnUsage) -> None:
        """The recorded usage and cost on ``record``: a cost is the recorded session's own figure (``reported``, or
        ``priced`` where the recording says its run priced it), unless the run's price file prices the model; a turn
        without one is priced at the run's prices,
        unless the recording says a later turn reported it (``reported`` without a cost: Claude Code's one figure
        per exchange, on its last turn)."""
        for name, value in usage.model_dump().items():
            setattr(record, name, value)
        if self.input.run.prices.wins_over_reported(self.input.config.model):  # the price file's price wins
            self.input.price(record)
        elif record.cost_usd is not None:
            record.cost_source = record.cost_source or "reported"
            if record.cost_source == "reported":
                self.awaiting_cost.clear()  # its figure covers the turns before it that had none
        elif record.cost_source == "reported":
            self.awaiting_cost.append(record)
        else:
            self.input.price(record)

    def play_calls(self, index: int, turn: TrajectoryTurn, record: TurnRecord) -> bool:
        """Play the turn's calls into ``record``; False when a time limit, the tool-call cap or the watcher cut the
        turn short (the call that was running when time ran out stays, with its error)."""
        for seq, call in enumerate(turn.calls, start=1):
            if self.timed_out():
                return False
            if self.input.calls_exhausted(self.output.calls_made + len(record.calls)):
                self.output.stop_at_tool_cap(self.input.limits.max_tool_calls)
                return False
            record.calls.append(self.record_call(index, seq, call))
            watcher = self.input.watcher
            reason = watcher.observe(record.calls[-1]) if watcher else None
            if reason:
                self.output.early_stop(reason, self.output.exchange_turns + 1, self.input.limits.max_turns)
                return False
        return not self.timed_out()

    def refusal(self, call: ToolCall) -> str | None:
        """Why the agent's tool lists keep it from making ``call`` (None: it may), as a live agent's CLI refuses a
        tool it was not given: the recorded call fails and nothing runs."""
        config = self.input.config
        if call.tool in config.disallowed_tools:  # a rule such as Bash(rm:*) denies some calls: not judged here
            return f"{call.tool} is not available: agent.disallowed_tools names it"
        offered = {rule.split("(", 1)[0] for rule in config.allowed_tools or []}  # Bash(git:*) offers Bash
        if config.allowed_tools is not None and call.tool not in offered:
            return f"{call.tool} is not available: agent.allowed_tools does not name it"
        return None

    def record_call(self, turn: int, seq: int, call: ToolCall) -> ToolCallRecord:
        left = self.time_left()
        timeout = left if left is not None else DEFAULT_CALL_TIMEOUT_S
        start, wall = time.perf_counter(), time.time()
        refused = self.refusal(call)
        status, output = ("error", refused) if refused else play_call(call, self.input.sandbox, timeout)
        duration = round((time.perf_counter() - start) * 1000, 1)
        return ToolCallRecord(
            turn=turn,
            seq=seq,
            tool=call.tool,
            parameters=call.parameters,
            status=status,
            duration_ms=duration,
            output=output,
            started_at=wall,
        )


async def run(agent_input: AgentInput) -> AgentOutput:
    config = agent_input.config
    path = agent_input.task_dir / str(config.trajectory)
    return Replay(agent_input, load_trajectory(path, agent_input.row)).play()
