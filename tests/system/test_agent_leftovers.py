"""What an agent leaves behind, through the installed CLI: for the host (the preserved sandbox), for the run's
records, and for the criteria that come after it.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tests.support.helpers import write

from .conftest import SystemCli, replay_task_file, task_file

# Marks a copy of `true` with CAP_SETUID, as `setcap cap_setuid+ep` does (a v2 capability set: effective, permitted).
MARK_CAPABILITY = """import os, shutil, struct
shutil.copy('/bin/true', 'capable')
os.setxattr('capable', 'security.capability', struct.pack('<IIIII', 0x02000001, 1 << 7, 0, 0, 0))
"""


def test_a_large_write_and_privileged_files_leave_the_run_whole_and_the_host_safe(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """A Write of 1.8 MB (an agent's data fixture) is one row longer than the Parquet writer's JSON block: the run
    lost run.json and the tables of every row. A setuid program or file capability the agent made in its sandbox
    (mounted nosuid there) worked from the preserved sandbox on the host, as the harness's user; one past PATH_MAX,
    out of the walk's reach, still did."""
    calls = [
        {"tool": "Write", "path": "data.csv", "content": "a,b\n" * (450 * 1024)},
        {"tool": "Write", "path": "mark.py", "content": MARK_CAPABILITY},
        {"tool": "Bash", "command": "cp /bin/true setuid && chmod 6755 setuid && python3 mark.py && echo marked"},
    ]
    exists = [{"type": "file_exists", "path": "data.csv", "description": "the fixture"}]
    replay_task_file(tmp_path / "tasks", "big", [{"calls": calls}], success_criteria=exists)
    task_file(tmp_path / "tasks", "small", agent={"type": "none"})
    outcome, run = system_cli.run(tmp_path / "tasks", env={}, timeout=180)
    assert outcome.code == 0, outcome.output
    assert sorted(row["status"] for row in run.summary["task_results"]) == ["SUCCESS", "SUCCESS"]
    rows = pq.read_table(system_cli.runs / "tables" / "task_results").to_pylist()
    assert sorted(row["task_id"] for row in rows) == ["big", "small"]
    played = [c for it in run.result("big")["iterations"] for c in it["commands"]]
    assert "marked" in (played[-1]["result_summary"] or ""), played[-1]  # the agent did make them
    sandbox = run.evaluation("big") / "sandbox"
    assert stat.S_IMODE((sandbox / "setuid").stat().st_mode) == 0o755
    assert "security.capability" not in os.listxattr(sandbox / "capable")
    assert stat.S_IMODE(sandbox.stat().st_mode) == 0o700  # another user reaches nothing in it: a file too deep
    folder = run.evaluation("big")  # private while its sandbox was in use, then as readable as its run's
    assert stat.S_IMODE(folder.stat().st_mode) == stat.S_IMODE(folder.parent.stat().st_mode) != 0o700


def test_a_run_cut_short_leaves_the_agents_setuid_program_out_of_other_users_reach(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """Interrupted, the evaluation never reached the point where its sandbox's privileges are dropped: a setuid
    program the agent made sat in a folder any user could reach. Its folder is its user's alone until then."""
    calls = [
        {"tool": "Bash", "command": "cp /bin/true setuid && chmod 4755 setuid && echo made"},
        {"tool": "Bash", "command": "sleep 60"},
    ]
    exists = [{"type": "file_exists", "path": "setuid", "description": "made"}]
    task = replay_task_file(tmp_path / "tasks", "cut", [{"calls": calls}], success_criteria=exists)
    process = system_cli.start("run", task, "--runs-dir", system_cli.runs, env={}, stdout=subprocess.DEVNULL)
    made = system_cli.runs / "latest/default/cut/00/sandbox/setuid"
    deadline = time.monotonic() + 60
    while not made.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGINT)
    assert process.wait(timeout=60) == 130
    assert made.exists(), "the agent's call never ran"
    assert stat.S_IMODE(made.parent.parent.stat().st_mode) == 0o700


def test_a_criterion_running_the_agents_code_cannot_rewrite_what_the_next_criterion_reads(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """The staged reference and task folder are read-only to the criteria's commands: a hidden test importing the
    agent's module ran its code, which replaced the reference solution (reference_comparison then scored the
    agent's own copy 1.0) or the checker a later criterion ran."""
    tasks = tmp_path / "tasks"
    write(tasks / "ref" / "solution.py", "original\n")
    write(tasks / "check.txt", "original\n")
    tamper = "echo forged > $REFERENCE_DIR/solution.py; echo forged > $TASK_DIR/check.txt; true"
    read = "grep -q original $REFERENCE_DIR/solution.py && grep -q original $TASK_DIR/check.txt"
    criteria = [
        {"type": "run_command", "command": tamper, "description": "runs the agent's code"},
        {"type": "run_command", "command": read, "description": "reads what the task brought"},
    ]
    task_file(tasks, "staged", agent={"type": "none"}, reference={"directory": "ref"}, success_criteria=criteria)
    outcome, run = system_cli.run(tasks, env={}, timeout=120)
    assert outcome.code == 0, outcome.output
    first, second = run.result("staged")["success_criteria_results"]
    assert "Read-only file system" in str(first["evidence"]), first
    assert second["passed"], second
    assert (tasks / "ref" / "solution.py").read_text() == "original\n"


# Which of the two sleepers run now: pre_run's service (301) must, the agent's daemon (302) must not.
SLEEPERS = """import os
found = set()
for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
        argv = open(f'/proc/{pid}/cmdline', 'rb').read().split(b'\\0')
    except OSError:
        continue
    found.update(argv[1].decode() for _ in [0] if argv[0] == b'sleep' and len(argv) > 1)
print(' '.join(sorted(found)))
"""


def _with_a_service(tmp_path: Path, task_id: str, calls: list[dict[str, Any]], check: dict[str, Any]) -> Path:
    """A replay of ``calls`` whose pre_run leaves a service running (`sleep 301`), graded by ``check``."""
    return replay_task_file(
        tmp_path / "tasks",
        task_id,
        [{"calls": calls}],
        pre_run=[{"command": "sleep 301 >/dev/null 2>&1 &"}],
        success_criteria=[check],
    )


def test_what_the_agent_left_running_ends_before_the_criteria_and_pre_runs_services_stay(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """A daemon the agent left (setsid, double fork) kept running into scoring, where it could trace a criterion's
    command and force its exit code, or write into the pipe its output is read from. A service pre_run started
    stays for the criteria, as the guide has it."""
    calls = [
        {"tool": "Write", "path": "sleepers.py", "content": SLEEPERS},
        {"tool": "Bash", "command": "(setsid sleep 302 >/dev/null 2>&1 < /dev/null &) ; sleep 1; python3 sleepers.py"},
    ]
    check = {"type": "run_command", "command": "python3 sleepers.py", "expected_stdout": "301", "description": "ran"}
    task = _with_a_service(tmp_path, "leftovers", calls, check)
    outcome, run = system_cli.run(task, env={}, timeout=120)
    played = [c for it in run.result("leftovers")["iterations"] for c in it["commands"]]
    assert "301 302" in (played[-1]["result_summary"] or ""), played[-1]  # both ran during the agent's turn
    assert outcome.code == 0, outcome.output


# Kills pre_run's `sleep 301` and starts `sleep 302` under its PID (clone3's set_tid), as a daemon.
TAKE_OVER = """import ctypes, os, signal, struct, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
service = next(int(p) for p in filter(str.isdigit, os.listdir('/proc'))
               if open(f'/proc/{p}/cmdline', 'rb').read().split(b'\\0')[:2] == [b'sleep', b'301'])
os.kill(service, signal.SIGKILL)
wanted = (ctypes.c_int * 1)(service)
for _ in range(100):
    args = ctypes.create_string_buffer(struct.pack('11Q', 0, 0, 0, 0, signal.SIGCHLD, 0, 0, 0,
                                                   ctypes.addressof(wanted), 1, 0))
    pid = libc.syscall(435, args, 88)
    if pid == 0:
        os.setsid()
        null = os.open('/dev/null', os.O_RDWR)
        for fd in range(3):
            os.dup2(null, fd)
        os.execv('/bin/sleep', ['sleep', '302'])
    if pid > 0:
        break
    time.sleep(0.01)
print('took', pid)
"""


def test_a_daemon_cannot_pass_for_a_service_by_taking_its_pid(tmp_path: Path, system_cli: SystemCli) -> None:
    """A process may pick its PID (clone3 with CAP_CHECKPOINT_RESTORE): the agent killed pre_run's service and
    started its daemon under the service's PID, which the sweep kept, by its number, into the criteria."""
    calls = [
        {"tool": "Write", "path": "sleepers.py", "content": SLEEPERS},
        {"tool": "Write", "path": "take.py", "content": TAKE_OVER},
        {"tool": "Bash", "command": "python3 take.py; python3 sleepers.py"},
    ]
    check = {"type": "run_command", "command": "! python3 sleepers.py | grep -q 302", "description": "no daemon"}
    task = _with_a_service(tmp_path, "takeover", calls, check)
    outcome, _ = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output


def test_what_a_criterions_command_left_running_ends_before_the_next_criterion(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """A criterion runs the agent's code too (a hidden test importing it): a daemon that code left kept running
    into the next criterion, the staged checker included, and traced its command to set its exit code."""
    calls = [{"tool": "Write", "path": "sleepers.py", "content": SLEEPERS}]
    criteria = [
        {
            "type": "run_command",
            "command": "(setsid sleep 302 >/dev/null 2>&1 < /dev/null &); true",
            "description": "a",
        },
        {"type": "run_command", "command": "! python3 sleepers.py | grep -q 302", "description": "b"},
    ]
    task = replay_task_file(tmp_path / "tasks", "between", [{"calls": calls}], success_criteria=criteria)
    outcome, _ = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output


# What the agent's code, run by a criterion, leaves for every later python3: a .pth in the user site-packages.
PLANT_PTH = """import os, site
folder = site.getusersitepackages()
os.makedirs(folder, exist_ok=True)
open(os.path.join(folder, 'zz.pth'), 'w').write("import sys; sys.stdout.write('hijacked ')\\n")
"""


def test_a_pth_left_in_the_criteria_home_does_not_run_in_the_next_criterions_python(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """HOME (/tmp) stays from one criterion to the next: a `.pth` the agent's code left in `~/.local` ran in the
    next criterion's `python3`, a staged checker's included, and printed what it liked."""
    calls = [{"tool": "Write", "path": "plant.py", "content": PLANT_PTH}]
    criteria = [
        {"type": "run_command", "command": "python3 plant.py", "description": "runs the agent's code"},
        {
            "type": "run_command",
            "command": "python3 -c 'print(\"clean\")'",
            "expected_stdout": "clean",
            "description": "b",
        },
    ]
    task = replay_task_file(tmp_path / "tasks", "pth", [{"calls": calls}], success_criteria=criteria)
    outcome, _ = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output


def test_a_redone_evaluations_folder_is_private_again_while_it_runs(tmp_path: Path, system_cli: SystemCli) -> None:
    """`--retry-errors` reuses an evaluation's folder, which its first attempt had opened: the redo's sandbox was
    made and used (and, cut short, left) under a folder any user could reach."""
    task = task_file(tmp_path / "tasks", "again", agent={"type": "none"}, pre_run=[{"command": "sleep 2; exit 1"}])
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1 and run.result("again")["final_status"] == "ERROR", outcome.output
    folder = run.evaluation("again")
    assert stat.S_IMODE(folder.stat().st_mode) == stat.S_IMODE(folder.parent.stat().st_mode)
    redo = system_cli.start("run", "--retry-errors", run.path, env={}, stdout=subprocess.DEVNULL)
    seen = set()
    while redo.poll() is None:
        seen.add(stat.S_IMODE(folder.stat().st_mode))
        time.sleep(0.05)
    assert 0o700 in seen, [oct(mode) for mode in seen]
    assert stat.S_IMODE(folder.stat().st_mode) == stat.S_IMODE(folder.parent.stat().st_mode)
