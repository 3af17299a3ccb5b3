"""The file sensor sees every file a task reads at run time, and its run keys survive a cursor reset.

The fingerprints are computed as a tick computes them (``current_fingerprints``
over real files); the run keys come from the sensor's own evaluation
(``sensor_tick``). tests/system/test_sensor_sweep_fixes.py runs the same
under `coder-eval dev`'s daemon.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from coder_eval_dagster.core import fingerprints as fingerprints_module
from coder_eval_dagster.core import reference as reference_module
from coder_eval_dagster.core.fingerprints import folder_digest
from coder_eval_dagster.core.run_spec import RunSpec
from coder_eval_dagster.defs.resources import CoderEvalSettings, RunOptionsConfig, RunSpecConfig
from coder_eval_dagster.defs.sensors import Cursor, current_fingerprints

from ..support.dagster_services import sensor_tick
from ..support.helpers import criterion, task_with, write, write_task

AGENTLESS = {"agent": {"type": "none"}, "initial_prompt": None, "sandbox": {"python": None}}
CHECKS = [criterion("file_exists", path="a.txt")]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True)


def commit(repo: Path, name: str, text: str) -> None:
    write(repo / name, text)
    git(repo, "add", name)
    git(repo, "commit", "--quiet", "-m", name)


def files_read_at_run_time(root: Path) -> Path:
    """A task per kind of file read at run time, each in its own folder; the tasks folder."""
    tasks = root / "tasks"
    write(tasks / "family/checked/check.py", "print(1)")
    write(tasks / "family/shared/lib.py", "X = 1")  # $TASK_DIR/../shared: staged with the task's folder
    run_command = criterion("run_command", command="python3 $TASK_DIR/check.py")
    write_task(tasks / "family/checked", task_with(task_id="checked", success_criteria=[run_command], **AGENTLESS))
    write(tasks / "referenced/ref/a.txt", "one")
    referenced = task_with(task_id="referenced", reference={"directory": "ref"}, success_criteria=CHECKS, **AGENTLESS)
    write_task(tasks / "referenced", referenced)
    write(tasks / "judged/rubric.md", "be strict")
    write(tasks / "judged/notes.md", "not read by the task")
    judge = criterion("llm_judge", prompt="grade it", files=["$TASK_DIR/rubric.md"])
    write_task(tasks / "judged", task_with(task_id="judged", success_criteria=[judge], **AGENTLESS))
    write(root / "plugin/skills/s/SKILL.md", "---\nname: s\n---\nuse it")
    agent = {"type": "claude-code", "plugins": [{"path": str(root / "plugin")}]}
    plugged = task_with(task_id="plugged", success_criteria=CHECKS, agent=agent, sandbox={"python": None})
    write_task(tasks / "plugged", plugged)
    (root / "repo").mkdir()
    git(root / "repo", "init", "--quiet")
    commit(root / "repo", "a.txt", "one")
    sandbox = {"python": None, "template_sources": [{"type": "repo", "url": str(root / "repo")}]}
    write_task(
        tasks / "cloned", task_with(task_id="cloned", success_criteria=CHECKS, **{**AGENTLESS, "sandbox": sandbox})
    )
    write(tasks / "linked/tpl/a.txt", "one")
    write(tasks / "linked/tpl/b.txt", "two")
    os.symlink("a.txt", tasks / "linked/tpl/current")
    sandbox = {"python": None, "template_sources": [{"type": "template_dir", "path": "tpl"}]}
    write_task(
        tasks / "linked", task_with(task_id="linked", success_criteria=CHECKS, **{**AGENTLESS, "sandbox": sandbox})
    )
    return tasks


def fingerprints_of(tasks: Path) -> dict[str, str]:
    current, skipped = current_fingerprints(RunSpec(task_paths=[str(tasks)]), logging.getLogger(__name__))
    assert not skipped
    return current


def repoint(link: Path, target: str) -> None:
    link.unlink()
    os.symlink(target, link)


def test_an_edit_of_a_file_a_task_reads_at_run_time_changes_that_tasks_fingerprint_only(tmp_path: Path) -> None:
    tasks = files_read_at_run_time(tmp_path)
    edits: list[tuple[Callable[[], object], set[str]]] = [
        (lambda: write(tasks / "family/checked/check.py", "print(2)"), {"checked"}),
        (lambda: write(tasks / "family/shared/lib.py", "X = 2"), {"checked"}),
        (lambda: write(tasks / "referenced/ref/a.txt", "two"), {"referenced"}),
        (lambda: write(tasks / "judged/rubric.md", "be lenient"), {"judged"}),
        (lambda: write(tasks / "judged/notes.md", "no task stages or reads it"), set()),
        (lambda: write(tmp_path / "plugin/skills/s/SKILL.md", "---\nname: s\n---\nuse it twice"), {"plugged"}),
        (lambda: commit(tmp_path / "repo", "b.txt", "a new commit"), {"cloned"}),
        (lambda: write(tmp_path / "repo/c.txt", "uncommitted: a clone has none of it"), set()),
        (lambda: repoint(tasks / "linked/tpl/current", "b.txt"), {"linked"}),
    ]
    before = fingerprints_of(tasks)
    assert len(before) == 6
    for edit, expected in edits:
        edit()
        after = fingerprints_of(tasks)
        assert {key.split("|")[0] for key in after if after[key] != before[key]} == expected, expected
        before = after


def test_task_dir_is_hashed_as_staged_once_a_tick_and_never_past_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tasks sharing a family folder hash it once; over the cap, the task's folder alone counts, as it alone is
    staged, and the walk stops at the cap."""
    tasks = tmp_path / "tasks"
    run_command = criterion("run_command", command="sh $TASK_DIR/check.sh")
    for name in ("one", "two", "three"):
        write(tasks / f"family/{name}/check.sh", "true")
        write_task(tasks / f"family/{name}", task_with(task_id=name, success_criteria=[run_command], **AGENTLESS))
    walked: list[Path] = []
    staged_digest = fingerprints_module.staged_digest

    def counted(source: Path, task_dir: Path | None) -> str | None:
        walked.append(source)
        return staged_digest(source, task_dir)

    monkeypatch.setattr(fingerprints_module, "staged_digest", counted)
    before = fingerprints_of(tasks)
    assert walked == [(tasks / "family").resolve()]  # one walk of the family folder for the three tasks

    monkeypatch.setattr(
        reference_module, "TASK_DIR_MAX_FILES", 4
    )  # the family holds 6 files: over the cap (one cap: staging's)
    alone = fingerprints_of(tasks)
    assert all(alone[key] != before[key] for key in before)
    write(tasks / "family/two/check.sh", "false")
    after = fingerprints_of(tasks)
    assert [key for key in after if after[key] != alone[key]] == ["two|default"]


