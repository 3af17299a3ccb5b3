"""The process namespaces of evaluations: ended by folder from any process, swept, reused when clean, out of reach."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from coder_eval_dagster.core.layout import NAMESPACE_FILE
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.sandbox import containment
from coder_eval_dagster.core.sandbox.containment import release
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox, prewarm_namespaces

from ..support.helpers import evaluate_task

# Opens each path given (opening /proc/<pid>/mem already needs the right to trace the process).
PROBE = """
import os, sys
for path in sys.argv[1:]:
    try:
        os.close(os.open(path, os.O_RDONLY))
        print("OPENED", path)
    except OSError as exc:
        print("closed", exc.errno)
"""


def _sandbox(folder: Path) -> TempdirSandbox:
    box = TempdirSandbox(folder / "sandbox", SandboxConfig.model_validate({"python": None}))
    box.create(folder)
    (box.root / "probe.py").write_text(PROBE)
    return box


def _entering(monkeypatch: pytest.MonkeyPatch, spawner_after: int) -> None:
    """Commands enter through nsenter before a namespace's ``spawner_after``-th; no spare left by another test."""
    monkeypatch.setattr(containment, "SPAWNER_AFTER", spawner_after)
    containment.end_spare()


def _finish(box: TempdirSandbox) -> None:
    release(box.root.parent)
    containment.end_spare()


def _recorded(folder: Path) -> bool:
    """Whether the evaluation's folder names a namespace serving it (the record is emptied when none does)."""
    record = folder / NAMESPACE_FILE
    return record.exists() and bool(record.read_text())


def _alive(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True).returncode == 0


def test_another_process_ends_an_evaluation_by_its_folder(tmp_path: Path) -> None:
    marker = f"300.{uuid.uuid4().int % 10**9}"
    box = _sandbox(tmp_path / "run")
    assert box.run(f"setsid sleep {marker} &", timeout=10).ok
    assert _alive(marker)
    folder = str(box.root.parent)
    code = f"from pathlib import Path; from coder_eval_dagster.core.sandbox import containment as c; c.release(Path({folder!r}))"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
    assert not _alive(marker) and not _recorded(box.root.parent)
    release(box.root.parent)  # this process's own bookkeeping: nothing left to kill


def test_idle_namespaces_are_swept_and_busy_ones_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(containment, "SWEEP_ABOVE", 3)
    marker = f"300.{uuid.uuid4().int % 10**9}"
    busy, agent, idle = (_sandbox(tmp_path / name) for name in ("busy", "agent", "idle"))
    assert busy.run(f"setsid sleep {marker} &", timeout=10).ok
    (tmp_path / "home").mkdir()
    agent.agent_launcher(tmp_path / "home")
    assert idle.run("true", timeout=10).ok
    _sandbox(tmp_path / "new").run("true", timeout=10)  # a fourth namespace: the sweep runs first
    assert not _recorded(idle.root.parent)  # nothing ran in it any more: ended
    assert _recorded(agent.root.parent) and _recorded(busy.root.parent) and _alive(marker)
    for name in ("busy", "agent", "idle", "new"):
        release(tmp_path / name)
    assert not _alive(marker)


def test_an_agents_background_processes_last_until_its_evaluation_ends(tmp_path: Path, api) -> None:
    from ..support.fake_anthropic import Script, Turn

    marker = f"300.{uuid.uuid4().int % 10**9}"
    api(Script([Turn(tools=[("Bash", {"command": f"setsid sleep {marker} >/dev/null 2>&1 &"})]), Turn(text="ok")]))
    still_running = {"type": "run_command", "command": f"pgrep -f 'sleep {marker}'", "description": "daemon"}
    result = evaluate_task(
        tmp_path,
        {
            "task_id": "t",
            "description": "d",
            "initial_prompt": "start a daemon",
            "sandbox": {"python": None},
            "agent": {"type": "claude-code", "permission_mode": "bypassPermissions", "model": "claude-test"},
            "success_criteria": [still_running],
        },
    )
    assert result.final_status == "SUCCESS", (result.error, result.criteria)  # the criterion saw it, in the namespace
    assert not _alive(marker)  # and the end of the evaluation ended it


