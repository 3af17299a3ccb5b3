"""Ctrl-C stops a run's commands at once, instead of waiting for them to finish."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pydantic

from ..support.helpers import write

pytestmark = __import__("pytest").mark.slow


CLI = Path(sys.executable).parent / "coder-eval"


def _slow_task(folder: Path, seconds: int | str) -> Path:
    return _rows_task(folder / "slow.yaml", "slow", 3, "true", f"echo started > started.txt; sleep {seconds}")


def _rows_task(path: Path, task_id: str, count: int, command: str, pre_run: str | None = None) -> Path:
    """An agentless dataset task of ``count`` rows, each checked by ``command`` (after ``pre_run``, if given)."""
    rows = ", ".join(f"{{id: r{n}}}" for n in range(count))
    before = f'pre_run: [{{command: "{pre_run}", timeout: 120}}]' if pre_run else ""
    return write(
        path,
        f"""
        task_id: {task_id}
        description: {task_id}
        agent: {{type: none}}
        sandbox: {{python: null}}
        dataset: {{rows: [{rows}]}}
        {before}
        success_criteria: [{{type: run_command, command: "{command}", description: t}}]
        """,
    )


def _coder_eval(tmp_path: Path, *args: str | Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(CLI), *map(str, args)],
        env={**os.environ, "DAGSTER_HOME": str(tmp_path / "home")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as in a terminal: a non-interactive parent may have left SIGINT ignored for its children
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _interrupt_once_started(tmp_path: Path, process: subprocess.Popen[str]) -> float:
    """Ctrl-C once a first pre_run command is running; the seconds the command took to exit after it."""
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("runs/*/default/slow/*/00/sandbox/started.txt")) and time.monotonic() < deadline:
        time.sleep(0.2)
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and "interrupted" in err, err
    assert "Traceback" not in err and "Stack Trace" not in err, err  # one line, not Dagster's failure logs
    assert "3/3" not in err, err  # the progress lines never count a stage the interrupt cut short as done
    return time.monotonic() - interrupted


def test_interrupt_kills_running_commands_and_exits_130(tmp_path: Path) -> None:
    seconds = f"57.{uuid.uuid4().int % 10**9}"  # this test's own: other tests' commands sleep 57 s too
    process = _coder_eval(tmp_path, "run", _slow_task(tmp_path, seconds), "--runs-dir", tmp_path / "runs")
    assert _interrupt_once_started(tmp_path, process) < 10  # not the 57 s of the running commands
    found = subprocess.run(["pgrep", "-f", f"sleep {seconds}"], capture_output=True, text=True, timeout=10)
    leftover = found.stdout.split()
    assert leftover == []


def test_resume_redoes_what_an_interrupt_cut_short_or_never_started(tmp_path: Path) -> None:
    process = _coder_eval(tmp_path, "run", _slow_task(tmp_path, 2), "--runs-dir", tmp_path / "runs", "-j", "1")
    _interrupt_once_started(tmp_path, process)
    (run_dir,) = (tmp_path / "runs").glob("2*")
    resumed = _coder_eval(tmp_path, "run", "--resume", run_dir)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, out + err
    rows = json.loads((run_dir / "run.json").read_text())["task_results"]
    assert [(row["task_id"], row["status"]) for row in rows] == [(f"slow/r{i}", "SUCCESS") for i in range(3)]


def test_an_interrupt_while_scoring_writes_no_verdict_and_resume_scores_again(tmp_path: Path) -> None:
    """Ctrl-C while a criterion's command runs: it was stopped, so no FAILURE is saved (a resume kept it)."""
    task = write(
        tmp_path / "scoring.yaml",
        """
        task_id: scoring
        description: a slow check
        agent: {type: none}
        sandbox: {python: null}
        success_criteria:
          - {type: run_command, command: "echo started > started.txt; sleep 3; echo ok", expected_stdout: ok, description: slow}
        """,
    )
    process = _coder_eval(tmp_path, "run", task, "--runs-dir", tmp_path / "runs")
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("runs/*/default/scoring/00/sandbox/started.txt")) and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    (run_dir,) = (tmp_path / "runs").glob("2*")
    assert not (run_dir / "default" / "scoring" / "00" / "task.json").exists()
    resumed = _coder_eval(tmp_path, "run", "--resume", run_dir)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, out + err
    rows = json.loads((run_dir / "run.json").read_text())["task_results"]
    assert [(row["task_id"], row["status"]) for row in rows] == [("scoring", "SUCCESS")]


def test_an_interrupt_in_a_step_without_commands_counts_as_an_interrupt() -> None:
    """Ctrl-C while the summary's steps run: Dagster's handler fails the step, and the CLI exits 130 for it
    (`launch.interrupted`), not 1 as for a failed run."""
    import dagster as dg

    from coder_eval_dagster.launch import interrupted

    @dg.op
    def summary() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)

    @dg.op
    def failing() -> None:
        raise OSError("disk full")

    @dg.job
    def ctrl_c() -> None:
        summary()

    @dg.job
    def failed() -> None:
        failing()

    @dg.op
    def lock_taken_again() -> None:
        """The interrupt lands while a lock is handled: the step raises another error, the interrupt its context."""
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        finally:
            raise RuntimeError("release unlocked lock")

    @dg.job
    def ctrl_c_in_a_lock() -> None:
        lock_taken_again()

    class Summary(pydantic.BaseModel):
        @pydantic.computed_field  # type: ignore[prop-decorator]
        @property
        def total(self) -> int:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
            return 0

    @dg.op
    def written() -> None:
        """The interrupt lands in a computed field while the summary is written: pydantic wraps it."""
        Summary().model_dump_json()

    @dg.job
    def ctrl_c_while_writing() -> None:
        written()

    assert interrupted(ctrl_c.execute_in_process(raise_on_error=False))
    assert interrupted(ctrl_c_in_a_lock.execute_in_process(raise_on_error=False))  # exit 130, not 1
    assert interrupted(ctrl_c_while_writing.execute_in_process(raise_on_error=False))  # it was "did not complete"
    assert not interrupted(failed.execute_in_process(raise_on_error=False))


