"""The replay agent: real calls in the sandbox, telemetry, limits and budgets."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import pytest
import yaml

from coder_eval_dagster.core.agents.base import AgentInput
from coder_eval_dagster.core.agents.replay import Replay
from coder_eval_dagster.core.evaluation import evaluate, new_evaluation
from coder_eval_dagster.core.models.agent import AgentConfig
from coder_eval_dagster.core.models.limits import RunLimits
from coder_eval_dagster.core.models.results import EvaluationResult
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.problems import InvalidInput
from coder_eval_dagster.core.resolution import load_trajectory, resolve
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.run_spec import RunSpec
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

from ..support.helpers import criterion, evaluate_replay, write

ROOT = Path(__file__).parent.parent.parent


def play(
    tmp_path: Path,
    turns: list[dict],
    limits: RunLimits | None = None,
    row: dict | None = None,
    box: TempdirSandbox | None = None,  # one made already (with files of the test's in it)
):
    write(tmp_path / "traj.yaml", yaml.safe_dump({"turns": turns}))
    if box is None:
        box = TempdirSandbox(tmp_path / "run/sandbox", SandboxConfig(python=None))
        box.create(tmp_path)
    agent_input = AgentInput(
        box,
        "p",
        AgentConfig(type="replay", trajectory="traj.yaml"),
        limits or RunLimits(),
        tmp_path,
        row,
        run=RunContext.create(),
    )
    return Replay(agent_input, load_trajectory(tmp_path / "traj.yaml", row)).play(), box


def run_task(tmp_path: Path, turns: list[dict], **task) -> EvaluationResult:
    return evaluate_replay(tmp_path, turns, success_criteria=[criterion("file_exists", path="a.txt")], **task)


def test_calls_really_happen_and_are_recorded(tmp_path: Path) -> None:
    output, box = play(
        tmp_path,
        [
            {
                "calls": [
                    {"tool": "Write", "path": "a.txt", "content": "one"},
                    {"tool": "Edit", "path": "a.txt", "old": "one", "new": "two"},
                    {"tool": "Read", "path": "a.txt"},
                    {"tool": "Bash", "command": "cat a.txt; exit 3"},
                    {"tool": "Read", "path": "missing.txt"},
                    {"tool": "Edit", "path": "a.txt", "old": "zzz", "new": "x"},
                    {"tool": "Write", "path": "../escape.txt", "content": "x"},
                    {"tool": "Skill", "skill": "ns:date-teller"},
                    {"tool": "Glob", "pattern": "*.txt"},
                ],
                "text": "done",
            },
        ],
    )
    calls = output.turns[0].calls
    assert (box.root / "a.txt").read_text() == "two" and not (box.root.parent / "escape.txt").exists()
    assert [c.status for c in calls] == [
        "success",
        "success",
        "success",
        "error",
        "error",
        "error",
        "error",
        "success",
        "success",
    ]
    assert calls[2].output == "two" and calls[3].output == "Exit code 3\ntwo"  # as Claude Code's Bash tool says it
    assert [(c.turn, c.seq) for c in calls][:2] == [(1, 1), (1, 2)] and calls[0].parameters["content"] == "one"
    assert output.visible_turns == 10 and output.final_text == "done" and output.stop_reason == "completed"


def test_max_turns_stops_between_turns(tmp_path: Path) -> None:
    turns = [{"calls": [{"tool": "Bash", "command": f"echo {i} >> log.txt"}]} for i in range(5)]
    output, box = play(tmp_path, turns, RunLimits(max_turns=2))
    assert output.stop_reason == "max_turns" and len(output.turns) == 2 and output.final_status is None
    assert (box.root / "log.txt").read_text().split() == ["0", "1"]


def test_task_timeout_and_turn_timeout(tmp_path: Path) -> None:
    slow = [{"calls": [{"tool": "Bash", "command": "sleep 5"}, {"tool": "Bash", "command": "touch after.txt"}]}]
    output, box = play(tmp_path, slow, RunLimits.model_construct(task_timeout=0.5, turn_timeout=None))
    assert (output.final_status, output.stop_reason) == ("TIMEOUT", "task_timeout") and not (
        box.root / "after.txt"
    ).exists()
    output, _ = play(tmp_path / "b", slow, RunLimits.model_construct(task_timeout=None, turn_timeout=0.5))
    assert (output.final_status, output.stop_reason) == ("TIMEOUT", "turn_timeout")


CUT_SHORT = [
    {"calls": [{"tool": "Bash", "command": "true"}], "text": "step one done"},
    {"calls": [{"tool": "Bash", "command": "sleep 5"}, {"tool": "Bash", "command": "true"}], "text": "All done."},
]


@pytest.mark.parametrize(
    "limits",
    [
        RunLimits.model_construct(task_timeout=1.5),
        RunLimits.model_construct(turn_timeout=1.5),
        RunLimits(max_tool_calls=1),
    ],
    ids=["task_timeout", "turn_timeout", "max_tool_calls"],
)
def test_a_turn_cut_short_keeps_its_calls_but_not_its_final_reply(tmp_path: Path, limits: RunLimits) -> None:
    output, _ = play(tmp_path, CUT_SHORT, limits)
    first, cut = output.turns
    assert first.text == "step one done" and cut.text is None  # a live agent cut off never gives its reply
    assert [c.status for c in cut.calls] == ([] if limits.max_tool_calls else ["error"])  # refused, or killed
    # nor is an earlier turn's text its final reply: coder_eval's is the CLI's closing result, which a cut run lacks
    assert output.final_text is None and output.visible_turns == 1 + len(cut.calls)


def test_an_early_stop_mid_turn_records_no_final_reply(tmp_path: Path) -> None:
    commands = ["echo one > one.txt", "rm -rf x; echo two > two.txt", "echo three > three.txt"]
    calls = [{"tool": "Bash", "command": command} for command in commands]
    guard = {**criterion("command_executed", command_pattern="rm -rf", min_count=0, max_count=0), "stop_early": {}}
    result = evaluate_replay(
        tmp_path,
        [{"calls": calls, "text": "Finished: all three files written."}],
        success_criteria=[guard],
        run_limits={"max_turns": 5, "expected_turns": 2},
    )
    assert result.stopped_early and [len(t.calls) for t in result.trajectory] == [2]
    assert result.trajectory[0].text is None and result.visible_turns == 2


@pytest.mark.parametrize(
    ("limits", "status"),
    [
        (RunLimits(max_output_tokens=250), "TOKEN_BUDGET_EXCEEDED"),
        (RunLimits(max_input_tokens=1500), "TOKEN_BUDGET_EXCEEDED"),
        (RunLimits(max_input_tokens=3000), None),  # cached reads are not counted by default
        (RunLimits(max_input_tokens=3000, count_cached_input=True), "TOKEN_BUDGET_EXCEEDED"),
        (RunLimits(max_input_tokens=3000, count_cache_creation=True), "TOKEN_BUDGET_EXCEEDED"),
        (RunLimits(max_total_tokens=2000), "TOKEN_BUDGET_EXCEEDED"),
        (RunLimits(max_usd=0.015), "COST_BUDGET_EXCEEDED"),
        (RunLimits(max_usd=0.05), None),
    ],
)
def test_budgets_are_cumulative_and_checked_after_each_turn(tmp_path: Path, limits: RunLimits, status) -> None:
    usage = {
        "input_tokens": 1000,
        "output_tokens": 200,
        "cache_read_input_tokens": 800,
        "cache_creation_input_tokens": 700,
        "cost_usd": 0.01,
    }
    turns = [{"usage": usage, "calls": [{"tool": "Bash", "command": "true"}]} for _ in range(3)]
    output, _ = play(tmp_path, turns, limits)
    assert output.final_status == status
    if status:
        assert len(output.turns) == 2  # the breach is seen after turn 2, never mid-turn


def test_max_usd_without_reported_cost_warns_once(tmp_path: Path) -> None:
    turns = [{"usage": {"input_tokens": 10}, "calls": []} for _ in range(3)]
    output, _ = play(tmp_path, turns, RunLimits(max_usd=0.01))
    assert output.final_status is None and len(output.warnings) == 1 and "max_usd" in output.warnings[0]


def test_row_values_are_substituted_into_the_trajectory(tmp_path: Path) -> None:
    _, box = play(
        tmp_path,
        [{"calls": [{"tool": "Write", "path": "${row.name}.txt", "content": "${row.n}"}]}],
        row={"name": "alpha", "n": 3},
    )
    assert (box.root / "alpha.txt").read_text() == "3"
    with pytest.raises(InvalidInput, match="unknown row field"):
        play(tmp_path / "b", [{"calls": [{"tool": "Bash", "command": "echo ${row.nope}"}]}], row={"name": "a"})


def test_evaluation_records_usage_turns_and_expected_turns(tmp_path: Path) -> None:
    turns = [
        {
            "usage": {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.5},
            "calls": [{"tool": "Write", "path": "a.txt", "content": "x"}, {"tool": "Bash", "command": "true"}],
        },
        {"usage": {"input_tokens": 50, "output_tokens": 5}, "calls": [], "text": "done"},
    ]
    result = run_task(tmp_path, turns, run_limits={"expected_turns": 2})
    assert (result.final_status, result.turns, result.visible_turns) == ("SUCCESS", 2, 3)
    usage = result.total_token_usage
    assert (usage.uncached_input_tokens, usage.output_tokens, usage.total_cost_usd) == (150, 15, 0.5)
    assert result.within_expected_turns is True  # 3 <= 1.5 x 2
    assert result.command_stats.total_commands == 2 and result.command_stats.commands_by_tool == {"Write": 1, "Bash": 1}
    over = run_task(tmp_path / "b", turns, run_limits={"expected_turns": 1})
    assert over.final_status == "SUCCESS" and over.within_expected_turns is False
    assert result.warnings == [] and over.warnings == [
        "used 3 visible turns, over run_limits.expected_turns 1 (x1.5 = 1.5)"
    ]


def test_expected_tool_calls_warns_and_never_stops(tmp_path: Path) -> None:
    calls = [{"tool": "Bash", "command": f"echo {n} >> a.txt"} for n in range(3)]
    within = run_task(tmp_path, [{"calls": calls}], run_limits={"expected_tool_calls": 3})
    over = run_task(tmp_path / "b", [{"calls": calls}], run_limits={"expected_tool_calls": 1})
    assert within.warnings == [] and over.final_status == "SUCCESS" and over.command_stats.total_commands == 3
    assert over.warnings == ["used 3 tool calls, over run_limits.expected_tool_calls 1"]


def test_budget_breach_keeps_its_status_and_still_scores(tmp_path: Path) -> None:
    turns = [{"usage": {"input_tokens": 5000}, "calls": [{"tool": "Write", "path": "a.txt", "content": "x"}]}]
    result = run_task(tmp_path, turns, run_limits={"max_input_tokens": 100})
    assert result.final_status == "TOKEN_BUDGET_EXCEEDED" and not result.success
    assert result.criteria[0].passed  # scored on what the agent left


def test_shipped_replay_example(tmp_path: Path) -> None:
    (row_task,) = resolve(RunSpec(task_paths=[str(ROOT / "tasks/replay_hello/task.yaml")])).row_tasks
    result = evaluate(new_evaluation("r", tmp_path, row_task, 1, None))
    assert result.final_status == "SUCCESS", result.criteria
    assert result.visible_turns == 4 and result.within_expected_turns is True and result.agent_cost_usd == 0.007


def test_async_interface(tmp_path: Path) -> None:
    from coder_eval_dagster.core.agents import runner

    write(tmp_path / "traj.yaml", "turns:\n  - calls: [{tool: Bash, command: 'echo hi'}]\n")
    box = TempdirSandbox(tmp_path / "s", SandboxConfig(python=None))
    box.create(tmp_path)
    output = asyncio.run(
        runner("replay")(
            AgentInput(
                box,
                "p",
                AgentConfig(type="replay", trajectory="traj.yaml"),
                RunLimits(),
                tmp_path,
                run=RunContext.create(),
            )
        )
    )
    assert output.turns[0].calls[0].output.strip() == "hi"


# ----------------------------------------------------------------------------- the file tools, done by the harness
# Write, Edit and Read are carried out by the harness itself on the sandbox folder on this machine (as root on CI),
# while the agent's own processes may still change it: never through a link out of the sandbox, never on a FIFO.


def host_file(tmp_path: Path) -> Path:
    """A file outside the sandbox (tmp_path/run/sandbox), alone in its folder, that no replayed tool may touch."""
    write(tmp_path / "host/secret.txt", "host")
    return tmp_path / "host/secret.txt"


def untouched(secret: Path) -> bool:
    return secret.read_text() == "host" and [p.name for p in secret.parent.iterdir()] == ["secret.txt"]


@pytest.mark.parametrize(
    ("links", "path"),
    [
        ("ln -s {secret} f", "f"),  # absolute, to the host file
        ("ln -s ../../host/secret.txt f", "f"),  # relative, up out of the sandbox
        ("ln -s /sandbox/../../host/secret.txt f", "f"),  # under /sandbox, then up out of it
        ("ln -s g f && ln -s {secret} g", "f"),  # a chain
        ("ln -s {host} d", "d/secret.txt"),  # a folder on the way
        ("ln -s {host} d", "d/new.txt"),  # a folder on the way, the file made there
        ("mkdir sub && ln -s ../.. sub/up", "sub/up/host/secret.txt"),
        ("true", "//" + "{secret}"),  # an anchor of two slashes, not a name
    ],
)
def test_file_tools_never_follow_a_link_out_of_the_sandbox(tmp_path: Path, links: str, path: str) -> None:
    secret = host_file(tmp_path)
    named = {"secret": secret, "host": secret.parent}
    path = path.format(**named).replace("///", "//")
    calls = [
        {"tool": "Bash", "command": links.format(**named)},
        {"tool": "Write", "path": path, "content": "x"},
        {"tool": "Edit", "path": path, "old": "host", "new": "x"},
        {"tool": "Read", "path": path},
    ]
    output, _ = play(tmp_path, [{"calls": calls}])
    bash, *tools = output.turns[0].calls
    assert bash.status == "success", bash.output
    assert [c.status for c in tools] == ["error"] * 3, [c.output for c in tools]
    assert untouched(secret) and tools[-1].output != "host"  # not read either


def test_links_inside_the_sandbox_are_followed_as_the_agent_sees_them(tmp_path: Path) -> None:
    """A link the agent's own tool would follow (relative, or absolute under /sandbox) is followed, inside."""
    links = "mkdir sub && echo one > sub/a.txt && ln -s sub/a.txt rel && ln -s /sandbox/sub/a.txt abs && ln -s sub d"
    calls = [
        {"tool": "Bash", "command": links},
        {"tool": "Edit", "path": "rel", "old": "one", "new": "two"},
        {"tool": "Edit", "path": "abs", "old": "two", "new": "three"},
        {"tool": "Write", "path": "d/deep/b.txt", "content": "b"},
        {"tool": "Read", "path": "d/../abs"},
    ]
    output, box = play(tmp_path, [{"calls": calls}])
    assert [c.status for c in output.turns[0].calls] == ["success"] * 5, [c.output for c in output.turns[0].calls]
    assert (box.root / "sub/a.txt").read_text() == "three\n" and (box.root / "sub/deep/b.txt").read_text() == "b"
    assert (box.root / "rel").is_symlink() and output.turns[0].calls[-1].output == "three\n"


