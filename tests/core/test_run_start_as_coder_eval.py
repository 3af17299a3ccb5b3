"""The CLI's start as coder_eval's: task arguments as glob patterns, ./.env for the commands that call models,
the options a resume would ignore (in-process; tests/system/test_run_start_as_coder_eval.py runs the CLI)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coder_eval_dagster.cli import LOG_LEVEL_OF_DOTENV, UsageError, _selection_flags, expand_patterns, read_dotenv
from coder_eval_dagster.core.credentials import HANDOVER_FD
from coder_eval_dagster.core.run_spec import RunSpec

from ..support.helpers import agentless_task, run_cli, write, write_task


def test_a_pattern_is_expanded_recursively_and_sorted_a_path_is_kept(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("t/b.yaml", "t/a.yaml", "t/deep/er/c.yaml", "t/[x].yaml"):
        write(tmp_path / name, "")
    assert expand_patterns([Path("t/*.yaml")]) == [Path("t/[x].yaml"), Path("t/a.yaml"), Path("t/b.yaml")]
    assert expand_patterns([Path("t/**/c.yaml")]) == [Path("t/deep/er/c.yaml")]
    assert expand_patterns([Path("t/[x].yaml"), Path("t")]) == [Path("t/[x].yaml"), Path("t")]  # existing paths
    assert expand_patterns([tmp_path / "t" / "?.yaml"]) == [tmp_path / "t" / "a.yaml", tmp_path / "t" / "b.yaml"]
    assert expand_patterns([Path("missing")]) == [Path("missing")]  # no pattern: said where it is resolved
    with pytest.raises(UsageError, match=r"'t/\*\.yml'"):
        expand_patterns([Path("t/a.yaml"), Path("t/*.yml")])


def test_dotenv_wins_over_the_environment_for_commands_that_call_models(
    tmp_path: Path, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / ".env", "ANTHROPIC_TEST_A=from-dotenv\nANTHROPIC_TEST_B=same\nAPP_SETTING=x\nLOG_LEVEL=DEBUG\n")
    monkeypatch.setenv("ANTHROPIC_TEST_A", "exported")
    monkeypatch.setenv("ANTHROPIC_TEST_B", "same")
    monkeypatch.delenv("APP_SETTING", raising=False)
    monkeypatch.delenv("LOG_LEVEL", raising=False)
    monkeypatch.delenv(LOG_LEVEL_OF_DOTENV, raising=False)
    monkeypatch.delenv(HANDOVER_FD, raising=False)

    assert read_dotenv("list") is None
    assert read_dotenv(None) is None
    assert os.environ["ANTHROPIC_TEST_A"] == "exported"  # list calls no model: .env not read
    assert read_dotenv("run") is None
    assert os.environ["ANTHROPIC_TEST_A"] == "from-dotenv"
    # an application's setting is not put where a sandbox command would see it, nor LOG_LEVEL itself
    assert "APP_SETTING" not in os.environ and "LOG_LEVEL" not in os.environ
    assert os.environ[LOG_LEVEL_OF_DOTENV] == "DEBUG"
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "coder-eval: .env sets ANTHROPIC_TEST_A over the environment's"  # a name, never a value
    assert err[1].startswith("coder-eval: .env: not read: APP_SETTING (")


def test_dotenv_is_not_read_again_by_the_image_that_receives_the_credentials(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / ".env", "CODER_EVAL_TEST_A=from-dotenv\n")
    monkeypatch.setenv("CODER_EVAL_TEST_A", "handed")
    monkeypatch.setenv(HANDOVER_FD, "99")
    assert read_dotenv("run") is None
    assert os.environ["CODER_EVAL_TEST_A"] == "handed"


def test_an_unreadable_dotenv_is_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_bytes(b"KEY=\xff\xfe\n")
    monkeypatch.delenv(HANDOVER_FD, raising=False)
    why = read_dotenv("rescore")
    assert why is not None and why.startswith("coder-eval: cannot read ") and "\n" not in why


def test_the_selection_options_a_resume_would_ignore() -> None:
    assert _selection_flags(RunSpec()) == []
    spec = RunSpec(task_paths=["t"], experiment="x.yaml", overrides=["a=1"], repeats=3, tags=["x"])
    assert _selection_flags(spec) == ["task paths", "-e", "-D", "--repeats", "--tags"]


def test_list_and_register_with_no_paths_take_tasks_as_run_does(tmp_path: Path, monkeypatch) -> None:
    """coder_eval's commands with no paths read tasks/ of the current folder: `list` and `register` as `run` does;
    with no tasks/ folder either, one usage line (exit 2)."""
    monkeypatch.chdir(tmp_path)
    assert run_cli("list").code == run_cli("register").code == 2
    write_task(tmp_path / "tasks", agentless_task(task_id="first"), "first.yaml")
    listed = run_cli("list")
    assert (listed.code, listed.out) == (0, "default first\n"), listed.err
    assert "no paths given: tasks/" in listed.err
