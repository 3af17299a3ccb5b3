"""One evaluation (row-task x variant x replicate) as a sequence of stages, declared once.

``STAGES`` is the whole life of an evaluation; the two partitioned assets
each run one phase of it per evaluation (``run_phase``), every evaluation
on its own thread, and ``evaluate`` runs both phases in this thread for
notebooks and tests: the same path production takes. Each stage catches
its own failures, so one broken row-task ends as ERROR and never stops the
others; each stage's time is recorded, and the
state is saved once the sandbox phase is complete (the checkpoint a resumed
run continues from: an evaluation cut short in that phase is redone whole):

    <run>/<variant>/<task_id>/<NN>/sandbox/          the final sandbox
    <run>/<variant>/<task_id>/<NN>/run_state.json    after the sandbox phase
    <run>/<variant>/<task_id>/<NN>/task.json, task.html   the final result
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import threading
import time
import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

from .agents import runner
from .agents.base import AgentInput, AgentOutput
from .agents.registry import AGENT_MODULES
from .budget import RunBudget, evaluation_key
from .check_context import CheckContext
from .criteria.outcome import scrub
from .criteria.reuse import stored_verdicts
from .early_stop import Watcher
from .error_categories import error_details
from .files import is_real_folder
from .layout import (
    CHECKPOINT_FILE,
    PREVIOUS_RESULT_FILE,
    REPORT_FILE,
    RESULT_FILE,
    SANDBOX_DIR,
    evaluation_folder,
    is_replicate_folder,
    load_result,
    replicate_name,
    write_atomically,
)
from .limits import BudgetTracker, soft_budget_warnings, within_expected_turns
from .models.agent import OPENCODE_ONLY, THINKING_TYPES, AgentConfig
from .models.commands import HookCommand
from .models.limits import RunLimits
from .models.results import (
    CommandRun,
    CriterionResult,
    DialogMessage,
    EarlyStopInfo,
    EvaluationResult,
    FinalStatus,
    HookRun,
    RefusedConnection,
    TaskConfig,
    TokenUsage,
    TurnRecord,
)
from .models.task import Task
from .problems import InvalidInput
from .reference import reference_text, staged_reference, staged_task_dir, stages_folders
from .reports.shown_text import one_line
from .resolution import RowTask, load_trajectory
from .run_context import NOT_RUN_STATUS, RunContext
from .sandbox import Sandbox, TemplateError, open_sandbox
from .sandbox.containment import release, release_if_idle
from .sandbox.egress import refused_in
from .sandbox.engine import EngineError
from .sandbox.lease import SandboxLease
from .sandbox.process import Interrupt
from .scoring import (
    TurnCheck,
    all_passed,
    armed_gate,
    criteria_pass_now,
    score_criteria,
    warn_once,
    weighted_score,
)
from .secrets import redact, secret_values
from .simulation import Dialog, DialogNotOpened, simulated_user
from .trees import drop_privileges
from .valid_utf8 import valid_json

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Evaluation:
    """The moving state of one evaluation between stages, and the run context it runs in."""

    run_id: str
    run_dir: Path
    row_task: RowTask
    replicate: int
    context: RunContext
    result: EvaluationResult
    cache_dir: Path | None = None
    sandbox_ready: bool = False
    not_run: bool = False  # the run-wide budget was spent before it would start: nothing is run or written

    @property
    def key(self) -> str:
        return evaluation_key(self.row_task.variant_id, self.row_task.task_id, self.replicate)

    @cached_property
    def budget(self) -> RunBudget | None:
        """Asked before and after every step and every spend: looked up (an absolute path, a lock) once."""
        return self.context.budget(self.run_dir)

    def skipped_by_budget(self) -> bool:
        """Whether the run's budget kept this evaluation from starting (here, or in another process)."""
        budget = self.budget
        self.not_run = self.not_run or (budget is not None and budget.skipped(self.key))
        return self.not_run

    # An earlier scoring's judge verdicts its judges may reuse (remember_verdicts); empty: none, or --no-reuse.
    verdicts: dict[int, CriterionResult] = field(default_factory=dict)
    # Under check_criteria: every_turn, the last exchange's judge verdicts: as coder_eval judges that exchange once,
    # the final scoring reuses a verdict whose judge would be shown the same (``both`` judges again).
    turn_verdicts: dict[int, CriterionResult] = field(default_factory=dict)

    @property
    def task(self) -> Task:
        return self.row_task.task

    @cached_property
    def folder(self) -> Path:
        """Asked about 15 times an evaluation (each sandbox, checkpoint, report and hand-over): made once."""
        return evaluation_folder(self.run_dir, self.row_task.variant_id, self.row_task.task_id, self.replicate)

    @cached_property
    def sandbox(self) -> Sandbox:
        """The evaluation's one sandbox driver, stopped by the run's interrupt."""
        row_task, replicate = self.row_task, str(self.replicate)
        labels = {"run": self.run_id, "task": row_task.task_id, "variant": row_task.variant_id, "replicate": replicate}
        return open_sandbox(
            self.folder / SANDBOX_DIR, self.task.sandbox, self.cache_dir, labels, self.context.interrupt
        )

    @property
    def ended(self) -> bool:
        """True once a stage has ended the evaluation as ERROR: later stages skip it.

        A TIMEOUT or a budget breach also stops the agent, but the criteria
        still run on what it left (the status stays).
        """
        return self.result.error is not None and self.result.final_status == "ERROR"

    @property
    def name(self) -> str:
        """How the log names the evaluation: ``variant/task_id#NN``."""
        return f"{self.row_task.variant_id}/{self.row_task.task_id}#{replicate_name(self.replicate)}"

    def fail(self, status: FinalStatus, reason: str, where: str | None = None) -> None:
        """End the evaluation ``status`` for ``reason``, at the stage ``where`` (its error category's source)."""
        self.result.final_status = status
        self.result.success = False
        self.result.error = redact(reason)
        log.info("%s: %s: %s", self.name, status, one_line(self.result.error))
        self.result.error_details = error_details(status, self.result.error, where)


