"""run.md's link to the run viewer through the installed CLI: relative to the run folder, as every link of run.md,
and none for a folder that has no viewer (coder_eval's), where it named a page that is not there."""

from __future__ import annotations

import re
import shutil

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow
LINK = re.compile(r"\[run viewer\]\(([^)]+)\)")


def test_the_viewer_link_is_there_only_when_the_viewer_is(system_cli: SystemCli) -> None:
    task = task_file(system_cli.folder / "tasks", "plain", agent={"type": "none"})
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    (in_run,) = LINK.findall((run.path / "run.md").read_text())
    assert (run.path / in_run).is_file()
    printed = system_cli("report", run.path, env={})
    assert LINK.findall(printed.out) == [in_run]

    written_by_coder_eval = system_cli.folder / "theirs"  # a report folder with no plan and no viewer
    shutil.copytree(run.path, written_by_coder_eval)
    for name in ("run_plan.json", "snapshot.pickle", "index.html", "run.md"):
        (written_by_coder_eval / name).unlink()
    rebuilt = system_cli("report", written_by_coder_eval, "--rebuild", env={})
    assert rebuilt.code == 0, rebuilt.output
    assert not LINK.findall((written_by_coder_eval / "run.md").read_text())