# Kernel keyring calls as a command makes them (python3 -c '...': its strings in double quotes).
KEYCTL_PRELUDE = (
    "import ctypes, os; L = ctypes.c_long; c = ctypes.CDLL(None); c.syscall.restype = L; "
    'K = {"x86_64": 250, "aarch64": 219}[os.uname().machine]; A = {"x86_64": 248, "aarch64": 217}[os.uname().machine]; '
    "rings = [c.syscall(K, L(22), L(-1), L(-2)), -4]; "  # the persistent keyring (linked here), the user keyring
)
KEYS_LEFT = (
    KEYCTL_PRELUDE
    + '[c.syscall(A, b"user", b"note", b"from-an-evaluation", ctypes.c_size_t(18), L(r)) for r in rings]; '
    'c.syscall(K, L(5), L(-4), L(0x0B0B0B0B)); print("left")'  # KEYCTL_SETPERM: no write on the user keyring
)
KEYS_FOUND = (
    KEYCTL_PRELUDE + 'found = [c.syscall(K, L(10), L(r), b"user", b"note", L(0)) for r in rings]; '  # KEYCTL_SEARCH
    'print("found", sum(f >= 0 for f in found))'
)


def test_a_clean_namespace_serves_the_next_evaluation_and_a_dirty_one_never(tmp_path: Path) -> None:
    """Reuse only when nothing is left running; what one evaluation saw of the namespace, the next does not."""
    first = _sandbox(tmp_path / "first")
    assert first.run("echo first > /tmp/left-behind && echo first > first-was-here", timeout=10).ok
    pid_file = (first.root.parent / NAMESPACE_FILE).read_text()
    release(first.root.parent)
    second = _sandbox(tmp_path / "second")
    seen = second.run("ls /tmp; ls /sandbox; mount -t tmpfs none /tmp", timeout=10)
    assert (second.root.parent / NAMESPACE_FILE).read_text() == pid_file  # the same namespace, now the second's
    assert "left-behind" not in seen.stdout and "first-was-here" not in seen.stdout  # a fresh /tmp, its own sandbox
    # an empty /tmp or /dev/shm carries no message either: its times and extended attributes are new too
    leave = "import os\nfor d in ('/tmp', '/dev/shm'): os.setxattr(d, 'user.note', b'from second'); os.utime(d, (1, 2))"
    assert second.run(f'python3 -c "{leave}"', timeout=10).ok
    release(second.root.parent)
    after = _sandbox(tmp_path / "after")
    look = "import os\nfor d in ('/tmp', '/dev/shm'): print(os.listxattr(d), os.stat(d).st_mtime > 2)"
    assert after.run(f'python3 -c "{look}"', timeout=10).stdout == "[] True\n[] True\n"
    assert (after.root.parent / NAMESPACE_FILE).read_text() == pid_file
    # nor its kernel keyrings: a key in the persistent keyring, and one in a user keyring it made read-only
    assert after.run(f"python3 -c '{KEYS_LEFT}'", timeout=10).stdout == "left\n"
    release(after.root.parent)
    keys = _sandbox(tmp_path / "keys")
    assert keys.run(f"python3 -c '{KEYS_FOUND}'", timeout=10).stdout == "found 0\n"
    release(keys.root.parent)
    second = _sandbox(tmp_path / "second-again")
    assert seen.exit_code != 0 and "permission denied" in seen.stderr  # root in there cannot mount
    marker = f"300.{uuid.uuid4().int % 10**9}"
    assert second.run(f"setsid sleep {marker} &", timeout=10).ok
    release(second.root.parent)
    assert not _alive(marker)  # ended with its daemon, not kept
    third = _sandbox(tmp_path / "third")
    assert third.run("true", timeout=10).ok
    assert (third.root.parent / NAMESPACE_FILE).read_text() != pid_file
    release(third.root.parent)
    containment.end_spare()