def new_evaluation(
    run_id: str,
    run_dir: Path,
    row_task: RowTask,
    replicate: int,
    cache: Path | None,
    context: RunContext | None = None,
) -> Evaluation:
    """An evaluation about to start; alone (a notebook, a test) it gets a context of this process's own."""
    task = row_task.task
    result = EvaluationResult(
        run_id=run_id,
        task_id=row_task.task_id,
        base_task_id=row_task.base_task_id,
        row_id=row_task.row_id,
        variant_id=row_task.variant_id,
        replicate=replicate,
        description=task.description,
        agent_type=task.agent.resolved_type,
        model=None if task.agent.resolved_type == "none" else task.agent.model,  # the agent's own, once it reports it
        agent_model=task.agent.model,
        prompt=task.initial_prompt,
        tags=list(task.tags),
        started_at=utc_now(),
        expected_turns=task.run_limits.expected_turns,
        batch=row_task.batch,
    )
    evaluation = Evaluation(run_id, run_dir, row_task, replicate, context or RunContext.create(), result, cache)
    result.trace_id = evaluation.context.telemetry.trace_id(evaluation)
    return evaluation


StageStep = Callable[[Evaluation], None]
GuardedStep = Callable[[Evaluation], Evaluation]


def guarded(stage_name: str) -> Callable[[StageStep], GuardedStep]:
    """Turn an unexpected exception in a stage into an ERROR of that evaluation only."""

    def decorate(stage: StageStep) -> GuardedStep:
        def run(evaluation: Evaluation) -> Evaluation:
            try:
                stage(evaluation)
            except Exception as exc:  # the result says why; the traceback is for -v (a user's terminal shows none)
                log.debug("%s failed for %s:\n%s", stage_name, evaluation.row_task.task_id, traceback.format_exc())
                evaluation.fail("ERROR", f"{stage_name} failed: {type(exc).__name__}: {exc}", stage_name)
            return evaluation

        run.__name__ = stage.__name__
        run.__doc__ = stage.__doc__
        return run

    return decorate


# ----------------------------------------------------------------------------- stages


@guarded("sandbox setup")
def setup_sandbox(evaluation: Evaluation) -> None:
    """A fresh folder with the template sources applied and the venv made."""
    try:
        evaluation.sandbox.create(evaluation.row_task.task_dir)
    except (TemplateError, EngineError) as exc:
        evaluation.fail("ERROR", f"sandbox setup failed: {exc}", "sandbox setup")
        return
    evaluation.sandbox_ready = True


def run_hooks(
    evaluation: Evaluation, commands: list[HookCommand], kind: Literal["pre_run", "post_run"]
) -> list[HookRun]:
    """Run commands in order; in ``pre_run``, a failing required one skips the rest and ends the evaluation."""
    runs: list[HookRun] = []
    sandbox = evaluation.sandbox
    for index, command in enumerate(commands):
        done = sandbox.run(command.command, command.timeout)
        log_command(evaluation, f"{kind} command {index + 1}", done)
        runs.append(HookRun(**done.model_dump(), fail_on_error=command.fail_on_error))
        if kind == "pre_run" and command.fail_on_error and not done.ok:
            runs.extend(
                HookRun(command=c.command, fail_on_error=c.fail_on_error, skipped=True) for c in commands[index + 1 :]
            )
            why = done.error or f"exit code {done.exit_code}"
            refused = refused_in(done.stderr)  # a package install a coder_eval task makes, on a confined network
            hint = f"; the network policy refused {', '.join(refused)} (sandbox.network.allow)" if refused else ""
            evaluation.fail("ERROR", f"pre_run command {index + 1} failed ({why}): {command.command}{hint}", "pre_run")
            break
    return runs


def log_command(evaluation: Evaluation, what: str, done: CommandRun) -> None:
    """A command's end in the log (``-v``, ``--log-file``: coder_eval's task log), its stderr when it failed."""
    if not log.isEnabledFor(logging.INFO):
        return
    ended = done.error or f"exit code {done.exit_code}"
    log.info("%s: %s: %s (%.2f s): %s", evaluation.name, what, ended, done.duration_s, one_line(done.command))
    if not done.ok and done.stderr.strip():  # on its line: the sandbox's text must not forge the log's own lines
        log.info("%s: %s stderr: %s", evaluation.name, what, one_line(done.stderr.strip()[-2000:]))


@guarded("pre_run")
def run_pre_run(evaluation: Evaluation) -> None:
    if evaluation.ended or not evaluation.task.pre_run:
        return
    evaluation.result.pre_run_results = run_hooks(evaluation, evaluation.task.pre_run, "pre_run")
    evaluation.sandbox.mark_services()


def system_prompt_semantics(agent: AgentConfig) -> str:
    """coder_eval's run marker: ``replace`` when the task's prompt is the agent's whole system prompt, else ``append``
    (the agent's own prompt with the task's on top, or alone); a reader takes a result without it for an older
    regime's, not comparable."""
    replaced = agent.system_prompt_mode == "replace" and agent.system_prompt is not None
    return "replace" if replaced else "append"