class SwappingSandbox(TempdirSandbox):
    """The agent's process acting between the harness's look at a path and its write: ``swap`` puts a link to
    the host file in place of ``f``, once, at whichever the harness does first of resolving ``f`` and opening it."""

    secret: Path

    def swap(self) -> None:
        if not (self.root / "f").is_symlink():
            (self.root / "link").symlink_to(self.secret)
            (self.root / "link").rename(self.root / "f")  # at once, as rename(2) does

    def resolve_path(self, relative: str) -> Path:
        resolved = super().resolve_path(relative)
        self.swap()
        return resolved


@pytest.mark.parametrize("tool", ["Write", "Edit"])
def test_a_link_swapped_in_after_a_look_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    box = SwappingSandbox(tmp_path / "run/sandbox", SandboxConfig(python=None))
    box.create(tmp_path)
    box.secret = host_file(tmp_path)
    write(box.root / "f", "host")  # a regular file when the harness looks
    real_open = os.open

    def opening(path, flags, *args, **kwargs):  # the harness opens f: the link is put there just before
        if path == "f" and kwargs.get("dir_fd") is not None:
            box.swap()
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", opening)
    call = {"tool": "Write", "path": "f", "content": "x"} if tool == "Write" else {"tool": "Edit", "path": "f"}
    call.update({"old": "host", "new": "x"} if tool == "Edit" else {})
    output, _ = play(tmp_path, [{"calls": [call]}], box=box)
    monkeypatch.undo()
    (result,) = output.turns[0].calls
    assert result.status == "error" and untouched(box.secret), result.output
    assert (box.root / "f").is_symlink()  # the link is left as it is, its target untouched