def _catches(pid: int, signum: int, timeout: float = 30) -> None:
    """Wait until the process has its handler of ``signum`` (the ``SigCgt`` mask of /proc/PID/status)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        caught = re.search(r"SigCgt:\s*(\w+)", Path(f"/proc/{pid}/status").read_text())
        if caught and int(caught[1], 16) & (1 << (signum - 1)):
            return
        time.sleep(0.01)
    raise AssertionError(f"the process never caught signal {signum}")


def test_sigterm_before_the_run_and_a_second_ctrl_c_end_it_in_one_line_starting_nothing(tmp_path: Path) -> None:
    """A CI's cancel (SIGTERM) while the command started killed it silently (exit 143, no word, a run folder left);
    a second Ctrl-C soon after the first set up every queued evaluation (hundreds of sandboxes and namespaces)
    before the process ended."""
    process = _coder_eval(tmp_path, "run", _slow_task(tmp_path, 30), "--runs-dir", tmp_path / "early")
    _catches(process.pid, signal.SIGTERM)  # (before that, the interpreter's start: SIGTERM's own default ends it)
    process.send_signal(signal.SIGTERM)  # (importing its modules)
    _, err = process.communicate(timeout=30)
    assert (process.returncode, err.strip().splitlines()[-1:]) == (130, ["coder-eval: interrupted"]), err

    many = _rows_task(tmp_path / "many" / "many.yaml", "many", 150, "true", "echo started > started.txt; sleep 30")
    process = _coder_eval(tmp_path, "run", many, "--runs-dir", tmp_path / "runs", "-j", "4")
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("runs/*/default/many/*/00/sandbox/started.txt")) and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in err, err
    made = list(tmp_path.glob("runs/*T*/default/many/*/00/sandbox"))
    assert len(made) <= 12, len(made)  # those running or starting at the interrupt, not the 150 queued


def test_a_rescore_cut_short_is_finished_by_a_rescore_not_read_as_a_mixture(tmp_path: Path) -> None:
    """Ctrl-C in a rescore left some task.json files scored by the new criteria and the others by the old:
    `run --resume` and `report --rebuild` summarised that mixture (neither the run nor its rescore) without a word."""
    task = _rows_task(tmp_path / "tasks" / "rows.yaml", "rows", 12, "true")
    ran = _coder_eval(tmp_path, "run", task, "--runs-dir", tmp_path / "runs", "-j", "2")
    assert ran.wait(timeout=120) == 0, ran.communicate()
    (run_dir,) = (tmp_path / "runs").glob("2*")
    _rows_task(task, "rows", 12, "touch rescored; sleep 1; false")
    rescoring = _coder_eval(tmp_path, "rescore", run_dir, "-j", "2")
    deadline = time.monotonic() + 60
    while not list(run_dir.glob("default/rows/*/00/sandbox/rescored")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.5)
    rescoring.send_signal(signal.SIGINT)
    assert rescoring.wait(timeout=60) == 130

    for command in (("run", "--resume", run_dir), ("report", run_dir, "--rebuild"), ("compare", run_dir)):
        refused = _coder_eval(tmp_path, *command)
        _, err = refused.communicate(timeout=120)
        assert refused.returncode == 2 and "the rescore did not finish" in err, err
        assert f"coder-eval rescore {run_dir}" in err
    finished = _coder_eval(tmp_path, "rescore", run_dir, "-j", "4")
    out, err = finished.communicate(timeout=120)
    assert finished.returncode == 1, out + err  # every row fails the new criterion
    statuses = {row["status"] for row in json.loads((run_dir / "run.json").read_text())["task_results"]}
    assert statuses == {"FAILURE"}
    rebuilt = _coder_eval(tmp_path, "report", run_dir, "--rebuild")
    assert rebuilt.wait(timeout=120) == 0, rebuilt.communicate()


def test_a_rescore_refused_before_it_scored_anything_leaves_the_run_as_it_was(tmp_path: Path) -> None:
    """A rescore refused inside its run (a damaged task.json) left the run marked as a rescore cut short: --resume
    and report --rebuild then sent the user to rescore, which sent them back."""
    task = write(
        tmp_path / "tasks" / "two.yaml",
        """
        task_id: two
        description: two rows
        agent: {type: none}
        sandbox: {python: null}
        dataset: {rows: [{id: a}, {id: b}]}
        success_criteria: [{type: run_command, command: "true", description: t}]
        """,
    )
    ran = _coder_eval(tmp_path, "run", task, "--runs-dir", tmp_path / "runs")
    assert ran.wait(timeout=120) == 0, ran.communicate()
    (run_dir,) = (tmp_path / "runs").glob("2*")
    (run_dir / "default/two/b/00/task.json").write_text('{"broken')
    refused = _coder_eval(tmp_path, "rescore", run_dir)
    _, err = refused.communicate(timeout=120)
    assert refused.returncode == 2, err
    assert not (run_dir / ".rescoring").exists()
    assert sorted(path.name for path in run_dir.iterdir() if path.name.startswith(".rescor")) == []