@guarded("agent")
def run_agent(evaluation: Evaluation) -> None:
    """The agent loop (a simulated dialog when enabled). Agentless tasks (``type: none``) run no agent."""
    kind = evaluation.task.agent.resolved_type
    evaluation.result.environment_info.setdefault("system_prompt_semantics", "unknown")  # as coder_eval: no prompt
    if evaluation.ended:
        return
    evaluation.result.agent_ran = True
    if kind == "none":
        return
    agent = runner(kind)
    assert agent is not None
    task = evaluation.task
    evaluation.result.environment_info["system_prompt_semantics"] = system_prompt_semantics(task.agent)
    dialog = start_dialog(evaluation) if task.simulated else None
    prompt = task.initial_prompt
    if dialog is not None:
        prompt = open_dialog(evaluation, dialog)
        if prompt is None:
            return
    lease = None if kind in AGENT_MODULES else SandboxLease(evaluation.sandbox)  # a package's agent type
    agent_input = AgentInput(
        lease or evaluation.sandbox,
        prompt,
        task.agent,
        task.run_limits,
        evaluation.row_task.task_dir,
        evaluation.row_task.row,
        Watcher.for_task(task),
        dialog=dialog.after_exchange if dialog else None,
        run=evaluation.context,
        trace_id=evaluation.result.trace_id,
    )
    interrupt, end_commands = evaluation.context.interrupt, evaluation.sandbox.end_processes
    try:
        output = conversed(supervised(agent(agent_input), task.run_limits, interrupt, end_commands))
    finally:  # (an agent that raised: its threads left behind lose the sandbox too)
        if lease is not None:
            lease.end()
    if lease is not None:  # held to what the built-ins keep themselves
        output = checked_limits(output, task.run_limits)
    record_agent_output(evaluation, output)
    if dialog is not None:
        dialog.finish(output)
        record_dialog(evaluation, dialog)


AGENT_GRACE_S = 30.0  # past run_limits.task_timeout, the harness stops an agent that did not stop itself
SUPERVISION_S = 0.2  # how often it looks
AGENT_THREAD_WAIT_S = 5.0  # once the conversation is over, how long the threads of its blocking calls are waited for