def test_a_link_counts_by_its_target_never_followed(tmp_path: Path) -> None:
    folder = tmp_path / "tpl"
    write(folder / "a.txt", "one")
    write(tmp_path / "outside/b.txt", "two")
    os.symlink("a.txt", folder / "file-link")
    os.symlink(tmp_path / "outside", folder / "folder-link")
    digests = [folder_digest(folder)]
    repoint(folder / "file-link", "b.txt")
    digests.append(folder_digest(folder))
    repoint(folder / "folder-link", "../outside")
    digests.append(folder_digest(folder))
    assert len(set(digests)) == 3
    write(tmp_path / "outside/b.txt", "edited behind the link")
    assert folder_digest(folder) == digests[-1]


@pytest.fixture
def instance():
    with dg.instance_for_test() as test_instance:
        yield test_instance


def test_a_run_key_is_new_after_a_cursor_reset_and_the_same_for_the_same_cursor(tmp_path: Path, instance) -> None:
    """A -> B, the cursor reset, then A: the key of the first tick again was skipped by Dagster as done."""
    write_task(tmp_path / "tasks", task_with(task_id="alpha", success_criteria=CHECKS, **AGENTLESS), "alpha.yaml")
    settings = CoderEvalSettings(
        spec=RunSpecConfig(task_paths=[str(tmp_path / "tasks")]),
        options=RunOptionsConfig(runs_dir=str(tmp_path / "runs")),
    )
    first = sensor_tick(instance, settings, None)
    edit = [criterion("file_exists", path="b.txt")]
    write_task(tmp_path / "tasks", task_with(task_id="alpha", success_criteria=edit, **AGENTLESS), "alpha.yaml")
    edited = sensor_tick(instance, settings, first.cursor)
    assert [r.run_key for r in sensor_tick(instance, settings, first.cursor).run_requests] == [
        r.run_key for r in edited.run_requests
    ]  # evaluated again with its cursor (a retried tick): the same key
    write_task(tmp_path / "tasks", task_with(task_id="alpha", success_criteria=CHECKS, **AGENTLESS), "alpha.yaml")
    after_reset = sensor_tick(instance, settings, None)  # nothing evaluated here: every key runs
    keys = [r.run_key for tick in (first, edited, after_reset) for r in tick.run_requests]
    assert len(keys) == 3 and len(set(keys)) == 3, keys


def test_a_cursor_of_an_earlier_form_gives_the_same_keys_every_time() -> None:
    earlier = '{"digest": "d", "requests": 3}'
    assert Cursor.parse(earlier).run_key("x") == Cursor.parse(earlier).run_key("x")
    assert Cursor.parse(None).run_key("x") != Cursor.parse(None).run_key("x")  # a new cursor: a new epoch