def test_the_namespace_init_shows_no_credential_of_the_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A library caller or a Dagster daemon may hold keys in its environment: the init never gets them."""
    containment.end_spare()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-planted-0123456789")
    box = _sandbox(tmp_path / "e")
    assert box.run("true", timeout=10).ok
    starter = containment._namespaces[Path(os.path.abspath(tmp_path / "e"))].starter.pid
    (init,) = Path(f"/proc/{starter}/task/{starter}/children").read_text().split()
    assert [v.split(b"=")[0] for v in Path(f"/proc/{init}/environ").read_bytes().split(b"\0") if v] == [b"PATH"]
    _finish(box)


@pytest.mark.parametrize("spawner_after", [0, 100], ids=["spawner", "nsenter"])
def test_commands_cannot_trace_or_read_the_namespace_init_or_its_spawner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawner_after: int
) -> None:
    """Root in the namespace, but without CAP_SYS_PTRACE: the init's memory, environment, descriptors (one of
    them holds the host's mount namespace) and root stay closed; without CAP_SYS_ADMIN, /proc stays the
    namespace's own (unmounting it to see the host's fails)."""
    _entering(monkeypatch, spawner_after)
    box = _sandbox(tmp_path / "e")
    targets = ["/proc/1/mem", "/proc/1/environ", "/proc/1/fd/3", "/proc/1/root/etc/hostname", "/proc/1/ns/mnt"]
    done = box.run(f"python3 probe.py {' '.join(targets)}; umount /proc && echo UNMOUNTED", timeout=30)
    assert "OPENED" not in done.stdout and done.stdout.count("closed") == len(targets), done.stdout
    assert "UNMOUNTED" not in done.stdout and "must be superuser" in done.stderr
    _finish(box)


def test_commands_start_through_a_spawner_the_namespace_cannot_see(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spawner forks the commands into the PID namespace without being in it: nothing inside reaches it."""
    _entering(monkeypatch, 0)
    box = _sandbox(tmp_path / "e")
    done = box.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; exit 5", timeout=10)
    assert done.exit_code == 5 and "coder-eval-spawner" not in done.stdout and "nsenter" not in done.stdout
    namespace = containment._namespaces[Path(os.path.abspath(tmp_path / "e"))]
    spawner = namespace.spawner
    assert spawner is not None and spawner.process.poll() is None
    inside = box.run("readlink /proc/self/ns/pid /proc/self/ns/mnt", timeout=10).stdout.split()
    holder = f"/proc/{namespace.holder.pid}/ns"
    assert inside == [os.readlink(f"{holder}/pid"), os.readlink(f"{holder}/mnt")]  # born inside, in its view
    _finish(box)
    assert spawner.process.poll() is not None  # ended with its namespace


@pytest.mark.parametrize("spawner_after", [0, 100], ids=["spawner", "nsenter"])
def test_a_command_times_out_with_its_whole_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawner_after: int
) -> None:
    _entering(monkeypatch, spawner_after)
    marker = f"300.{uuid.uuid4().int % 10**9}"
    box = _sandbox(tmp_path / "e")
    done = box.run(f"sleep {marker} & sleep {marker}", timeout=1)
    assert done.timed_out and done.exit_code is None and not _alive(marker)
    assert box.run("echo again", timeout=10).stdout == "again\n"  # the next command runs
    assert box.run("printf 'a\\0b'", timeout=10).error is None  # a NUL written is fine...
    assert "could not start" in (box.run("echo a\0b", timeout=10).error or "")  # ...one in the command is not
    _finish(box)