def test_a_fifo_or_folder_is_an_error_at_once_never_waited_on(tmp_path: Path) -> None:
    calls = [
        {"tool": "Bash", "command": "mkfifo p && mkdir folder"},
        {"tool": "Edit", "path": "p", "old": "a", "new": "b"},
        {"tool": "Write", "path": "p", "content": "x"},
        {"tool": "Read", "path": "p"},
        {"tool": "Write", "path": "folder", "content": "x"},
        {"tool": "Edit", "path": "folder", "old": "a", "new": "b"},
    ]
    played: list = []
    thread = threading.Thread(target=lambda: played.append(play(tmp_path, [{"calls": calls}])), daemon=True)
    thread.start()
    thread.join(30)  # a blocking open of the FIFO would never return (no task_timeout or SIGTERM ends it)
    assert not thread.is_alive(), "a replayed file tool waited on a FIFO"
    output, box = played[0]
    bash, *tools = output.turns[0].calls
    assert bash.status == "success" and [c.status for c in tools] == ["error"] * 5
    assert all(c.output == "not a regular file: p" for c in tools[:3]), [c.output for c in tools]
    assert all("folder" in (c.output or "") for c in tools[3:]) and (box.root / "folder").is_dir()


def test_no_turn_is_played_or_spent_once_the_run_is_interrupted(tmp_path: Path) -> None:
    """Ctrl-C during turn 1's call: turn 2 was played all the same (its calls refused at once) and its recorded
    cost counted in the run's spend, which a --resume counted again."""
    box = TempdirSandbox(tmp_path / "run/sandbox", SandboxConfig(python=None))
    box.create(tmp_path)
    usage = {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.001}
    turns = [
        {"calls": [{"tool": "Bash", "command": "touch started; sleep 5"}], "usage": usage},
        {"calls": [{"tool": "Bash", "command": "true"}], "usage": usage},
    ]

    def interrupt_in_turn_one() -> None:
        deadline = time.monotonic() + 30
        while not (box.root / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        box.interrupt.raise_now()

    threading.Thread(target=interrupt_in_turn_one, daemon=True).start()
    output, _ = play(tmp_path, turns, box=box)
    assert [turn.cost_usd for turn in output.turns] == [0.001]  # turn 1's model turn happened; turn 2's never
    assert output.stop_reason == "error" and output.error == "the run was interrupted"
