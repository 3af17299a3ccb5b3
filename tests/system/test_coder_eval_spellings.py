"""coder_eval's own spellings through the installed ``coder-eval``: the short options (``-t``, ``-T``, ``-m``,
``--set``), ``-v``/``--log-file``, ``run`` and ``plan`` with no paths (``tasks/``), ``--run-dir R --resume``,
``evaluate --copy``; and the spellings not supported here, each refused in one line naming our equivalent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli, claude_code_task, only_run, task_file

pytestmark = pytest.mark.slow


def _project(folder: Path) -> None:
    """tasks/: ``untyped`` (no agent block: claude-code, which needs a prompt, unless ``-T`` says otherwise) tagged
    smoke, and ``agentless`` tagged other."""
    task_file(folder / "tasks", "untyped", tags=["smoke"])
    task_file(folder / "tasks", "agentless", tags=["other"], agent={"type": "none"})


def test_run_with_no_paths_and_the_short_spellings(tmp_path: Path, system_cli: SystemCli) -> None:
    _project(tmp_path)
    options = ("-t", "smoke", "-T", "none", "-m", "my-model", "-v", "--log-file", "logs/run.log")
    outcome = system_cli("run", "--runs-dir", system_cli.runs, *options, env={})
    assert outcome.code == 0, outcome.output
    assert "coder-eval run: no paths given: tasks/" in outcome.err
    run = only_run(system_cli.runs)
    assert [t["task_id"] for t in run.summary["task_results"]] == ["untyped"]  # -t: the tag filter
    result = run.result("untyped")
    assert result["task_config"]["resolved"]["agent"]["type"] == "none"  # -T
    assert result["task_config"]["resolved"]["agent"]["model"] == "my-model"  # -m
    assert result["model_used"] is None  # no agent ran: no model was used
    assert "[DEBUG] coder_eval_dagster: logging configured: level=DEBUG" in outcome.err  # -v
    assert "[DEBUG] coder_eval_dagster: logging configured" in (tmp_path / "logs/run.log").read_text()


def test_set_is_dash_d(tmp_path: Path, system_cli: SystemCli) -> None:
    _project(tmp_path)
    outcome, run = system_cli.run(tmp_path / "tasks/agentless.yaml", "--set", "pre_run=[]", env={})
    assert outcome.code == 1, outcome.output  # no pre_run: no a.txt
    assert run.result("agentless")["final_status"] == "FAILURE"
    refused = system_cli("list", tmp_path / "tasks/agentless.yaml", "--set", "run_limits.max_turns=-1", env={})
    assert refused.code == 2 and refused.err.startswith("-D: run_limits.max_turns: Input should be greater than 0")
    for path in (tmp_path / "tasks", tmp_path / "tasks/agentless.yaml"):  # an SDK option misspelt: said once
        mistyped = system_cli("list", path, "-D", "agent.sdk_options.efort=high", env={})
        assert mistyped.code == 2 and mistyped.err.count("\n") == 1, mistyped.output
        assert mistyped.err.startswith("-D: agent.sdk_options.efort: not a ClaudeAgentOptions field"), mistyped.err
        assert "(did you mean `effort`?)" in mistyped.err


def test_a_type_override_keeps_the_task_s_model_and_says_so(tmp_path: Path, system_cli: SystemCli) -> None:
    """``-T codex`` on a claude-code task naming its model keeps the model (as coder_eval re-parses the agent block),
    and says so at the model's line: codex would be asked for a claude model. Naming one with ``-m`` is silent."""
    task = claude_code_task(tmp_path, "named")
    kept = system_cli("list", task, "-T", "codex", env={})
    assert kept.code == 0, kept.output
    assert "named.yaml:" in kept.err and "agent.model: warning: --type codex keeps this model" in kept.err
    assert "written for a claude-code agent; give --model" in kept.err
    for chosen in (("-m", "gpt-5"), ("-D", "agent.model=gpt-5")):
        quiet = system_cli("list", task, "-T", "codex", *chosen, env={})
        assert quiet.code == 0 and "warning" not in quiet.err, quiet.output
    same = system_cli("list", task, "-T", "claude-code", env={})
    assert "warning" not in same.err, same.output