class AgentThreads(ThreadPoolExecutor):
    """The executor of an agent's blocking calls (``asyncio.to_thread``): each call on a daemon thread of its own,
    waited for at the end of the conversation ``AGENT_THREAD_WAIT_S`` at most, then ``left``. asyncio.run's own
    pool waited for a call that never returns (a ``time.sleep`` the harness has no command to end for) for good,
    and the interpreter's exit joins a pool's threads. A ThreadPoolExecutor, as asyncio takes no other kind; its
    pool never starts a thread."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.running: set[threading.Thread] = set()
        self.left: list[threading.Thread] = []

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()

        def call() -> None:
            try:
                if future.set_running_or_notify_cancel():
                    future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # the awaiting coroutine's to raise
                future.set_exception(exc)
            finally:
                self.running.discard(threading.current_thread())

        thread = threading.Thread(target=call, name="coder-eval-agent-call", daemon=True)
        self.running.add(thread)
        thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """(asyncio.run waits, then its loop's close calls this again without waiting.)"""
        ends = time.monotonic() + (AGENT_THREAD_WAIT_S if wait else 0.0)
        running = list(self.running)  # (one copy: a thread leaves the set as it ends)
        for thread in running:
            thread.join(max(0.0, ends - time.monotonic()))
        self.left = [thread for thread in running if thread.is_alive()]


def conversed(conversation: Awaitable[AgentOutput]) -> AgentOutput:
    """The agent's supervised conversation run to its end on an event loop of its own; a blocking call of the
    agent's still running a bounded wait after it is left behind, with a warning."""
    threads = AgentThreads()

    async def on_agent_threads() -> AgentOutput:
        asyncio.get_running_loop().set_default_executor(threads)
        return await conversation

    output = asyncio.run(on_agent_threads())
    if threads.left:
        output.warnings.append(
            f"{len(threads.left)} thread(s) of the agent's blocking calls still ran {AGENT_THREAD_WAIT_S:g} s after"
            " its conversation ended: left running, unheard"
        )
    return output


async def supervised(
    conversation: Awaitable[AgentOutput],
    limits: RunLimits,
    interrupt: Interrupt,
    end_commands: Callable[[], None] | None = None,
) -> AgentOutput:
    """The agent's whole conversation, cancelled by the harness when the agent does not stop itself: the run
    interrupted, or past its task_timeout (and a grace). The built-in agents stop first; an agent type a
    package adds may not (one that ignored its limits held its run, and Ctrl-C, for good). Past its time,
    ``end_commands`` ends the evaluation's running commands as an interrupt ends the run's: a call blocked in
    one (``sandbox.run`` in a thread) outlived the cancel, and the command wrote on into the sandbox."""
    running = asyncio.ensure_future(conversation)
    deadline = None if limits.task_timeout is None else time.monotonic() + limits.task_timeout + AGENT_GRACE_S
    while not running.done():
        await asyncio.wait({running}, timeout=SUPERVISION_S)
        if running.done():
            break
        timed_out = deadline is not None and time.monotonic() > deadline
        if interrupt.is_set() or timed_out:
            running.cancel()
            if timed_out and end_commands is not None:
                end_commands()
            await asyncio.wait({running}, timeout=AGENT_GRACE_S)  # its own clean-up, bounded
            if interrupt.is_set():
                return AgentOutput(stop_reason="error", error="the run was interrupted")
            limit = f"run_limits.task_timeout ({limits.task_timeout:g} s)"
            why = f"the agent did not stop at {limit}: coder-eval stopped it"
            return AgentOutput(stop_reason="task_timeout", final_status="TIMEOUT", error=why)
    return running.result()


def checked_limits(output: AgentOutput, limits: RunLimits) -> AgentOutput:
    """An agent's output held against the turn, tool-call and budget caps it should have kept: one past them is
    recorded as the run limits say, with a warning that the agent did not stop itself."""
    calls, cap = output.calls_made, limits.max_tool_calls  # (across the evaluation, every exchange)
    if cap is not None and calls > cap and output.stop_reason != "max_tool_calls":  # (that stop: its own warning)
        output.warnings.append(f"run_limits.max_tool_calls ({cap}) reached: the agent made {calls} tool calls, past it")
    turns = output.exchange_turns  # (a dialog's last exchange: each one is capped on its own)
    if limits.max_turns is not None and turns > limits.max_turns and output.stop_reason != "max_turns":
        output.stop_reason = "max_turns"
        output.warnings.append(f"the agent took {turns} turns, past run_limits.max_turns ({limits.max_turns})")
    if output.final_status is None:
        budget = BudgetTracker(limits)
        breach = next((b for b in map(budget.add, output.turns) if b is not None), None)
        if breach is not None:
            output.final_status, output.error = breach, budget.breach_message(breach)
            output.warnings.append("the agent ran past its run_limits budget without stopping itself")
    return output


def open_dialog(evaluation: Evaluation, dialog: Dialog) -> str | None:
    """The dialog's opening message, the evaluation's prompt from then on (the simulated user's when the task has
    none); None when the simulated user gave none: the evaluation ends as ERROR."""
    try:
        evaluation.result.prompt = dialog.open()
    except DialogNotOpened as exc:
        record_dialog(evaluation, dialog)
        evaluation.fail("ERROR", str(exc), "agent")
        return None
    return evaluation.result.prompt


def start_dialog(evaluation: Evaluation) -> Dialog:
    """The dialog of a simulated task: its user (recorded for a replay) and its per-turn criteria check."""
    task, row_task = evaluation.task, evaluation.row_task
    recorded = None
    if task.agent.resolved_type == "replay":
        recorded = load_trajectory(row_task.task_dir / str(task.agent.trajectory), row_task.row).user_messages
    assert task.simulation is not None

    def check(turns: list[TurnRecord], messages: list[DialogMessage]) -> TurnCheck:
        ctx = CheckContext(
            evaluation.sandbox,
            row_task.task_dir,
            turns,
            reference_text(task, row_task.task_dir),
            folder=evaluation.folder,  # its judges' transcripts: a verdict the final scoring reuses names one
            prompt=evaluation.result.prompt,
            dialog=[(m.role, m.text) for m in messages],
            exchange_start=latest_exchange_start(messages),
            agent_ignore_patterns=task.agent.ignore_patterns,
            run=evaluation.context,
        )
        return criteria_pass_now(task.success_criteria, ctx)

    return Dialog(
        task.simulation,
        simulated_user(task, recorded, evaluation.context),
        task.initial_prompt,
        check,
        task.run_limits.max_turns,
    )


def latest_exchange_start(messages: list[DialogMessage]) -> int:
    """Where the dialog's latest exchange begins in the trajectory (0, all of it, for a result that did not
    record it)."""
    starts = [m.exchange_start for m in messages if m.role == "agent" and m.exchange_start is not None]
    return starts[-1] if starts else 0


def record_dialog(evaluation: Evaluation, dialog: Dialog) -> None:
    """The dialog, its outcome and the simulator's spend into the result."""
    result = evaluation.result
    result.simulation = dialog.info(evaluation.replicate)
    result.simulator_token_usage = TokenUsage.summed(dialog.simulator_usages)
    result.criteria_check_token_usage = TokenUsage.summed(dialog.check_usages)
    result.max_turns_exhausted = result.max_turns_exhausted or dialog.agent_turns_spent
    if dialog.settings.check_criteria == "every_turn":
        evaluation.turn_verdicts = stored_verdicts(dialog.last_check)
    result.dialog = [  # a copy: a simulator call cut off by a timeout may still return late
        message.model_copy(update={"text": redact(message.text)}) for message in dialog.messages
    ]
    result.warnings.extend(dialog.warnings)


def record_agent_output(evaluation: Evaluation, output: AgentOutput) -> None:
    """Telemetry, usage and the stop into the result."""
    result = evaluation.result
    result.model = output.model or result.model  # the model that answered; the configured one if none was named
    result.trajectory = redacted_turns(output.turns)
    result.turns = len(output.turns)
    result.visible_turns = output.visible_turns
    result.total_token_usage = TokenUsage.of_turns(output.turns)
    result.max_turns_exhausted = output.stop_reason == "max_turns"
    result.warnings.extend(output.warnings)
    result.warnings.extend(soft_budget_warnings(evaluation.task.run_limits, output.visible_turns, output.calls_made))
    result.stopped_early = output.early_stop_reason is not None
    result.early_stop_reason = output.early_stop_reason
    result.turns_remaining_at_stop = output.turns_remaining_at_stop
    if output.stop_reason == "error":
        evaluation.fail("ERROR", output.error or "the agent failed", "agent")
    elif output.final_status is not None:
        result.final_status = output.final_status
        result.error = output.error


def redacted_turns(turns: list[TurnRecord]) -> list[TurnRecord]:
    """The agent's turns with every credential value replaced (a model may echo a key into its text or a tool's
    input; commands' output is redacted where it is read)."""
    values = secret_values()
    if not values:
        return turns
    for turn in turns:
        turn.text = redact(turn.text, values) if turn.text else turn.text
        if turn.result_summary is not None:
            turn.result_summary = scrub(turn.result_summary, None)  # (every string in it: scrub redacts)
        for call in turn.calls:
            call.parameters = scrub(call.parameters, None)
            call.output = redact(call.output, values) if call.output else call.output
    return turns


def save_state(evaluation: Evaluation) -> Evaluation:
    """Persist what the sandbox stages produced, for the scoring stage (possibly another run)."""
    evaluation.folder.mkdir(parents=True, exist_ok=True)
    evaluation.result, text = valid_json(evaluation.result, indent=2)
    write_atomically(evaluation.folder / CHECKPOINT_FILE, text)
    return evaluation


# ----------------------------------------------------------------------------- scoring


@guarded("criteria")
def score(evaluation: Evaluation) -> None:
    """Check every criterion against the preserved sandbox and trajectory (the reference folder and the task's
    staged meanwhile)."""
    result = evaluation.result
    result.environment_info["judge_transport"] = evaluation.context.route.judge_transport
    if evaluation.ended:
        return
    task, task_dir = evaluation.task, evaluation.row_task.task_dir
    folder, sandbox = evaluation.folder, evaluation.sandbox
    if stages_folders(task):  # a process left from an earlier stage would see the copies (and could edit them)
        sandbox.end_processes()
    else:  # an agent's daemon could trace the criteria's commands; pre_run's services stay for them
        warn_once(result.warnings, sandbox.end_leftovers())
    with (
        staged_reference(task, task_dir, folder, sandbox) as reference,
        staged_task_dir(task, task_dir, folder, sandbox) as task_copy,
    ):
        ctx = CheckContext(
            sandbox,
            task_dir,
            None if task.agent.resolved_type == "none" else result.trajectory,
            reference_text(task, task_dir),
            reference_dir=reference.folder if reference else None,
            reference_seen=reference.seen if reference else None,
            task_dir_seen=task_copy.seen if task_copy else None,
            task_dir_refused=task_copy.refused if task_copy else None,
            folder=evaluation.folder,
            prompt=evaluation.result.prompt,
            dialog=[(m.role, m.text) for m in result.dialog] if result.simulation else None,
            exchange_start=latest_exchange_start(result.dialog) if result.simulation else 0,
            verdicts=evaluation.verdicts,
            agent_ignore_patterns=task.agent.ignore_patterns,
            warnings=result.warnings,
            run=evaluation.context,
        )
        result.criteria = score_criteria(task.success_criteria, ctx, kept=result.criteria)


def decide(result: EvaluationResult, task: Task) -> None:
    """Weighted score, success and final status from the criteria (an ended run keeps its status).

    A run the early-stop watcher cut short gates on its armed criteria only
    (weighted, each converted to pass/fail, against stop_early_gate_threshold);
    the unarmed ones are advisory. A run that ended naturally gates on all.
    """
    armed = {i for i, c in enumerate(task.success_criteria) if getattr(c, "stop_early", None) is not None}
    for criterion in result.criteria:
        criterion.advisory = result.stopped_early and criterion.index not in armed
    result.weighted_score = weighted_score(result.criteria) if result.criteria else 0.0
    if result.error is None:
        passed = (
            armed_gate(result.criteria, task.run_limits.stop_early_gate_threshold)
            if result.stopped_early
            else all_passed(result.criteria)
        )
        # a failure after the last allowed turn is filed apart, as coder_eval files it (still among the failed)
        failed: FinalStatus = "MAX_TURNS_EXHAUSTED" if result.max_turns_exhausted else "FAILURE"
        result.final_status = "SUCCESS" if passed else failed
    result.success = result.final_status == "SUCCESS"
    if result.error_details is None:  # a timeout or a budget the agent ran into (an ERROR said its own)
        result.error_details = error_details(result.final_status, result.error, "agent")
    expected = result.expected_turns
    result.within_expected_turns = (
        None if expected is None else result.success and within_expected_turns(result.visible_turns, expected)
    )
    result.early_stop = early_stop_info(result, armed, task.run_limits.stop_early_gate_threshold)


def early_stop_info(result: EvaluationResult, armed: set[int], threshold: float) -> EarlyStopInfo | None:
    """The schema's record of an early stop: the armed criterion that decided it, where and when."""
    if not result.stopped_early or result.early_stop_reason is None:
        return None
    armed_results = [c for c in result.criteria if c.index in armed]
    decided = [c for c in armed_results if c.passed == (result.early_stop_reason == "criterion_passed")]
    deciding = (decided or armed_results or result.criteria)[0]
    calls = sum(len(turn.calls) for turn in result.trajectory)
    return EarlyStopInfo(
        reason=result.early_stop_reason,
        deciding_criterion_type=deciding.type,
        deciding_criterion_description=deciding.description,
        armed_criteria=[f"{c.type}: {c.description}" for c in armed_results],
        sdk_turn_index=len(result.trajectory),  # turns begun by the stop, as the schema counts them
        tool_call_index=max(calls, 1),
        elapsed_seconds=result.stage_durations.get("agent", 0.0),
        turns_remaining_at_stop=result.turns_remaining_at_stop,
        gate_threshold=threshold,
    )


@guarded("post_run")
def run_post_run(evaluation: Evaluation) -> None:
    """Informational commands after the criteria; they never change the verdict."""
    if evaluation.sandbox_ready and evaluation.task.post_run:
        evaluation.result.post_run_results = run_hooks(evaluation, evaluation.task.post_run, "post_run")


def end_processes(evaluation: Evaluation) -> None:
    """Stop everything the evaluation started, wherever it started it, and release its sandbox."""
    release(evaluation.folder)
    evaluation.sandbox.close()


@guarded("decide")
def decide_stage(evaluation: Evaluation) -> None:
    decide(evaluation.result, evaluation.task)


def finish(evaluation: Evaluation) -> None:
    """Stamp the end, write task.json and task.html.

    A failure here (a report bug, a full disk) is this evaluation's ERROR,
    never the step's: its result is written again with that error if it can be.
    """
    try:
        write_result(evaluation)
    except Exception as exc:
        warn_one_line(f"finish failed for {evaluation.name}", exc)
        evaluation.fail("ERROR", f"finish failed: {type(exc).__name__}: {exc}")
        try:
            write_atomically(evaluation.folder / RESULT_FILE, evaluation.result.model_dump_json(indent=2))
        except Exception as again:  # the run's summary finds no task.json and refuses the run as incomplete
            warn_one_line(f"no {RESULT_FILE} for {evaluation.name}", again)


def warn_one_line(what: str, exc: Exception) -> None:
    """What failed and why on one line at WARNING (the terminal); its traceback at DEBUG (``-v``)."""
    log.warning("%s: %s: %s", what, type(exc).__name__, exc)
    log.debug("%s:\n%s", what, traceback.format_exc())


def write_result(evaluation: Evaluation) -> None:
    from .reports.task_html import render_task_html

    end_processes(evaluation)
    keep_to_its_user(evaluation.folder / SANDBOX_DIR)  # nothing runs there now to open it again
    open_like_its_run(evaluation.folder)
    if evaluation.result.rescored_at is None or evaluation.result.finished_at is None:
        evaluation.result.finished_at = utc_now()  # a rescore keeps when the evaluation itself ended
    evaluation.result.task_config = task_config(evaluation.row_task)
    evaluation.result.sandbox_path = kept_sandbox(evaluation.folder)
    evaluation.result, text = valid_json(evaluation.result, indent=2)
    evaluation.folder.mkdir(parents=True, exist_ok=True)
    write_atomically(evaluation.folder / RESULT_FILE, text)
    evaluation.context.remember_result(evaluation.folder / RESULT_FILE, evaluation.result)
    write_atomically(evaluation.folder / REPORT_FILE, render_task_html(evaluation.result, evaluation.folder))


def keep_to_its_user(sandbox: Path) -> None:
    """The preserved sandbox with no setuid or setgid bit, no file capability, and (where the harness's user owns
    it: the tempdir driver's) private to that user: what the agent made there is its to run from the host, never
    another user's, whatever the walk cannot reach (a path past PATH_MAX)."""
    if not is_real_folder(sandbox):  # none kept (an evaluation that never made it), or a link a run folder holds
        return
    drop_privileges(sandbox)
    with contextlib.suppress(OSError):
        if os.geteuid() == 0 and sandbox.lstat().st_uid != 0:  # a container's user's: a host account may share its
            os.chown(sandbox, 0, 0, follow_symlinks=False)  # uid (a rescore's container hands it back)
        if sandbox.lstat().st_uid == os.geteuid():
            os.chmod(sandbox, 0o700)  # a folder (above): Linux has no chmod of a link itself


def open_like_its_run(folder: Path) -> None:
    """The evaluation's folder, private while its sandbox was made and used (``TempdirSandbox.create``), as readable
    as the folder holding it now that nothing in it runs with the agent's privileges; never writable by others
    (under /tmp that folder is 1777)."""
    if is_replicate_folder(folder):  # (`evaluate --run-dir`'s folder is the user's, and keeps its mode)
        with contextlib.suppress(OSError):  # (not there: an evaluation that never made its sandbox)
            os.chmod(folder, stat.S_IMODE(folder.parent.stat().st_mode) & 0o755)


def kept_sandbox(folder: Path) -> str | None:
    """The preserved sandbox's path as coder_eval records it (``sandbox_path``: as the run named its folder, None
    when none was kept), where its ``evaluate <NN folder>`` finds the workspace to re-grade."""
    sandbox = folder / SANDBOX_DIR
    return str(sandbox) if sandbox.is_dir() else None


# What coder_eval's TaskDefinition (its release) refuses, left out of the recorded config: its `evaluate <NN folder>`
# rebuilds the task from that config, and one it refuses it replaces by the task file, without the row's values.
# The task's file (source_yaml) still says them.
UNKNOWN_TO_CODER_EVAL: dict[str, Any] = {
    "sandbox": {"image": True, "network": True},  # sandbox.image is in docker.image too
    "run_limits": {"max_tool_calls", "expected_tool_calls"},
    "success_criteria": {"__all__": {"exact_positional"}},
    "post_run": {"__all__": {"fail_on_error"}},
    "reference": {"file", "code"},  # its release takes a directory only
    "dataset": {"split_field"},
    "simulation": {"parallel_trials"},
}
# The agent fields coder_eval's config of some agent types knows (those of its BaseAgentConfig, every type's).
AGENT_FIELD_TYPES: dict[str, tuple[str, ...]] = {
    "sdk_options": ("claude-code", "delegate"),
    **dict.fromkeys(("claude_settings", "system_prompt_mode", "setting_sources"), ("claude-code",)),
    **dict.fromkeys(OPENCODE_ONLY, ("opencode",)),
    "thinking_level": THINKING_TYPES,
    "trajectory": (),
}


def task_config(row_task: RowTask) -> TaskConfig:
    """The task as it ran, and its file; an inline reference solution is in neither (nothing persisted holds it)."""
    task = row_task.task
    inline = task.reference is not None and task.reference.code is not None
    resolved = recorded_task(task)
    if row_task.row_id is not None:  # a dataset's row, as coder_eval records it: its ids, the dataset consumed
        resolved.update(task_id=row_task.task_id, row_id=row_task.row_id, suite_id=row_task.base_task_id, dataset=None)
    return TaskConfig(
        resolved=resolved,
        source_yaml="" if inline else _task_file_text(row_task),
        source_file=str(row_task.source),
    )


def _task_file_text(row_task: RowTask) -> str:
    """The task file as the run's resolution read it; a snapshot written before it kept the text reads the file
    now ("" when it is gone)."""
    if row_task.source_text is not None:
        return row_task.source_text
    return row_task.task_file.read_text(encoding="utf-8") if row_task.task_file.is_file() else ""


def recorded_task(task: Task) -> dict[str, Any]:
    """The task as coder_eval's TaskDefinition loads it: what its file and resolution set (coder_eval's defaults
    fill the rest, as they do from the file), without what coder_eval does not know; the agent with its type."""
    resolved = task.model_dump(mode="json", exclude_unset=True, exclude=UNKNOWN_TO_CODER_EVAL)
    kind = task.agent.resolved_type
    resolved["agent"] = {
        name: value
        for name, value in {**resolved.get("agent", {}), "type": kind}.items()
        if kind in AGENT_FIELD_TYPES.get(name, (kind,))
    }
    docker = resolved.get("sandbox", {}).get("docker", {})
    if isinstance(docker.get("network"), dict):  # a policy block is ours: coder_eval's is a docker network's name
        del docker["network"]
    if "reference" in resolved and not resolved["reference"]:  # a file or code: no directory to name
        del resolved["reference"]
    return resolved


# ----------------------------------------------------------------------------- the sequence

Phase = Literal["sandbox", "scoring", "rescore"]


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Evaluation], object]
    phases: tuple[Phase, ...]
    timed: bool = True  # counted in the evaluation's own duration


