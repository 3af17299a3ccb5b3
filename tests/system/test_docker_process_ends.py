"""What a docker evaluation's commands leave running, and a container that goes away, through the installed CLI.

- A criterion's command's leftovers end with it, a fork bomb's too, as under tempdir: a `sleep &` ran into the
  next criterion, and a bomb held every pid of `max_pids` there; pre_run's service stays.
- A resumed run's scoring restarts the container a killed run was scoring in: the killed run's criterion went on
  writing into the sandbox, and the resumed criterion graded what it wrote.
- The container removed under an agent's command is the evaluation's ERROR: it was the tool call's error, and the
  criteria ran in a fresh container (SUCCESS).
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from ..support.helpers import write_task
from .conftest import SystemCli, only_run, replay_task_file, stop_group
from .test_docker_resume import no_container_left  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow

# Every process's command line, one a line, into seen.txt (the listing's own lines match none of the patterns).
LISTED = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done > seen.txt"
SERVICE = {"command": "echo kept > /tmp/kept; setsid nohup sleep 600 >/dev/null 2>&1 &"}
SERVICE_RUNS = "grep -q '^slee[p] 600 ' seen.txt"
# A criterion's command touching the file its wrapper leaves when what the command left could not be stopped (the
# wrapper's last argument): the harness restarts the container.
UNSTOPPABLE = "w=$(cut -d' ' -f4 /proc/$PPID/stat); touch \"$(tr '\\0' '\\n' < /proc/$w/cmdline | tail -n 1)\""


def _docker_task(folder: Path, task_id: str, image: str, **changes: Any) -> Path:
    data = {
        "task_id": task_id,
        "description": task_id,
        "agent": {"type": "none"},
        "sandbox": {"driver": "docker", "python": None, "image": image, "limits": {"max_pids": 64}},
        "pre_run": [SERVICE],
        **changes,
    }
    return write_task(folder, data, f"{task_id}.yaml")


def _criterion(description: str, command: str, **more: Any) -> dict[str, Any]:
    return {"type": "run_command", "command": command, "description": description, **more}


def _outcomes(result: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    return {c["description"]: (c["passed"], c["details"]) for c in result["success_criteria_results"]}


def _replayed(
    folder: Path, task_id: str, calls: list[dict[str, Any]], image: str, service: str, criteria: list[dict[str, Any]]
) -> Path:
    """A task whose replayed agent makes ``calls`` in a container where pre_run started ``service``."""
    sandbox = {"driver": "docker", "python": None, "image": image}
    return replay_task_file(
        folder, task_id, [{"calls": calls}], sandbox=sandbox, pre_run=[{"command": service}], success_criteria=criteria
    )


def _passed(system_cli: SystemCli, task: Path) -> dict[str, Any]:
    """The task's one evaluation through the installed CLI, which must succeed: its result."""
    outcome, run = system_cli.run(task, env={})
    result = run.result(task.stem)
    assert result["final_status"] == "SUCCESS", (_outcomes(result), outcome.output)
    return result


