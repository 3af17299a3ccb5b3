"""Starting a run as coder_eval's docs start one, through the installed CLI: ``-e`` with no paths runs ``tasks/``,
quoted glob patterns, ``./.env``, a resume's options, an empty ``register``, a rescore of a damaged run.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ..support.fake_anthropic import Script
from ..support.helpers import write
from .conftest import (
    SystemCli,
    carried,
    new_key,
    no_key_anywhere,
    only_run,
    proxied_through,
    replay_task_file,
    task_file,
)

pytestmark = pytest.mark.slow

NO_ENV: dict[str, str] = {}
AGENTLESS = {"agent": {"type": "none"}}


def _experiment(folder: Path, **changes: object) -> Path:
    data = {"experiment_id": "mc", "variants": [{"variant_id": "a"}, {"variant_id": "b"}], **changes}
    return write(folder / "experiments" / "model-comparison.yaml", yaml.safe_dump(data))


def test_an_experiment_without_tasks_runs_every_task_under_tasks_as_coder_eval(system_cli: SystemCli) -> None:
    """AB_EXPERIMENTS.md: "Run every task under tasks/ against the variants in an experiment" with ``run -e`` and
    no paths; ``list -e`` and ``validate -e`` take the same tasks; an experiment that names its tasks keeps them."""
    folder = system_cli.folder
    task_file(folder / "tasks", "first", **AGENTLESS)
    task_file(folder / "tasks" / "deeper", "second", **AGENTLESS)
    task_file(folder / "own", "named", **AGENTLESS)
    _experiment(folder)

    listed = system_cli("list", "-e", "model-comparison", env=NO_ENV)
    assert listed.code == 0, listed.output
    assert sorted(listed.out.splitlines()) == ["a first", "a second", "b first", "b second"]
    checked = system_cli("validate", "-e", "model-comparison", env=NO_ENV)
    assert checked.code == 0 and "OK tasks/first.yaml" in checked.out, checked.output

    ran = system_cli("run", "-e", "model-comparison", "--runs-dir", system_cli.runs, env=NO_ENV)
    assert ran.code == 0, ran.output
    assert "no paths given: tasks/" in ran.err
    rows = only_run(system_cli.runs).summary["task_results"]
    assert sorted((row["variant_id"], row["task_id"]) for row in rows) == [
        ("a", "first"),
        ("a", "second"),
        ("b", "first"),
        ("b", "second"),
    ]

    _experiment(folder, tasks=["../own"])  # relative to the experiment file
    named = system_cli("list", "-e", "model-comparison", env=NO_ENV)
    assert named.code == 0, named.output
    assert sorted(named.out.splitlines()) == ["a named", "b named"]


def test_an_experiment_without_tasks_and_no_tasks_folder_is_one_usage_line(system_cli: SystemCli) -> None:
    _experiment(system_cli.folder)
    outcome = system_cli("run", "-e", "model-comparison", "--runs-dir", system_cli.runs, env=NO_ENV)
    assert outcome.code == 2, outcome.output
    assert outcome.err.count("\n") == 1 and "names no tasks and there is no tasks/ folder here" in outcome.err


def test_quoted_glob_patterns_are_expanded_as_coder_evals_expand_task_files(system_cli: SystemCli) -> None:
    """``coder-eval run 'tasks/agentless*.yaml' 'mytasks/**/fail*.yaml'`` (its README's GitHub Action passes
    ``tests/tasks/**/*.yaml`` verbatim): ``**`` recursive; a pattern that matches nothing is named, exit 2."""
    folder = system_cli.folder
    for task_id in ("agentless_b", "agentless_a", "other"):
        task_file(folder / "tasks", task_id, **AGENTLESS)
    task_file(folder / "mytasks" / "x" / "y", "fail_deep", **AGENTLESS)
    task_file(folder / "mytasks", "fail_top", **AGENTLESS)

    listed = system_cli("list", "tasks/agentless*.yaml", "mytasks/**/fail*.yaml", env=NO_ENV)
    assert listed.code == 0, listed.output
    assert listed.out.splitlines() == [
        "default agentless_a",
        "default agentless_b",
        "default fail_top",  # mytasks/fail_top.yaml, then mytasks/x/y/fail_deep.yaml: sorted
        "default fail_deep",
    ]
    checked = system_cli("validate", "tasks/agentless*.yaml", env=NO_ENV)
    assert checked.code == 0 and checked.out.count("OK ") == 2, checked.output

    ran = system_cli("run", "tasks/agentless_[a]*.yaml", "--runs-dir", system_cli.runs, env=NO_ENV)
    assert ran.code == 0, ran.output
    assert [row["task_id"] for row in only_run(system_cli.runs).summary["task_results"]] == ["agentless_a"]

    missing = system_cli("run", "tasks/agentless*.yaml", "tasks/zzz*.yaml", "--runs-dir", system_cli.runs, env=NO_ENV)
    assert missing.code == 2, missing.output
    assert missing.err.count("\n") == 1 and "'tasks/zzz*.yaml'" in missing.err


def test_dotenv_in_the_current_folder_gives_the_key_over_the_environment_and_it_lands_nowhere(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """coder_eval's docs: "Set these in .env"; its config loads it with override=True. The key of .env (not the
    stale one exported) reaches the judge's model; neither lands in the run folder, the instance or the output;
    LOG_LEVEL=DEBUG there is ``-v``."""
    fake = scripted_anthropic(Script([], verdict={"score": 1.0, "rationale": "fine"}))
    key, stale = new_key(), new_key()
    judge = [{"type": "llm_judge", "description": "graded", "prompt": "Grade."}]
    task = replay_task_file(tmp_path / "tasks", "judged", [{"text": "done"}], success_criteria=judge)
    setting = "postgres://app:" + new_key("pw-") + "@db/app"  # an application's setting in the same .env
    dotenv = f"ANTHROPIC_API_KEY={key}\nANTHROPIC_BASE_URL={fake.url}\nLOG_LEVEL=DEBUG\nDATABASE_URL={setting}\n"
    write(tmp_path / ".env", dotenv)

    outcome, run = system_cli.run(task, env={"ANTHROPIC_API_KEY": stale, **proxied_through(fake.url)})

    assert outcome.code == 0, outcome.output
    assert run.result("judged")["final_status"] == "SUCCESS"
    assert carried(key, fake.script.headers), "the judge did not call with the key of .env"
    assert "coder-eval: .env sets ANTHROPIC_API_KEY over the environment's" in outcome.err
    assert "[DEBUG]" in outcome.err  # LOG_LEVEL=DEBUG: the -v records
    assert "coder-eval: .env: not read: DATABASE_URL (" in outcome.err
    for secret in (key, stale, setting):
        no_key_anywhere(secret, system_cli.runs, system_cli.home, output=outcome.output)


def test_dotenv_is_not_read_by_a_command_that_calls_no_model(system_cli: SystemCli) -> None:
    task_file(system_cli.folder / "tasks", "first", **AGENTLESS)
    write(system_cli.folder / ".env", "LOG_LEVEL=DEBUG\n")
    listed = system_cli("list", "tasks", env=NO_ENV)
    assert listed.code == 0 and "[DEBUG]" not in listed.err, listed.output


def test_a_resume_refuses_the_selection_options_it_would_ignore_naming_them(system_cli: SystemCli) -> None:
    task = task_file(system_cli.folder / "tasks", "first", **AGENTLESS)
    _experiment(system_cli.folder)
    outcome, run = system_cli.run(task, env=NO_ENV)
    assert outcome.code == 0, outcome.output
    before = run.summary

    options = system_cli("run", "--resume", run.path, "--repeats", "3", "-D", "run_limits.max_turns=3", env=NO_ENV)
    assert options.code == 2, options.output
    assert options.err.count("\n") == 1 and "drop -D, --repeats" in options.err, options.err
    with_experiment = system_cli("run", "--resume", run.path, "-e", "model-comparison", env=NO_ENV)
    assert with_experiment.code == 2 and "drop -e" in with_experiment.err, with_experiment.output
    retried = system_cli("run", "--retry-errors", run.path, "--tags", "x", "-T", "none", env=NO_ENV)
    assert retried.code == 2 and "--retry-errors" in retried.err and "--type, --tags" in retried.err, retried.output
    assert run.summary == before


def test_register_with_an_empty_selection_exits_2_as_run_does(system_cli: SystemCli) -> None:
    (system_cli.folder / "empty").mkdir()
    task_file(system_cli.folder / "tasks", "first", **AGENTLESS)
    for selection in (["empty"], ["tasks", "--tags", "zzz"]):
        outcome = system_cli("register", *selection, env=NO_ENV)
        assert outcome.code == 2, outcome.output
        assert "coder-eval register: no row-tasks selected" in outcome.err
        assert "registered" not in outcome.out


@pytest.mark.parametrize("damage", ["truncated", "unknown status"])
def test_a_rescore_of_a_damaged_run_json_scores_nothing(system_cli: SystemCli, damage: str) -> None:
    task = task_file(system_cli.folder / "tasks", "first", **AGENTLESS)
    outcome, run = system_cli.run(task, env=NO_ENV)
    assert outcome.code == 0, outcome.output
    summary = (run.path / "run.json").read_text(encoding="utf-8")
    if damage == "truncated":
        damaged = summary[: len(summary) // 2]
    else:
        data = json.loads(summary)
        data["task_results"][0]["status"] = "WEIRD"
        damaged = json.dumps(data)
    (run.path / "run.json").write_text(damaged, encoding="utf-8")
    result = run.evaluation("first") / "task.json"
    written = (result.read_bytes(), result.stat().st_mtime_ns)

    rescored = system_cli("rescore", run.path, env=NO_ENV)

    assert rescored.code == 2, rescored.output
    assert rescored.err.count("\n") == 1 and "run.json" in rescored.err, rescored.err
    assert (result.read_bytes(), result.stat().st_mtime_ns) == written
    assert (run.path / "run.json").read_text(encoding="utf-8") == damaged