STAGES: tuple[Stage, ...] = (
    Stage("setup", setup_sandbox, ("sandbox",)),
    Stage("pre_run", run_pre_run, ("sandbox",)),
    Stage("agent", run_agent, ("sandbox",)),
    Stage("score", score, ("scoring", "rescore")),
    Stage("post_run", run_post_run, ("scoring",)),
    Stage("decide", decide_stage, ("scoring", "rescore"), timed=False),
    Stage("finish", finish, ("scoring", "rescore"), timed=False),
)


# The stages whose commands run under a network policy of their own (sandbox.network).
NETWORK_PHASES = frozenset({"setup", "pre_run", "agent", "score", "post_run"})


def record_refusals(evaluation: Evaluation) -> None:
    """The connections the sandbox's network policy refused during the stage, into the result."""
    refused = evaluation.sandbox.take_refused()
    evaluation.result.refused_connections += [RefusedConnection(**vars(refusal)) for refusal in refused]


def log_stage(evaluation: Evaluation, stage: str, seconds: float) -> None:
    """Each stage's end at DEBUG (``-v``); the agent's and the verdict at INFO (``--log-file``)."""
    if not log.isEnabledFor(logging.DEBUG if stage not in ("agent", "finish") else logging.INFO):
        return
    result = evaluation.result
    log.debug("%s: %s done in %.2f s", evaluation.name, stage, seconds)
    if stage == "agent" and result.agent_ran and evaluation.task.agent.resolved_type != "none":
        calls = sum(len(turn.calls) for turn in result.trajectory)
        capped = ", at max_turns" if result.max_turns_exhausted else ""
        log.info("%s: agent ended after %d turn(s), %d tool call(s)%s", evaluation.name, result.turns, calls, capped)
    elif stage == "finish":
        criteria = "".join(f"; {c.type} {c.score:.2f}{'' if c.gating else ' (informational)'}" for c in result.criteria)
        log.info("%s: %s, score %.3f%s", evaluation.name, result.final_status, result.weighted_score, criteria)