def test_ending_a_namespace_under_a_running_spawned_command_is_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder goes first (the kernel kills everyone inside), then the spawner: no wait on a lost command."""
    import threading
    import time

    _entering(monkeypatch, 0)
    box = _sandbox(tmp_path / "e")
    marker = f"300.{uuid.uuid4().int % 10**9}"
    runner = threading.Thread(target=box.run, args=(f"sleep {marker}", 60))
    runner.start()
    deadline = time.monotonic() + 10
    while not _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    start = time.monotonic()
    release(box.root.parent)
    runner.join(10)
    assert not runner.is_alive() and not _alive(marker) and time.monotonic() - start < 5
    containment.end_spare()


def test_a_failed_spawner_leaves_the_namespace_to_nsenter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spawner that died fails the command it was asked to start; the namespace's next ones enter with nsenter."""
    _entering(monkeypatch, 0)
    box = _sandbox(tmp_path / "e")
    assert box.run("true", timeout=10).ok  # the namespace and its spawner, with their pipes, are there
    open_fds = len(os.listdir("/proc/self/fd"))
    assert "could not start" in (box.run("echo a\0b", timeout=10).error or "")
    assert len(os.listdir("/proc/self/fd")) == open_fds  # refused before any pipe was made
    spawner = containment._namespaces[Path(os.path.abspath(tmp_path / "e"))].spawner
    assert spawner is not None
    spawner.process.kill()
    spawner.process.wait()
    assert "spawner" in (box.run("true", timeout=10).error or "")
    assert box.run("echo via nsenter", timeout=10).stdout == "via nsenter\n"
    _finish(box)


def test_a_port_listened_on_again_waits_for_a_copy_of_the_last_listener() -> None:
    """A process the harness starts holds a copy of every descriptor from fork to exec, so a listener one
    evaluation closed can outlive its close for a moment; the next evaluation's listen on that port waits."""
    namespace = containment._start(network=True)
    try:
        first = namespace.holder.listen(8123)
        with subprocess.Popen(["sleep", "0.5"], pass_fds=[first.fileno()]):  # the copy, held for a while
            first.close()
            second = namespace.holder.listen(8123)  # refused (EADDRINUSE) while the copy was open, before
            second.close()
    finally:
        containment._end(namespace)


def _holders() -> set[int]:
    """This process's namespace starters (``unshare``) still running."""
    found = subprocess.run(["pgrep", "-P", str(os.getpid()), "-x", "unshare"], capture_output=True, text=True)
    return {int(pid) for pid in found.stdout.split()}


def test_prewarmed_namespaces_serve_the_next_evaluations_until_the_run_ends(tmp_path: Path) -> None:
    """What the CLI starts while it imports Dagster is what the first evaluations take; the run's context ends what
    is left idle when the run is over in this process."""
    containment.end_spare()
    before = _holders()
    config = SandboxConfig.model_validate({"python": None})
    filling = prewarm_namespaces([config] * 3, workers=2)  # as many as run at once
    assert filling is not None
    filling.join(timeout=30)
    warm = _holders() - before
    assert len(warm) == 2
    box = _sandbox(tmp_path / "a")
    inside = box.run("readlink /proc/self/ns/pid", timeout=10).stdout.strip()
    assert inside in {os.readlink(f"/proc/{pid}/ns/pid_for_children") for pid in warm}  # one of the two
    assert containment._namespaces[Path(os.path.abspath(tmp_path / "a"))].spawner is not None  # from its first
    release(box.root.parent)  # back to the spares
    assert _holders() - before == warm
    RunContext.create().close()
    assert not _holders() - before


def test_a_prewarm_that_outlives_its_run_keeps_nothing() -> None:
    containment.end_spare()
    before = _holders()
    filling = containment.prewarm({False: 3})
    containment.end_spare()  # the run ended (a failure at start) while the namespaces were starting
    filling.join(timeout=30)
    assert not _holders() - before


def test_a_spawner_closed_under_a_waiting_command_is_a_lost_command_not_a_traceback() -> None:
    """An interrupt ends the namespaces (their spawners closed) while pool threads wait for their commands' exits:
    the wait raised OSError (EBADF) and the evaluation logged a traceback."""
    import socket

    from coder_eval_dagster.core.sandbox.spawner import Spawner, SpawnError

    spawner = Spawner.__new__(Spawner)  # its socket, as the interrupt left it
    spawner.socket, spawner.broken = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET), False
    spawner.socket.close()
    with pytest.raises(SpawnError, match="its namespace ended"):
        spawner.exit_status()
    assert spawner.broken
