"""What one run shares in a process, in one explicit object passed down: route, credentials, limits, interrupt.

Built once per process running (part of) a run: by the CLI, which hands it to
the Dagster run it executes in-process, or by the Dagster resource in a run
launched from the UI, a schedule or the sensor. The stages, agents, judges
and the simulator take what they need from it; nothing model-related is
reachable without it, and no module global must be set before it works.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as NotYet
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .budget import RunBudget
from .credentials import Credentials
from .model_proxy import Admit, Grant, Upstream, shared_proxy
from .pricing import PriceBook
from .routing import ApiRoute, resolve_route
from .run_spec import DEFAULT_JUDGE_CONCURRENCY
from .sandbox.containment import end_spare
from .sandbox.process import Interrupt
from .telemetry import Telemetry, configured

if TYPE_CHECKING:
    from .evaluation import Evaluation
    from .models.results import EvaluationResult
    from .models.task import Task
    from .resolution import RowTask
    from .runs import OpenRun

# What the stages report as they complete: ("stage", {"stage": ..., "task_id": ..., "status": ...}).
ProgressSink = Callable[[str, dict[str, Any]], None]
# Agent types whose model calls go through the run's Anthropic route (codex has its own key and endpoint).
ROUTED_AGENT_TYPES = frozenset({"claude-code"})
POLL_S = 0.2  # how often a waiting model call looks at the run's interrupt
Answer = TypeVar("Answer")


class CallAbandoned(Exception):
    """A model call the run stopped waiting for: interrupted, or no answer within its time, retries included."""


# The status a stage event carries for an evaluation the run-wide budget kept from starting: settled, not done.
NOT_RUN_STATUS = "NOT_RUN"


def no_progress(event: str, info: dict[str, Any]) -> None:
    """The sink of a run nobody watches (a launched run: Dagster's event log shows its steps)."""


class JudgeLimiter:
    """How many judge calls the run makes at once (``--judge-concurrency``), across its evaluations."""

    def __init__(self, width: int = DEFAULT_JUDGE_CONCURRENCY):
        if width < 1:
            raise ValueError(f"judge concurrency must be at least 1, not {width}")
        self.width = width
        self._slots = threading.BoundedSemaphore(width)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the run's judge slots for the duration of a judge call."""
        with self._slots:
            yield


@dataclass
class RunContext:
    route: ApiRoute
    credentials: Credentials
    judges: JudgeLimiter = field(default_factory=JudgeLimiter)
    interrupt: Interrupt = field(default_factory=Interrupt)
    progress: ProgressSink = no_progress
    telemetry: Telemetry = field(default_factory=Telemetry)  # none unless the environment configures OTLP
    prices: PriceBook = field(default_factory=PriceBook)  # the library's, with the open run's price file over it
    # Run folders this process has read (plan and snapshot: every step of a CLI run asks), by absolute path.
    opened: dict[Path, OpenRun] = field(default_factory=dict, repr=False)
    # Evaluations the sandbox step hands to the scoring step of the same process (a CLI run): re-reading
    # every run_state.json cost ~1 ms each, and the object keeps the background processes its pre_run started.
    handed_over: dict[Path, Evaluation] = field(default_factory=dict, repr=False)
    # The results the scoring step of this process wrote (task.json), for the same run's summary: reading
    # 1,000 back cost ~0.1 s. Each is taken only while its file is the one written (same time and size).
    written: dict[Path, tuple[EvaluationResult, int, int]] = field(default_factory=dict, repr=False)
    # The run-wide budget of each run folder opened (its ledger is in the folder: shared with other processes).
    budgets: dict[Path, RunBudget] = field(default_factory=dict, repr=False)
    _clients: dict[tuple[int, float], Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def create(
        cls,
        backend: str | None = None,
        judge_concurrency: int = DEFAULT_JUDGE_CONCURRENCY,
        progress: ProgressSink = no_progress,
        credentials: Credentials | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> RunContext:
        """A run's context: its route resolved once (``backend``, else ``API_BACKEND``, else direct) with
        ``credentials`` (default: this process's) and the endpoints of ``environ`` (default: os.environ).

        A RouteError says what is wrong with the route (an unknown backend).
        """
        credentials = credentials if credentials is not None else Credentials.of_process()
        environ = os.environ if environ is None else environ
        route = resolve_route(backend, credentials, environ)
        return cls(
            route, credentials, JudgeLimiter(judge_concurrency), progress=progress, telemetry=telemetry_for(environ)
        )

    def model_client(self, max_retries: int, timeout: float) -> Any:
        """The anthropic SDK client of the run's route, made once and shared by its judges and simulators.

        Made under a lock: judges starting together would otherwise each build
        a client (its TLS context alone takes tens of milliseconds of CPU).
        """
        with self._lock:
            key = (max_retries, timeout)
            if key not in self._clients:
                self._clients[key] = self.route.new_client(max_retries, timeout)
            return self._clients[key]

    def model_call(self, call: Callable[[], Answer], within_s: float) -> Answer:
        """``call()`` (an anthropic SDK request, blocking, its retries inside) as the run waits for it: ended by
        the run's interrupt, and after ``within_s`` over all its attempts. The SDK retries a request that timed
        out as any other, so one stalled endpoint held a judge for four times its timeout, and Ctrl-C waited for
        it. A call given up on ends in its own thread, unheard (the thread does not keep the process alive)."""
        answer: Future[Answer] = Future()

        def work() -> None:
            try:
                answer.set_result(call())
            except BaseException as exc:  # (handed to the waiting thread, which raises it)
                answer.set_exception(exc)

        threading.Thread(target=work, name="model-call", daemon=True).start()
        ends = time.monotonic() + within_s
        while True:
            try:
                return answer.result(timeout=POLL_S)
            except NotYet:
                if self.interrupt.is_set():
                    raise CallAbandoned("the run was interrupted") from None
                if time.monotonic() >= ends:
                    raise CallAbandoned(f"no answer within {within_s:g} s, its retries included") from None

    @contextmanager
    def agent_route(self, host: str) -> Iterator[ApiRoute]:
        """The run's route as an agent CLI (reaching this machine at ``host``) gets it: through the model
        proxy, with a token valid for this agent run in place of the credential (see ``model_proxy``).

        A route without a credential is given as it is: the CLI's start-up says what is missing.
        """
        if self.route.secret is None:
            yield self.route
            return
        with self.grant(self.route.upstream(), host) as grant:
            yield self.route.through(grant)

    def grant(self, upstream: Upstream, host: str, admit: Admit | None = None) -> AbstractContextManager[Grant]:
        """A model proxy grant for one agent run of this run (the process's proxy starts with its first)."""
        return shared_proxy().granted(upstream, host, admit)

    def close(self) -> None:
        """The run is over in this process: send what telemetry buffered; end the namespaces its evaluations
        let go of (kept from one step to the next)."""
        end_spare()
        self.telemetry.shutdown()

    def emit(self, event: str, **info: Any) -> None:
        self.progress(event, info)

    def run_folder(self, folder: Path, load: Callable[[], OpenRun]) -> OpenRun:
        """The run folder's plan and snapshot, read (``load``) once by this process."""
        key = folder.absolute()
        with self._lock:
            found = self.opened.get(key)
        if found is None:
            found = load()
            with self._lock:
                found = self.opened.setdefault(key, found)
                self.prices = PriceBook(found.snapshot.prices)
                self.budgets.setdefault(key, RunBudget(folder, found.max_usd))
        return found

    def budget(self, folder: Path) -> RunBudget | None:
        """The budget of a run folder this process opened (None: an evaluation outside a run, a test)."""
        with self._lock:
            return self.budgets.get(folder.absolute())

    def hand_over(self, evaluation: Evaluation) -> Evaluation:
        with self._lock:
            self.handed_over[evaluation.folder] = evaluation
        return evaluation

    def take_over(self, evaluation: Evaluation) -> Evaluation | None:
        with self._lock:
            return self.handed_over.pop(evaluation.folder, None)

    def remember_result(self, path: Path, result: EvaluationResult) -> None:
        """``result`` was just written to ``path``."""
        stat = path.stat()
        with self._lock:
            self.written[path] = (result, stat.st_mtime_ns, stat.st_size)

    def written_result(self, path: Path) -> EvaluationResult | None:
        """The result this process wrote to ``path``, if the file is still what it wrote (else read the file)."""
        with self._lock:
            entry = self.written.pop(path, None)
        if entry is None:
            return None
        try:
            stat = path.stat()
        except OSError:
            return None
        return entry[0] if (stat.st_mtime_ns, stat.st_size) == entry[1:] else None


def uses_model_route(row_tasks: Iterable[RowTask]) -> bool:
    """Whether any model call of these row-tasks goes through the run's route: a claude-code agent, a judge,
    or a simulated user that is not a recording (the `API routing:` line is printed only then)."""
    for row_task in row_tasks:
        task = row_task.task
        if task.agent.resolved_type in ROUTED_AGENT_TYPES or has_model_user(task) or has_judge(row_task):
            return True
    return False


def has_model_user(task: Task) -> bool:
    """Whether a model plays the task's simulated user, on the run's route (a replayed dialog's user is its
    recording: no model call)."""
    return task.simulated and task.agent.resolved_type != "replay"


def missing_model_key(row_tasks: Iterable[RowTask], context: RunContext) -> str | None:
    """Why the run cannot start its agents or simulated users (one on the run's route, and the route has no key; a
    codex agent without its own), before any sandbox is made: the CLI refuses the run, a launched run fails its
    sandbox step (else every evaluation was an ERROR of a green run, nightly, for a key missing from the daemon's
    environment; a dialog ran one exchange, ended `error`, and was scored)."""
    row_tasks = list(row_tasks)
    missing = context.route.missing_credentials()
    if missing is not None:
        on_route = (
            ("the claude-code agent", _task_ids(row_tasks, ROUTED_AGENT_TYPES)),
            ("the simulated user", sorted({rt.task_id for rt in row_tasks if has_model_user(rt.task)})),
        )
        for who, task_ids in on_route:
            if task_ids:
                return f"{missing}: {who} of {_first_three(task_ids)} needs it (no sandbox was made)"
    codex = _task_ids(row_tasks, {"codex"})
    if codex and not context.credentials.get("CODEX_API_KEY"):
        return f"CODEX_API_KEY is not set: the codex agent of {_first_three(codex)} needs it (no sandbox was made)"
    return None


def _task_ids(row_tasks: list[RowTask], agent_types: frozenset[str] | set[str]) -> list[str]:
    return sorted({rt.task_id for rt in row_tasks if rt.task.agent.resolved_type in agent_types})


def _first_three(task_ids: list[str]) -> str:
    return ", ".join(task_ids[:3]) + (f" and {len(task_ids) - 3} more" if len(task_ids) > 3 else "")


def has_judge(row_task: RowTask) -> bool:
    """Whether a criterion of the row-task calls a model (an enabled judge)."""
    return any(c.calls_model and getattr(c, "enabled", True) for c in row_task.task.success_criteria)


def telemetry_for(environ: Mapping[str, str]) -> Telemetry:
    """The run's telemetry: exporting when the environment configures an OTLP endpoint, else none.

    The exporting side (OpenTelemetry's SDK) is imported only then: a run without telemetry never loads it.
    """
    if not configured(environ):
        return Telemetry()
    from .telemetry_export import OtlpTelemetry

    try:
        return OtlpTelemetry(environ)
    except ValueError as exc:  # the SDK refuses an OTEL_BSP_* / OTEL_BLRP_* value: the evaluations go on
        logging.getLogger(__name__).warning("telemetry off: an OTEL_* setting was refused: %s", exc)
        return Telemetry()
