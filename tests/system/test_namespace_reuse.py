"""A run's process namespaces, as the installed CLI uses them: started while it imports Dagster, and the one an
evaluation's sandbox step let go of serving its scoring step.

Issue 25 (item 4): a 40-row run started eight namespaces with its first
commands and eight again for its scoring step (each holder is a Python
program); both cost the run ~0.4 s. Inside a namespace, ``/proc/1`` is its
first process (the holder): its start time against the first command's says
when it was started, and a namespace's PID namespace names it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..support.helpers import agentless_task, criterion, write_task
from .conftest import SystemCli

# field 22 of /proc/<pid>/stat: the start time in clock ticks since boot (a process name without spaces: cut, python)
STARTED = "cut -d' ' -f22"
PRE_RUN = f"readlink /proc/self/ns/pid > ns_sandbox && {STARTED} /proc/1/stat > holder_ticks && {STARTED} /proc/self/stat > command_ticks"


def test_the_first_namespace_is_ready_before_the_run_and_serves_its_scoring_too(
    system_cli: SystemCli, tmp_path: Path
) -> None:
    checks = [criterion("run_command", command="readlink /proc/self/ns/pid > ns_scoring")]
    task = agentless_task(task_id="reuse", pre_run=[{"command": PRE_RUN}], success_criteria=checks)
    done = system_cli("run", write_task(tmp_path / "tasks", task), "--runs-dir", system_cli.runs, env={})
    assert done.code == 0, done.output
    (sandbox,) = {path.parent.resolve() for path in system_cli.runs.glob("*/**/sandbox/ns_scoring")}
    assert (sandbox / "ns_sandbox").read_text() == (sandbox / "ns_scoring").read_text()  # one namespace, two steps
    waited = int((sandbox / "command_ticks").read_text()) - int((sandbox / "holder_ticks").read_text())
    # started before Dagster's import (~1 s here), not with the first command (~0.05 s before it)
    assert waited / os.sysconf("SC_CLK_TCK") >= 0.25