def test_a_split_no_labelled_dataset_has_refuses_the_run(tmp_path: Path, system_cli: SystemCli) -> None:
    """coder_eval's SplitSelectorError: a mistyped ``--split`` beside an unlabelled task made a green run of it."""
    _project(tmp_path)
    rows = [{"id": "a", "split": "train"}, {"id": "b", "split": "holdout"}]
    task_file(tmp_path / "tasks", "labelled", agent={"type": "none"}, dataset={"rows": rows})
    tasks = tmp_path / "tasks"
    refused = system_cli("run", tasks, "-T", "none", "--split", "holdou", "--runs-dir", system_cli.runs, env={})
    assert refused.code == 2, refused.output
    said = "labelled.yaml:13: dataset.split_field: --split 'holdou': no row of the dataset is in that split"
    assert said in refused.err and "labelled splits present: ['holdout', 'train']" in refused.err, refused.err
    assert not system_cli.runs.exists() or not any(system_cli.runs.iterdir())  # nothing was run
    listed = system_cli("list", tasks, "--split", "holdou", env={})
    assert listed.code == 1 and said in listed.err, listed.err
    outcome, run = system_cli.run(tasks, "-T", "none", "--split", "holdout", env={})
    assert outcome.code == 0, outcome.output
    assert sorted(r["task_id"] for r in run.summary["task_results"]) == ["agentless", "labelled/b", "untyped"]


def test_plan_is_validate_with_no_paths_and_an_experiment(tmp_path: Path, system_cli: SystemCli) -> None:
    task_file(tmp_path / "tasks", "agentless", agent={"type": "none"})
    planned, validated = system_cli("plan", env={}), system_cli("validate", env={})
    assert planned.code == validated.code == 0, planned.output
    assert planned.out == validated.out == f"OK {Path('tasks/agentless.yaml')}\n"
    assert "coder-eval plan: no paths given: tasks/" in planned.err
    write(
        tmp_path / "experiments/ab.yaml",
        "experiment_id: ab\nvariants:\n  - {variant_id: one}\n  - {variant_id: two, agent: {type: codex}}\n",
    )
    under = system_cli("plan", "-e", "ab", "tasks/agentless.yaml", env={})
    assert under.code == 1, under.output  # variant two makes it a codex task with no prompt
    assert "initial_prompt: required for agent type codex" in under.err


def test_resume_in_coder_evals_spelling(tmp_path: Path, system_cli: SystemCli) -> None:
    _project(tmp_path)
    first, run = system_cli.run(tmp_path / "tasks/agentless.yaml", env={})
    assert first.code == 0, first.output
    again = system_cli("run", "--run-dir", run.path, "--resume", env={})
    assert again.code == 0, again.output
    assert only_run(system_cli.runs).path == run.path  # the same run, finished; no new one
    alone = system_cli("run", "--resume", env={})
    assert alone.code == 2 and "--resume RUN_DIR (or --run-dir RUN_DIR --resume)" in alone.err


def test_evaluate_copy_and_verbose(tmp_path: Path, system_cli: SystemCli) -> None:
    task_file(tmp_path, "graded", agent={"type": "none"}, pre_run=[])
    write(tmp_path / "workspace/a.txt", "a\n")
    outcome = system_cli("evaluate", "graded.yaml", "workspace", "--copy", "-v", "--run-dir", "graded", env={})
    assert outcome.code == 0, outcome.output
    assert "All criteria passed! ✓" in outcome.out
    assert "[DEBUG] coder_eval_dagster" in outcome.err


REFUSED = [
    (("run", "tasks", "--stream", "full"), "argument -s/--stream: not supported", "task.html"),
    (("run", "tasks", "-s"), "argument -s/--stream: not supported", "coder-eval dev"),
    (("run", "tasks", "--preservation-mode", "NONE"), "argument --preservation-mode: not supported", "prune"),
    (("run", "tasks", "-b", "litellm"), "argument -b/--backend: 'litellm'", "-b direct with ANTHROPIC_BASE_URL"),
    (("run", "tasks", "--repeats", "100"), "argument --repeats: must be at most 99", "00 to 98"),
    (("run", "tasks", "--run-dir", "tasks"), "argument --run-dir: tasks already exists", "--resume tasks"),
    (("run", "tasks", "--run-dir", "runs/tables"), "argument --run-dir: runs/tables names no new run", "NAME"),
    (("run", "tasks", "--run-dir", "."), "argument --run-dir: . names no new run folder", "NAME"),
    (("run", "tasks", "--run-dir", "mine", "--resume"), "not task paths", "keeps its own selection"),
    (("execute", "tasks", "-T", "none"), "coder-eval execute: not supported", "coder-eval rescore RUN_DIR"),
    (("evaluate", "--in-place", "t.yaml", "dir"), "argument --in-place: not supported", "--copy"),
]


def test_unsupported_spellings_are_refused_in_one_line(tmp_path: Path, system_cli: SystemCli) -> None:
    _project(tmp_path)
    for args, says, names in REFUSED:
        outcome = system_cli(*args, env={})
        assert outcome.code == 2, (args, outcome.output)
        assert len(outcome.err.strip().splitlines()) == 1, (args, outcome.err)
        assert says in outcome.err and names in outcome.err, (args, outcome.err)
        assert not system_cli.runs.exists(), args


