"""Forms the released coder_eval (0.12.16) accepts, through the installed ``coder-eval``: an explicit null on each
list or mapping field it types Optional (read as the field not given), ``run_command.read_only``, the sandbox's
legacy ``additional_ignore_patterns``, and the empty ``docker.build`` block its resolved configs dump. Its own
``plan`` accepts every file here (the oracle test, skipped without Python 3.13); ours validates them, and runs one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..support.helpers import write, write_task
from . import test_coder_eval_oracle as release
from .conftest import SystemCli

pytestmark = pytest.mark.xdist_group("coder-eval-oracle")  # one worker: the oracle's install runs once
oracle = release.oracle  # the released coder-eval, installed by its script (a skip without Python 3.13)

EMPTY_BUILD: dict[str, Any] = {"buildkit": None, "args": {}, "secrets": [], "extra_args": []}  # as the release dumps it
NULL_FACETS = {"verb": "get", "positional": None, "flags": None}


def _nulls_task(folder: Path) -> Path:
    """An agentless task giving null to every Optional list or mapping of the release's agent, sandbox and criteria
    that holds one, reading its template through the legacy ignore name; it passes when each reads as not given."""
    write(folder / "template/keep.txt", "keep\n")
    write(folder / "template/drop.log", "left out\n")
    return write_task(
        folder,
        {
            "task_id": "released_nulls",
            "description": "the release's nulls",
            "agent": {"type": "none", "disallowed_tools": None},
            "sandbox": {
                "python": None,
                "template_sources": [{"type": "template_dir", "path": "template"}],
                "mock_path_dirs": None,
                "record_cli": None,
                "additional_ignore_patterns": ["*.log"],
                "docker": {"build": EMPTY_BUILD},
            },
            "pre_run": [{"command": 'mkdir -p cli_mocks && echo \'{"argv": ["get"]}\' > cli_mocks/calls.jsonl'}],
            "success_criteria": [
                {
                    "type": "file_contains",
                    "path": "keep.txt",
                    "includes": ["keep"],
                    "excludes": None,
                    "description": "k",
                },
                {"type": "run_command", "command": "test ! -e drop.log", "read_only": True, "description": "no log"},
                {"type": "cli_called", **NULL_FACETS, "suite_thresholds": None, "description": "get was called"},
            ],
        },
        "released_nulls.yaml",
    )


def _shim_task(folder: Path) -> Path:
    """A record_cli response rule with the release's null facets."""
    shim = {"tool": "uip", "responses": [{"when": NULL_FACETS, "stdout": "ok"}]}
    return write_task(
        folder,
        {
            "task_id": "released_shim_nulls",
            "description": "a response rule's nulls",
            "agent": {"type": "none"},
            "sandbox": {"python": None, "record_cli": [shim]},
            "pre_run": [{"command": "echo a > a.txt"}],
            "success_criteria": [{"type": "file_exists", "path": "a.txt", "description": "a"}],
        },
        "released_shim_nulls.yaml",
    )


def _experiments(folder: Path) -> list[Path]:
    """Experiments nulling the defaults' and variants' lists, and the defaults block itself."""
    listed: dict[str, Any] = {
        "experiment_id": "released-nulls",
        "defaults": {
            "pre_run": None,
            "post_run": None,
            "template_sources": None,
            "prompt_mutations": None,
            "run_limits": None,
        },
        "variants": [
            {"variant_id": "a", "template_sources": None, "prompt_mutations": None, "run_limits": None, "agent": None}
        ],
    }
    bare = {"experiment_id": "no-defaults", "defaults": None, "variants": [{"variant_id": "a"}]}
    return [write_task(folder, listed, "listed.yaml"), write_task(folder, bare, "bare.yaml")]


def _project(folder: Path) -> tuple[list[Path], list[Path]]:
    return [_nulls_task(folder / "tasks"), _shim_task(folder / "tasks")], _experiments(folder / "experiments")


def test_the_released_forms_validate_and_read_as_not_given(system_cli: SystemCli) -> None:
    tasks, experiments = _project(system_cli.folder)
    for task in tasks:
        checked = system_cli("validate", task, env={})
        assert checked.code == 0, checked.output  # before: disallowed_tools, mock_path_dirs... refused
    for experiment in experiments:
        checked = system_cli("validate", tasks[0], "-e", experiment, env={})
        assert checked.code == 0, checked.output  # before: "Input should be a valid list", defaults: a mapping

    outcome, run = system_cli.run(tasks[0], env={})
    assert outcome.code == 0, outcome.output
    result = run.result("released_nulls")
    assert result["final_status"] == "SUCCESS", result["success_criteria_results"]
    sandbox = result["task_config"]["resolved"]["sandbox"]
    assert sandbox["ignore_patterns"] == ["*.log"]  # the legacy name, read as ignore_patterns: drop.log not copied
    assert sandbox.get("mock_path_dirs", []) == [] and sandbox.get("record_cli", []) == []


def test_a_build_block_that_asks_for_something_is_still_refused(system_cli: SystemCli) -> None:
    task = _nulls_task(system_cli.folder)
    text = task.read_text().replace("args: {}", "args: {VERSION: '1'}")
    refused = system_cli.invalid(write(task, text))
    assert "sandbox.docker.build: not supported: images are not built here" in refused.err, refused.err


def test_the_release_plans_every_file(oracle: Path, system_cli: SystemCli) -> None:
    """The forms are the release's own: its ``plan`` accepts each file ours validates above."""
    tasks, experiments = _project(system_cli.folder)
    planned = [release.run_oracle(oracle, system_cli, "plan", *tasks)]
    planned += [release.run_oracle(oracle, system_cli, "plan", tasks[0], "-e", path) for path in experiments]
    for outcome in planned:
        assert outcome.returncode == 0 and "All tasks are valid!" in outcome.stdout, outcome.stdout + outcome.stderr


def test_a_plugin_path_that_holds_no_plugin_is_warned_of(system_cli: SystemCli) -> None:
    """Pointed one level too deep (at its skills/) or at any other folder, a plugin offered nothing and the
    skill-on variant ran as skill-off, validate saying OK."""
    plugin = system_cli.folder / "plugins/myplug"
    write(plugin / ".claude-plugin/plugin.json", '{"name": "myplug"}\n')
    write(plugin / "skills/myskill/SKILL.md", "---\nname: myskill\ndescription: d\n---\n")
    expected = {
        plugin: None,
        plugin / "skills": "holds skills (<name>/SKILL.md) itself: name the plugin folder above it",
        plugin.parent: "no Claude Code plugin in",
    }
    for path, warning in expected.items():
        task = write_task(
            system_cli.folder / "tasks",
            {
                "task_id": "pl",
                "description": "d",
                "initial_prompt": "p",
                "agent": {"type": "claude-code", "plugins": [{"type": "local", "path": str(path)}]},
                "success_criteria": [{"type": "file_exists", "path": "a", "description": "d"}],
            },
            "pl.yaml",
        )
        checked = system_cli("validate", task, env={})
        assert checked.code == 0, checked.output
        assert (warning is None) == ("warning:" not in checked.err) and (warning or "") in checked.err, checked.err