def test_what_a_criterion_leaves_running_ends_with_it_a_fork_bomb_too(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    bomb = "sleep 401 & (setsid sleep 402 &); bomb() { bomb | bomb & }; bomb"
    criteria = [  # three rounds: a child forked while its parent was being stopped outlived a sweep (1 in 4, loaded)
        criterion
        for round in range(3)
        for criterion in (
            _criterion(f"leaves a bomb {round}", bomb, timeout=5, weight=0),
            _criterion(f"ended {round}", f"{LISTED}; ! grep -e '^slee[p] 40' -e 'bom[b]' seen.txt"),
        )
    ] + [_criterion("the service stays", SERVICE_RUNS)]
    result = _passed(system_cli, _docker_task(tmp_path / "tasks", "leftovers", docker_image, success_criteria=criteria))
    assert "restarted" not in json.dumps(result)  # ended one by one: no restart was needed


def test_what_cannot_be_stopped_ends_with_a_restart_that_keeps_the_containers_files(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    criteria = [
        _criterion("unstoppable", UNSTOPPABLE),
        _criterion("every process ended, the files kept", f"test -f /tmp/kept && {LISTED} && ! {SERVICE_RUNS}"),
    ]
    result = _passed(system_cli, _docker_task(tmp_path / "tasks", "restarted", docker_image, success_criteria=criteria))
    assert "the container was restarted" in _outcomes(result)["unstoppable"][1]


def _waited_for(pattern: str, runs: Path, timeout: float = 120) -> Path:
    deadline = time.monotonic() + timeout
    while not (found := list(runs.glob(pattern))):
        assert time.monotonic() < deadline, f"no {pattern} under {runs}"
        time.sleep(0.1)
    return found[0]


# The first attempt ticks into the sandbox until it is killed; the next one passes if no tick comes meanwhile.
TICKING = (
    "hostname >> hosts; n=$(cat attempts 2>/dev/null || echo 0); echo $((n + 1)) > attempts; "
    'if [ "$n" = 0 ]; then while :; do echo tick >> ticks; sleep 0.2; done; fi; '
    'before=$(wc -l < ticks); sleep 2; test "$(wc -l < ticks)" = "$before"'
)


def test_a_resumed_scoring_ends_what_the_killed_runs_scoring_left_in_its_container(
    tmp_path: Path,
    system_cli: SystemCli,
    docker_image: str,
    no_container_left: None,  # noqa: F811 (the fixture)
) -> None:
    task = _docker_task(
        tmp_path / "tasks",
        "resumed",
        docker_image,
        success_criteria=[
            _criterion("nothing of the killed attempt runs on", TICKING, timeout=60),
            _criterion("the sandbox phase's container", "test -f /tmp/kept", weight=0),
        ],
    )
    with (tmp_path / "first-run.log").open("wb") as log:
        process = system_cli.start("run", task, "--runs-dir", system_cli.runs, env={}, stdout=log)
    try:
        _waited_for("20*/default/resumed/00/sandbox/ticks", system_cli.runs)
    finally:
        stop_group(process, signal.SIGKILL)
    run = only_run(system_cli.runs)

    outcome = system_cli("run", "--resume", run.path, env={}, timeout=180)

    result = run.result("resumed")
    assert result["final_status"] == "SUCCESS", (_outcomes(result), outcome.output)
    sandbox = run.evaluation("resumed") / "sandbox"
    assert (sandbox / "attempts").read_text() == "2\n"
    killed, resumed = (sandbox / "hosts").read_text().split()
    # the killed run's container, restarted: its files kept. (Another run starting meanwhile on this machine, a
    # test beside this one, may have swept it as an orphan first, as docs/running.md says: then a new one.)
    assert killed != resumed or _outcomes(result)["the sandbox phase's container"][0], _outcomes(result)


# Every sleeper's argument, one a line (pre_run's services: 301, and 303 it starts later; the agent's daemon: 302).
SLEEPING = "for p in /proc/[0-9]*; do (tr '\\0' ' ' < $p/cmdline) 2>/dev/null; echo; done | sed -n 's/^sleep \\([^ ]*\\) $/\\1/p'"


def test_what_the_agent_left_running_ends_before_the_criteria_and_pre_runs_services_stay(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    """Under docker a daemon the agent left ran on into the criteria, where it could trace their commands and set
    their exit codes (tempdir ends it). pre_run's services, and what they start after it, stay."""
    calls = [{"tool": "Bash", "command": f"(setsid sleep 302 >/dev/null 2>&1 < /dev/null &); sleep 1; {SLEEPING}"}]
    service = "sleep 301 >/dev/null 2>&1 & (sleep 0.5; sleep 303) >/dev/null 2>&1 &"  # 303: started after pre_run
    seen = "grep -qx 301 seen.txt && grep -qx 303 seen.txt && ! grep -qx 302 seen.txt"
    check = f"{SLEEPING} > seen.txt; {seen} || {{ cat seen.txt; exit 1; }}"
    task = _replayed(
        tmp_path / "tasks", "daemon", calls, docker_image, service, [_criterion("only the services run", check)]
    )
    result = _passed(system_cli, task)
    played = [c for it in result["iterations"] for c in it["commands"]]
    assert "302" in (played[-1]["result_summary"] or ""), played[-1]  # it ran during the agent's turn


# A process's own daemon: a grandchild in a session of its own, its output nowhere.
DAEMONIZED = """if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
null = os.open('/dev/null', os.O_RDWR)
for fd in range(3):
    os.dup2(null, fd)
"""
# A daemon that beats into /sandbox/beat, hidden as argv[1] says: a name holding a newline (/proc/PID/stat is
# read line by line) that fakes its parent (the keeper, a listed service; itself, a loop), or a leader that has
# exited while its thread runs on (it shows Z).
HIDING = (
    """import ctypes, os, sys, threading, time
def comm(pid):
    try:
        return open(f'/proc/{pid}/comm').read(), os.stat(f'/proc/{pid}').st_uid
    except OSError:
        return None
keeper = next(int(p) for p in os.listdir('/proc') if p.isdigit() and comm(p) == ('sleep\\n', 65534))
"""
    + DAEMONIZED
    + """def beat():
    while True:
        open('/sandbox/beat', 'w').write('x')
        time.sleep(0.05)
if sys.argv[1] == 'zombie':
    threading.Thread(target=beat).start()
    time.sleep(0.2)
    ctypes.CDLL(None).syscall(60, 0)
name = {'keeper': f'a) S {keeper}\\n', 'itself': f'a) S {os.getpid()}\\n', 'newline': 'x\\n'}[sys.argv[1]]
ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)
beat()
"""
)
STALE = "import os, sys, time; sys.exit(time.time() - os.path.getmtime('{}') < 0.6)"


@pytest.mark.parametrize(
    ("stage", "hiding"),
    [("agent", "keeper"), ("agent", "itself"), ("agent", "zombie"), ("criterion", "newline"), ("criterion", "zombie")],
)
def test_a_daemon_that_hides_from_the_sweeps_ends_and_pre_runs_service_stays(
    tmp_path: Path, system_cli: SystemCli, docker_image: str, stage: str, hiding: str
) -> None:
    """A process's name is its own: one holding a newline made the sweeps read other fields (a listed parent, a
    loop that hung the harness, no start time), and a leader that exited with a thread running showed Z, taken for
    dead (its pid held until the container was restarted, the service with it). Each ran on into the criteria."""
    start = f"python3 hiding.py {hiding}; sleep 0.5"  # (hidden by then)
    calls = [{"tool": "Write", "path": "hiding.py", "content": HIDING}, {"tool": "Bash", "command": start}]
    service = "setsid sh -c 'while :; do : > /sandbox/svc; sleep 0.2; done' >/dev/null 2>&1 < /dev/null &"
    started = [_criterion("starts it", start, weight=0)] if stage == "criterion" else []
    criteria = [
        *started,
        _criterion("it ended", f'sleep 1; python3 -c "{STALE.format("beat")}"'),
        _criterion("the service runs", f'! python3 -c "{STALE.format("svc")}"'),
    ]
    task = _replayed(
        tmp_path / "tasks", "hiding", calls[: 2 if stage == "agent" else 1], docker_image, service, criteria
    )
    result = _passed(system_cli, task)
    assert "restarted" not in json.dumps(result)  # ENDING did not give up (its 10 s): the service's check says so too


# A daemon that beats into /sandbox/beat and kills every sweep shell it sees (they run as its user).
SWEEP_KILLER = (
    """import os, signal, time
"""
    + DAEMONIZED
    + """while True:
    open('/sandbox/beat', 'w').write('x')
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            if b'.left' in open(f'/proc/{pid}/cmdline', 'rb').read() and int(pid) != os.getpid():
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    open('/sandbox/ready', 'w').close()  # (one pass done: its criterion's sweep shell is seen)
    time.sleep(0.005)
"""
)


UNTIL_READY = "for i in $(seq 400); do [ -e ready ] && break; sleep 0.05; done"  # (a loaded start: 20 s at most)


def test_a_daemon_that_kills_the_sweep_shells_still_ends(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    """The sweeps' shell is the commands' user's: a criterion's daemon killed it before it ended anything, and ran
    on into the next criteria. A sweep that did not end its way restarts the container (it ends everything)."""
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / "killer.py").write_text(SWEEP_KILLER)
    sandbox = {"driver": "docker", "python": None, "image": docker_image}
    sandbox["template_sources"] = [{"type": "template_dir", "path": str(tmp_path / "tpl")}]
    criteria = [
        _criterion("starts it", f"python3 killer.py; {UNTIL_READY}; sleep 0.3", weight=0),
        _criterion("it ended", f'sleep 1; python3 -c "{STALE.format("beat")}"'),
    ]
    task = _docker_task(tmp_path / "tasks", "killer", docker_image, sandbox=sandbox, success_criteria=criteria)
    result = _passed(system_cli, task)
    assert _outcomes(result)["starts it"][0] is False  # its sweep shell was killed: the command's exit is 137


# Leaves a process no signal but SIGKILL moves: the parent of a vfork whose child stopped before it execs waits
# (state D) for ever; a STOP does not stop it, so the sweep of what the agent left gives up (its 10 s).
IN_VFORK = """import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
if os.fork() == 0:
    os.setsid()
    if libc.syscall(58) == 0:  # vfork (x86-64)
        libc.kill(libc.getpid(), signal.SIGSTOP)
        libc._exit(0)
    os._exit(0)
"""


def test_services_ended_with_what_the_agent_left_are_said_in_the_results_warnings(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    """What the agent left could not be stopped: the container was restarted before the criteria, which ended
    pre_run's service too, and the criteria ran without it with nothing in task.json saying why (a log line)."""
    calls = [{"tool": "Write", "path": "vf.py", "content": IN_VFORK}, {"tool": "Bash", "command": "python3 vf.py"}]
    service = "setsid sh -c 'while :; do : > /sandbox/svc; sleep 0.2; done' >/dev/null 2>&1 < /dev/null &"
    ended = _criterion("the service ended too", f'sleep 1; python3 -c "{STALE.format("svc")}"')
    task = _replayed(tmp_path / "tasks", "unstoppable-agent", calls, docker_image, service, [ended])
    result = _passed(system_cli, task)
    note = "the container was restarted, which ended pre_run's services too"
    assert any(note in warning for warning in result["warnings"]), result["warnings"]


# Tries to trace the sweep shell its criterion's command runs under (it could set the shell's exit code): says how
# it went in /sandbox/traced.
TRACER = """import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
for pid in filter(str.isdigit, os.listdir('/proc')):
    if b'.left' in open(f'/proc/{pid}/cmdline', 'rb').read():
        attached = libc.ptrace(16, int(pid), None, None) == 0
        if attached:
            os.waitpid(int(pid), 0)
            libc.ptrace(17, int(pid), None, None)
        open('/sandbox/traced', 'w').write('attached' if attached else 'refused')
"""


def test_a_capture_folder_made_unwritable_gives_no_verdict(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    """The agent made the capture folder unwritable: a criterion's shell exited 2 before its command ran, read as
    the command's exit code with no output, and a criterion expecting 2 passed."""
    calls = [{"tool": "Bash", "command": "chmod 555 /run/coder-eval"}]
    task = replay_task_file(
        tmp_path / "tasks",
        "unwritable",
        [{"calls": calls}],
        sandbox={"driver": "docker", "python": None, "image": docker_image},
        success_criteria=[_criterion("expects 2", "touch ran; exit 2", expected_exit_code=2)],
    )
    outcome, run = system_cli.run(task, env={})
    (criterion,) = run.result("unwritable")["success_criteria_results"]
    assert not criterion["passed"] and "output is not known" in criterion["error"], (criterion, outcome.output)
    assert not (run.evaluation("unwritable") / "sandbox" / "ran").exists()


def test_the_sweep_shell_cannot_be_traced(tmp_path: Path, system_cli: SystemCli, docker_image: str) -> None:
    """A process of the commands' user traced the sweep shell (same uid): it could make it exit 0 having ended
    nothing, and set the criterion's exit code."""
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / "tracer.py").write_text(TRACER)
    sandbox = {"driver": "docker", "python": None, "image": docker_image}
    sandbox["template_sources"] = [{"type": "template_dir", "path": str(tmp_path / "tpl")}]
    criteria = [_criterion("tries", "python3 tracer.py; sleep 0.5")]
    task = _docker_task(tmp_path / "tasks", "traced", docker_image, sandbox=sandbox, success_criteria=criteria)
    outcome, run = system_cli.run(task, env={})
    assert (run.evaluation("traced") / "sandbox" / "traced").read_text() == "refused", outcome.output


def test_the_container_removed_under_an_agents_command_is_the_evaluations_error(
    tmp_path: Path, system_cli: SystemCli, docker_image: str
) -> None:
    import docker

    task = replay_task_file(
        tmp_path / "tasks",
        "vanished",
        [{"calls": [{"tool": "Bash", "command": "touch started.txt; sleep 120"}], "text": "done"}],
        sandbox={"driver": "docker", "python": None, "image": docker_image},
        success_criteria=[{"type": "file_exists", "path": "started.txt", "description": "started"}],
    )
    process = system_cli.start("run", task, "--runs-dir", system_cli.runs, env={})
    try:
        started = _waited_for("20*/default/vanished/00/sandbox/started.txt", system_cli.runs)
        container = json.loads((started.parent.parent / "container.json").read_text())["id"]
        docker.from_env(timeout=60).api.remove_container(container, force=True)
        out, _ = process.communicate(timeout=120)
    finally:
        stop_group(process)
    result = only_run(system_cli.runs).result("vanished")
    assert result["final_status"] == "ERROR", (result["error_message"], out.decode(errors="replace"))
    assert "container is gone" in result["error_message"]