def test_run_with_no_paths_and_no_tasks_folder(tmp_path: Path, system_cli: SystemCli) -> None:
    outcome = system_cli("run", env={})
    assert outcome.code == 2
    assert outcome.err.strip() == (
        "coder-eval run: give task paths or -e EXPERIMENT (no tasks/ folder here) (see coder-eval run --help)"
    )


def test_validate_under_an_experiment_that_names_its_tasks(tmp_path: Path, system_cli: SystemCli) -> None:
    """With -e and no path the experiment's own tasks are checked (not tasks/ besides); with paths, each file
    answers for itself (the experiment's other tasks are not its duplicates)."""
    for name in ("alpha", "beta"):
        task_file(tmp_path / "tasks", name, agent={"type": "none"})
    write(tmp_path / "e.yaml", 'experiment_id: e\ntasks: ["tasks/"]\nvariants: [{variant_id: v}]\n')
    alone = system_cli("validate", "-e", "e.yaml", env={})
    assert (alone.code, alone.out, alone.err) == (0, "OK e.yaml\n", ""), alone.output
    listed = system_cli("validate", "tasks", "-e", "e.yaml", env={})
    assert listed.code == 0 and listed.out == "OK tasks/alpha.yaml\nOK tasks/beta.yaml\n", listed.output


def test_the_log_file_records_what_each_evaluation_did(tmp_path: Path, system_cli: SystemCli) -> None:
    """coder_eval's docs send users to -v and --log-file for what its task.log held: each command, a failing one's
    stderr, and the verdict. The log had one line, that logging was configured."""
    forging = "echo boom >&2; echo '12:00:00 [INFO] forged' >&2; exit 3"  # the agent's text, on the log's line
    task_file(tmp_path / "tasks", "err", agent={"type": "none"}, pre_run=[{"command": forging}])
    task_file(tmp_path / "tasks", "fine", agent={"type": "none"})
    outcome = system_cli("run", "--runs-dir", system_cli.runs, "tasks", "--log-file", "run.log", env={})
    assert outcome.code == 1, outcome.output
    assert "pre_run command" not in outcome.err  # --log-file alone leaves the console as it was
    log = (tmp_path / "run.log").read_text()
    for line in (
        "default/err#00: pre_run command 1: exit code 3",
        "default/err#00: pre_run command 1 stderr: boom 12:00:00 [INFO] forged",
        "default/err#00: ERROR: pre_run command 1 failed (exit code 3): echo boom >&2; echo '12:00:00",
        "default/fine#00: pre_run command 1: exit code 0",
        "default/fine#00: SUCCESS, score 1.000; file_exists 1.00",
    ):
        assert line in log, log
    assert not [line for line in log.splitlines() if line.startswith("12:00:00")], log


def test_run_dir_names_a_new_runs_folder_as_coder_evals_github_action_runs_it(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """coder_eval's action.yml runs `run --run-dir runs/ci --junit-xml runs/ci/junit.xml`: refused here, it now
    makes the run in runs/ci, its runs folder runs/ (the tables and latest there)."""
    _project(tmp_path)
    junit = Path("runs/ci/junit.xml")
    outcome = system_cli("run", "tasks", "-T", "none", "--run-dir", "runs/ci", "--junit-xml", junit, env={})
    assert outcome.code == 0, outcome.output
    run = tmp_path / "runs" / "ci"
    assert json.loads((run / "run.json").read_text())["run_id"] == "ci"
    assert (tmp_path / "runs" / "latest").resolve() == run.resolve()
    assert list((tmp_path / "runs" / "tables").glob("task_results/*/*.parquet"))
    assert "<testsuite" in (tmp_path / junit).read_text()
    nested = system_cli("run", "tasks", "-T", "none", "--run-dir", "runs/ci/again", env={})
    assert nested.code == 2 and f"is inside the run folder {run}" in nested.err, nested.output  # it joined ci's results


def test_an_empty_description_is_taken_as_coder_eval_takes_it(tmp_path: Path, system_cli: SystemCli) -> None:
    """The guide requires `description`, not that it says something: coder_eval runs `description: ""` (a task's,
    a criterion's), which was refused here."""
    task = write(
        tmp_path / "blank.yaml",
        'task_id: blank\ndescription: ""\nagent: {type: none}\npre_run: [{command: "touch a"}]\n'
        'success_criteria:\n  - {type: file_exists, path: a, description: ""}\n',
    )
    checked = system_cli("validate", task, env={})
    assert checked.code == 0 and checked.out.startswith("OK"), checked.output
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    assert run.result("blank")["success_criteria_results"][0]["description"] == ""
