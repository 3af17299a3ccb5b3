"""run.md's link to the run viewer, from wherever the Markdown is read, through the installed CLI: it named
`index.html` beside the text even when printed, written with -o elsewhere, or for a folder with no viewer."""

from __future__ import annotations

import re
import shutil

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow
LINK = re.compile(r"\[run viewer\]\(([^)]+)\)")


def test_the_viewer_link_resolves_from_where_the_markdown_is_read(system_cli: SystemCli) -> None:
    task = task_file(system_cli.folder / "tasks", "plain", agent={"type": "none"})
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    (in_run,) = LINK.findall((run.path / "run.md").read_text())
    assert (run.path / in_run).is_file()

    printed = system_cli("report", run.path, env={})  # read from the command's folder: `> report.md` there
    (from_here,) = LINK.findall(printed.out)
    assert (system_cli.folder / from_here).resolve() == (run.path / "index.html").resolve()

    elsewhere = system_cli.folder / "reports" / "run.md"
    elsewhere.parent.mkdir()
    assert system_cli("report", run.path, "-o", elsewhere, env={}).code == 0
    (from_there,) = LINK.findall(elsewhere.read_text())
    assert (elsewhere.parent / from_there).resolve() == (run.path / "index.html").resolve()

    written_by_coder_eval = system_cli.folder / "theirs"  # a report folder with no plan and no viewer
    shutil.copytree(run.path, written_by_coder_eval)
    for name in ("run_plan.json", "snapshot.pickle", "index.html", "run.md"):
        (written_by_coder_eval / name).unlink()
    rebuilt = system_cli("report", written_by_coder_eval, "--rebuild", env={})
    assert rebuilt.code == 0, rebuilt.output
    assert not LINK.findall((written_by_coder_eval / "run.md").read_text())
