"""The replay agent's file tools through the installed CLI, as a hostile recorded session would try them.

Write, Edit and Read are carried out by the harness itself on the sandbox
folder on the host (as root on CI), while the session's own processes, in the
sandbox, may still be changing it: a link they make to a host file, or swap in
for a file again and again, must never be followed out, and a FIFO must be an
error at once (a blocking open hung the run past task_timeout and SIGTERM).
"""

from __future__ import annotations

from pathlib import Path

from .conftest import SystemCli, replay_task_file

# Swaps f between a regular file and a link to the host file, as fast as it can, for as long as the writes last.
SWAPPER = """import os, sys, time
end = time.time() + 20
while time.time() < end:
    try:
        os.symlink(sys.argv[1], 's'); os.rename('s', 'f')
        open('r', 'w').close(); os.rename('r', 'f')
    except OSError:
        pass
"""


def test_a_replayed_file_tool_never_writes_a_host_file_through_a_link_nor_waits_on_a_fifo(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    host = tmp_path / "host"
    host.mkdir()
    secret = host / "secret.txt"
    secret.write_text("host\n")
    setup = f"ln -s {secret} link && ln -s {host} folder && mkfifo fifo && echo made"
    racing = [{"tool": "Write", "path": "f", "content": f"write {i}\n"} for i in range(40)]
    calls = [
        {"tool": "Write", "path": "swap.py", "content": SWAPPER},
        {"tool": "Bash", "command": setup},
        {"tool": "Write", "path": "link", "content": "x"},
        {"tool": "Edit", "path": "link", "old": "host", "new": "x"},
        {"tool": "Write", "path": "folder/new.txt", "content": "x"},
        {"tool": "Edit", "path": "fifo", "old": "a", "new": "b"},
        {"tool": "Write", "path": "fifo", "content": "x"},
        {"tool": "Bash", "command": f"setsid python3 swap.py {secret} >/dev/null 2>&1 </dev/null & sleep 0.3"},
        *racing,
    ]
    task = replay_task_file(
        tmp_path / "tasks",
        "links",
        [{"calls": calls}],
        run_limits={"task_timeout": 60},
        success_criteria=[{"type": "file_exists", "path": "swap.py", "description": "played"}],
    )
    outcome, run = system_cli.run(task, env={}, timeout=120)
    assert secret.read_text() == "host\n" and sorted(p.name for p in host.iterdir()) == ["secret.txt"]
    assert outcome.code == 0, outcome.output
    played = [c for it in run.result("links")["iterations"] for c in it["commands"]]
    summary = {(c["tool_name"], c["parameters"]["path"]): c for c in played[:7] if "path" in c["parameters"]}
    for path in ("link", "folder/new.txt"):
        assert summary[("Write", path)]["result_status"] == "error"
        assert "leaves the sandbox" in summary[("Write", path)]["result_summary"]
    assert summary[("Edit", "link")]["result_status"] == "error"
    for tool in ("Edit", "Write"):
        assert summary[(tool, "fifo")]["result_summary"] == "not a regular file: fifo"
    assert len(played) == len(calls) and all(c["result_status"] in ("success", "error") for c in played)