def run_phase(evaluation: Evaluation, phase: Phase) -> Evaluation:
    """The phase's stages in order, each timed.

    A resumed run keeps a finished phase (an agent that finished never runs
    twice); a phase cut short is redone whole, from a fresh sandbox, since
    what a half-run stage left behind cannot be trusted.
    """
    result = evaluation.result
    if phase in result.phases_done and phase != "rescore":
        _counted_not_run(evaluation, phase, result.final_status)  # done before a resume: counted, not repeated
        return evaluation
    if evaluation.skipped_by_budget() or not _within_budget(evaluation, phase):
        _counted_not_run(evaluation, phase, NOT_RUN_STATUS)  # the progress lines count it as settled
        return evaluation
    if phase == "sandbox":
        result.started_at = utc_now()
    began = time.perf_counter()
    telemetry = evaluation.context.telemetry
    for stage in STAGES:
        if phase not in stage.phases:
            continue
        if phase != "sandbox" and evaluation.context.interrupt.is_set():
            return evaluation  # scoring cut short: no verdict written (its commands were stopped); a resume redoes it
        started, started_ns = time.perf_counter(), time.time_ns()
        if stage.name == "finish":
            _stamp_durations(result, phase, began)
            if phase == "rescore":
                _labelled_as_scored(result, evaluation.row_task.task)
            result.phases_done.append(phase)
            if phase != "rescore":  # a rescore's score spans join the trace; its root (ids derived) is the run's
                telemetry.evaluation_end(evaluation)  # the verdict is in: the trace's root span, with its events
        if stage.name in NETWORK_PHASES:
            evaluation.sandbox.set_phase(stage.name)  # the network policy follows the stage
        stage.run(evaluation)
        log_stage(evaluation, stage.name, time.perf_counter() - started)
        if stage.name in NETWORK_PHASES:
            record_refusals(evaluation)
        if stage.timed and phase != "rescore":
            result.stage_durations[stage.name] = round(time.perf_counter() - started, 3)
        if stage.timed:
            telemetry.stage(evaluation, stage.name, started_ns, time.time_ns())
        if not evaluation.context.interrupt.is_set():  # a stage an interrupt cut short is not done
            evaluation.context.emit(
                "stage", stage=stage.name, task_id=evaluation.row_task.task_id, status=result.final_status
            )
    if phase == "sandbox" and not evaluation.context.interrupt.is_set():  # cut short: no checkpoint, redone whole
        result.phases_done.append(phase)
        save_state(evaluation)  # the checkpoint: a resumed run keeps this evaluation's sandbox phase
        release_if_idle(evaluation.folder)  # nothing left running: hold no namespace until the scoring phase
    _count_spend(evaluation, phase)
    return evaluation


def _counted_not_run(evaluation: Evaluation, phase: Phase, status: str | None) -> None:
    """The phase's stages reported as done, without running them (the progress display counts them)."""
    for stage in STAGES:
        if phase in stage.phases:
            evaluation.context.emit("stage", stage=stage.name, task_id=evaluation.row_task.task_id, status=status)


def _within_budget(evaluation: Evaluation, phase: Phase) -> bool:
    """An evaluation starts only while the run's budget is not spent; one that does not is recorded so."""
    budget = evaluation.budget
    if phase != "sandbox" or budget is None or not budget.exhausted():
        return True
    budget.skip(evaluation.key)
    evaluation.not_run = True
    return False


def _count_spend(evaluation: Evaluation, phase: Phase) -> None:
    """What the phase spent, into the run's budget: the agent and simulated user, then the judges."""
    budget, result = evaluation.budget, evaluation.result
    if budget is None or phase == "rescore":
        return
    if phase == "sandbox":
        budget.add(evaluation.key, (result.agent_cost_usd or 0.0) + (result.simulator_cost_usd or 0.0))
    else:
        budget.add(evaluation.key, result.judge_cost_usd)


def restore_checkpoint(evaluation: Evaluation) -> Evaluation:
    """What an earlier attempt of this run finished for the evaluation (a resume), else it unchanged."""
    for name in (RESULT_FILE, CHECKPOINT_FILE):
        path = evaluation.folder / name
        if path.is_file():
            evaluation.result = load_result(path)
            evaluation.sandbox_ready = is_real_folder(evaluation.folder / SANDBOX_DIR)
            break
    return evaluation


def remember_verdicts(evaluation: Evaluation, reuse: bool) -> Evaluation:
    """Hand the judge verdicts of the evaluation's earlier scoring to its next one (none with ``--no-reuse``).

    A rescore's come from the task.json it re-read (in ``result`` until its
    criteria are scored again); a retried ERROR's from the result
    ``--retry-errors`` set aside, its task.json being gone so that it runs
    again. An unreadable set-aside file costs the reuse, never the scoring.
    """
    if not reuse:
        evaluation.verdicts = {}
        return evaluation
    if evaluation.turn_verdicts:
        evaluation.verdicts = evaluation.turn_verdicts
        return evaluation
    earlier = evaluation.result.criteria
    set_aside = evaluation.folder / PREVIOUS_RESULT_FILE
    if not earlier and set_aside.is_file():
        try:
            earlier = load_result(set_aside).criteria
        except (InvalidInput, OSError) as exc:
            log.warning("%s: its judges' verdicts cannot be reused: %s", set_aside, exc)
    evaluation.verdicts = stored_verdicts(earlier)
    return evaluation


def _stamp_durations(result: EvaluationResult, phase: Phase, began: float) -> None:
    if phase == "rescore":
        result.rescored_at = utc_now()
        result.rescore_duration_s = round(time.perf_counter() - began, 3)
    else:
        result.duration_s = round(sum(result.stage_durations.values()), 3)


def _labelled_as_scored(result: EvaluationResult, task: Task) -> None:
    """A rescore grades by the task file as it is now, and its task_config records that file: the description and
    tags follow it, so that a table's tags and its criteria come from one definition. The prompt and the model
    stay: they say what ran."""
    result.description = task.description
    result.tags = list(task.tags)


def evaluate(evaluation: Evaluation) -> EvaluationResult:
    """Both phases in this thread: the whole evaluation without Dagster, on production's path."""
    run_phase(run_phase(evaluation, "sandbox"), "scoring")
    return evaluation.result
