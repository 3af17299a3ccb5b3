"""Resolution: layer order, -D overrides, dataset fan-out, sampling, tags, skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder_eval_dagster.core.resolution import SKIP_TRUE, SkippedTask, resolve
from coder_eval_dagster.core.run_spec import RunSpec

from ..support.helpers import MINIMAL_TASK, criterion, run_cli, task_with, write, write_task


def _spec(paths: list[Path] | None = None, experiment: Path | None = None, **kwargs) -> RunSpec:
    return RunSpec(
        task_paths=[str(p) for p in paths or []], experiment=str(experiment) if experiment else None, **kwargs
    )


def _resolve(**kwargs) -> list:
    result = resolve(_spec(**kwargs))
    assert not result.problems, result.problems
    return result.row_tasks


def _experiment(folder: Path, text: str) -> Path:
    return write(folder / "exp.yaml", text)


def test_layer_order_defaults_task_variant_cli(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(run_limits={"max_turns": 5, "expected_turns": 4}, agent={"model": "task-model"}))
    exp = _experiment(
        tmp_path,
        """
        experiment_id: order
        defaults:
          run_limits: {max_turns: 1, task_timeout: 60, turn_timeout: 20}
          agent: {model: default-model, permission_mode: plan}
        variants:
          - variant_id: a
          - variant_id: b
            run_limits: {turn_timeout: 30}
            agent: {model: variant-model}
        """,
    )
    a, b = _resolve(paths=[tmp_path / "task.yaml"], experiment=exp, overrides=["run_limits.expected_turns=9"])
    # experiment defaults < task file
    assert a.task.run_limits.max_turns == 5 and a.task.run_limits.task_timeout == 60
    assert a.task.agent.model == "task-model" and a.task.agent.permission_mode == "plan"
    # task file < variant (deep-merged, untouched keys survive)
    assert b.task.agent.model == "variant-model" and b.task.run_limits.turn_timeout == 30
    assert b.task.run_limits.max_turns == 5
    # variant < -D
    assert a.task.run_limits.expected_turns == 9 == b.task.run_limits.expected_turns


def test_pre_run_defaults_prepended_post_run_appended(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(pre_run=[{"command": "task-pre"}], post_run=[{"command": "task-post"}]))
    exp = _experiment(
        tmp_path,
        """
        experiment_id: hooks
        defaults:
          pre_run: [{command: exp-pre}]
          post_run: [{command: exp-post}]
        variants: [{variant_id: only}]
        """,
    )
    (row_task,) = _resolve(paths=[tmp_path / "task.yaml"], experiment=exp)
    assert [c.command for c in row_task.task.pre_run] == ["exp-pre", "task-pre"]
    assert [c.command for c in row_task.task.post_run] == ["task-post", "exp-post"]


def test_variant_template_sources_appended_and_simulation_shallow_merged(tmp_path: Path) -> None:
    write(tmp_path / "variant_tpl/x.txt", "x")
    sources = [{"type": "starter_files", "files": [{"path": "a.txt", "content": "task"}]}]
    write_task(
        tmp_path,
        task_with(sandbox={"template_sources": sources}, simulation={"persona": "p", "goal": "g", "max_turns": 4}),
    )
    exp = write(
        tmp_path / "experiments/exp.yaml",
        """
        experiment_id: tpl
        tasks: ["../task.yaml"]
        variants:
          - variant_id: hint
            template_sources:
              - {type: template_dir, path: ../variant_tpl}
            simulation: {persona: terse}
        """,
    )
    (row_task,) = _resolve(experiment=exp)
    kinds = [s.type for s in row_task.task.sandbox.template_sources]
    assert kinds == ["starter_files", "template_dir"]
    assert Path(row_task.task.sandbox.template_sources[1].path) == (tmp_path / "variant_tpl").resolve()
    assert row_task.task.simulation.persona == "terse" and row_task.task.simulation.max_turns == 4


def test_d_values_are_yaml_scalars_and_merge_per_key(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(run_limits={"max_turns": 5}, agent={"sdk_options": {"effort": "low"}}))
    (row_task,) = _resolve(
        paths=[tmp_path],
        overrides=[
            "run_limits.task_timeout=900",
            "run_limits.stop_early=false",
            "agent.sdk_options.max_thinking_tokens=1000",
        ],
    )
    limits = row_task.task.run_limits
    assert (limits.max_turns, limits.task_timeout, limits.stop_early) == (5, 900, False)
    assert row_task.task.agent.sdk_options == {"effort": "low", "max_thinking_tokens": 1000}


def test_d_invalid_value_is_a_usage_error_naming_the_option(tmp_path: Path) -> None:
    path = write_task(tmp_path, task_with(run_limits={"max_turns": 5}))
    result = run_cli("list", path, "-D", "run_limits.max_turns=-1")
    assert result.code == 2
    assert result.err == "-D: run_limits.max_turns: Input should be greater than 0\n"


def test_d_malformed_is_a_usage_error(tmp_path: Path) -> None:
    path = write_task(tmp_path, task_with())
    result = run_cli("list", path, "-D", "novalue")
    assert result.code == 2 and "key.path=value" in result.err


def test_type_override(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(initial_prompt=None, agent={"type": "claude-code"}))
    assert run_cli("list", tmp_path).code == 1  # claude-code needs a prompt
    (row_task,) = _resolve(paths=[tmp_path], agent_type="none")
    assert row_task.task.agent.type == "none"


def _dataset_task(folder: Path, rows: list[dict], **dataset) -> Path:
    write(folder / "rows.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    return write_task(
        folder,
        task_with(
            initial_prompt="Label: ${row.text}",
            dataset={"paths": ["rows.jsonl"], **dataset},
            success_criteria=[
                criterion(
                    "classification_match",
                    path="out.txt",
                    expected_label="${row.label}",
                    allowed_labels=["pos", "neg"],
                    description="label of ${row.id}",
                ),
                criterion("run_command", command="test ${row.n} -gt 0", timeout="${row.n}"),
            ],
        ),
    )


ROWS = [{"id": f"r{i}", "text": f"t{i}", "label": "pos" if i % 3 else "neg", "n": i + 1} for i in range(9)]


def test_dataset_fan_out_and_substitution(tmp_path: Path) -> None:
    _dataset_task(tmp_path, ROWS)
    row_tasks = _resolve(paths=[tmp_path])
    assert [rt.task_id for rt in row_tasks] == [f"t1/r{i}" for i in range(9)]
    first = row_tasks[0]
    assert (first.base_task_id, first.row_id, first.row["text"]) == ("t1", "r0", "t0")
    assert first.task.initial_prompt == "Label: t0"
    classify, command = first.task.success_criteria
    assert classify.expected_label == "neg" and classify.description == "label of r0"
    assert command.command == "test 1 -gt 0" and command.timeout == 1.0  # typed after substitution


def test_dataset_inline_rows_and_id_field(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(dataset={"rows": [{"key": "x1"}, {"key": 7}], "id_field": "key"}))
    assert [rt.task_id for rt in _resolve(paths=[tmp_path])] == ["t1/x1", "t1/7"]


def test_dataset_bad_jsonl_line_is_named(tmp_path: Path) -> None:
    write(tmp_path / "rows.jsonl", '{"id": "a"}\nnot json\n')
    write_task(tmp_path, task_with(dataset={"paths": ["rows.jsonl"]}))
    result = run_cli("validate", tmp_path)
    assert result.code == 1 and f"{tmp_path / 'rows.jsonl'}:2: dataset.paths.0: invalid JSON" in result.err


def test_unknown_row_field_names_the_row(tmp_path: Path) -> None:
    write(tmp_path / "rows.jsonl", '{"id": "a", "label": "pos"}\n{"id": "b"}\n')
    write_task(
        tmp_path,
        task_with(
            dataset={"paths": ["rows.jsonl"]}, success_criteria=[criterion("file_exists", path="${row.label}.txt")]
        ),
    )
    result = run_cli("list", tmp_path)
    assert result.code == 1
    assert "success_criteria.0: unknown row field(s) label" in result.err and "row 'b'" in result.err
    assert f"{tmp_path / 'rows.jsonl'}:2" in result.err


def test_row_value_breaking_a_criterion_names_the_row(tmp_path: Path) -> None:
    write_task(
        tmp_path,
        task_with(
            dataset={"rows": [{"id": "a", "n": 2}, {"id": "b", "n": "many"}]},
            success_criteria=[criterion("command_executed", min_count="${row.n}")],
        ),
    )
    result = run_cli("list", tmp_path)
    assert result.code == 1 and "success_criteria.0.min_count" in result.err and "row 'b'" in result.err


def test_stratified_sampling_with_seed_is_stable(tmp_path: Path) -> None:
    _dataset_task(tmp_path, ROWS, sample_per_stratum=2, stratify_field="label", sample_seed=7)
    first = [rt.row_id for rt in _resolve(paths=[tmp_path])]
    again = [rt.row_id for rt in _resolve(paths=[tmp_path])]
    assert first == again and len(first) == 4
    labels = [next(r["label"] for r in ROWS if r["id"] == i) for i in first]
    assert labels.count("pos") == 2 and labels.count("neg") == 2
    assert first == sorted(first, key=lambda i: int(i[1:]))  # original order kept


def test_stratified_sampling_without_seed_redraws(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "text": "t", "label": "pos", "n": 1} for i in range(60)]
    _dataset_task(tmp_path, rows, sample_per_stratum=5, stratify_field="label")
    draws = {tuple(rt.row_id for rt in _resolve(paths=[tmp_path])) for _ in range(4)}
    assert len(draws) > 1 and all(len(d) == 5 for d in draws)


def test_a_parked_task_claims_no_id_and_its_replacement_runs(tmp_path: Path) -> None:
    """coder_eval checks the ids of the tasks it resolves: an old version parked (skip: true) beside its replacement
    left the replacement out as a duplicate; both run (--include-skipped) is a duplicate again."""
    write_task(tmp_path, task_with(task_id="same", skip=True), "old.yaml")
    write_task(tmp_path, task_with(task_id="same"), "new.yaml")
    result = resolve(RunSpec(task_paths=[str(tmp_path)]))
    assert [rt.task_id for rt in result.row_tasks] == ["same"] and result.problems == []
    assert [s.path for s in result.skipped] == [str(tmp_path / "old.yaml")]
    both = resolve(RunSpec(task_paths=[str(tmp_path)], include_skipped=True))
    assert [p.message for p in both.problems] == [f"duplicate task_id 'same' (also in {tmp_path / 'new.yaml'})"]


def test_cli_sample_overrides_yaml_and_is_fixed_seed(tmp_path: Path) -> None:
    _dataset_task(tmp_path, ROWS, sample_per_stratum=3, stratify_field="label")
    first = run_cli("list", tmp_path, "--sample", "1")
    assert first.code == 0 and len(first.out.splitlines()) == 2  # one per stratum
    assert run_cli("list", tmp_path, "--sample", "1").out == first.out
    # coder_eval's --sample N draws N in all: a draw of more says why, at the dataset's line
    assert "dataset: note: --sample 1 keeps up to 1 row(s) per stratum of 'label' (2 strata): 2 rows" in first.err
    assert "note" not in run_cli("list", tmp_path, "--sample", "9").err  # all 9 rows: no more than asked


def test_stratum_missing_field_is_one_stratum(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(dataset={"rows": [{"id": f"r{i}"} for i in range(5)], "sample_per_stratum": 2}))
    assert len(_resolve(paths=[tmp_path])) == 2


def test_tags_filter_any_match(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(task_id="a", tags=["smoke"]), "a.yaml")
    write_task(tmp_path, task_with(task_id="b", tags=["golden", "basic"]), "b.yaml")
    write_task(tmp_path, task_with(task_id="c"), "c.yaml")
    assert [rt.task_id for rt in _resolve(paths=[tmp_path], tags=["smoke", "basic"])] == ["a", "b"]


def test_skip_and_include_skipped(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(task_id="parked", skip=True, dataset={"rows": [{"id": "x"}]}), "p.yaml")
    write_task(tmp_path, task_with(task_id="live"), "l.yaml")
    result = resolve(_spec(paths=[tmp_path]))
    assert [rt.task_id for rt in result.row_tasks] == ["live"]
    assert result.skipped == [SkippedTask(str(tmp_path / "p.yaml"), SKIP_TRUE, task_id="parked")]
    listed = run_cli("list", tmp_path)
    assert listed.out == "default live\n" and f"skipped {tmp_path / 'p.yaml'}: skip: true" in listed.err
    included = resolve(_spec(paths=[tmp_path], include_skipped=True))
    assert sorted(rt.task_id for rt in included.row_tasks) == ["live", "parked/x"] and included.skipped == []


def test_repeats_and_n_trials(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(task_id="plain"), "a.yaml")
    write_task(
        tmp_path,
        task_with(task_id="sim", simulation={"enabled": True, "persona": "p", "goal": "g", "n_trials": 2}),
        "b.yaml",
    )
    exp = _experiment(tmp_path, "experiment_id: rep\nrepeats: 3\nvariants: [{variant_id: v}]\n")
    replicates = {
        rt.task_id: rt.replicates for rt in _resolve(paths=[tmp_path / "a.yaml", tmp_path / "b.yaml"], experiment=exp)
    }
    assert replicates == {"plain": 3, "sim": 2}


def test_experiment_tasks_and_cli_paths_add_up(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", task_with(task_id="a"), "a.yaml")
    write_task(tmp_path / "more", task_with(task_id="b"), "b.yaml")
    exp = write(
        tmp_path / "experiments/e.yaml", 'experiment_id: e\ntasks: ["../tasks/"]\nvariants: [{variant_id: v}]\n'
    )
    result = run_cli("list", "-e", exp, tmp_path / "more")
    assert result.out.splitlines() == ["v a", "v b"]


def test_variant_cannot_change_the_dataset(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(dataset={"rows": [{"id": "a"}]}))
    exp = _experiment(tmp_path, "experiment_id: e\nvariants: [{variant_id: v, dataset: {rows: []}}]\n")
    result = run_cli("list", "-e", exp, tmp_path / "task.yaml")
    assert result.code == 1 and "variants.0.dataset: unknown field" in result.err


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("experiment_id: 'bad id'\nvariants: [{variant_id: a}]\n", "experiment_id"),
        ("experiment_id: e\nvariants: []\n", "variants"),
        ("experiment_id: e\nvariants: [{variant_id: a}, {variant_id: a}]\n", "variants.1.variant_id"),
        ("experiment_id: e\nrepeats: 0\nvariants: [{variant_id: a}]\n", "repeats"),
        ("experiment_id: e\nvariants: [{variant_id: a, simulation: {mood: x}}]\n", "variants.0.simulation.mood"),
        (
            "experiment_id: e\ndefaults: {run_limits: {stop_early: true}}\nvariants: [{variant_id: a}]\n",
            "defaults.run_limits.stop_early",
        ),
    ],
)
def test_invalid_experiments(tmp_path: Path, text: str, field: str) -> None:
    path = write(tmp_path / "exp.yaml", text)
    result = run_cli("validate", path)
    assert result.code == 1 and f"{path}:" in result.err and f": {field}: " in result.err, result.err


def test_merged_rule_breach_is_reported(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", task_with(agent={"sdk_options": {"effort": "low"}}))
    exp = write(
        tmp_path / "e.yaml", 'experiment_id: e\ntasks: ["tasks/"]\nvariants: [{variant_id: c, agent: {type: codex}}]\n'
    )
    result = run_cli("validate", exp)
    assert result.code == 1 and "agent.sdk_options: only allowed with type claude-code" in result.err


def test_duplicate_task_ids_across_files(tmp_path: Path) -> None:
    write_task(tmp_path, MINIMAL_TASK, "a.yaml")
    write_task(tmp_path, MINIMAL_TASK, "b.yaml")
    result = run_cli("list", tmp_path)
    assert result.code == 1 and "duplicate task_id 't1'" in result.err


def test_initial_prompt_file_is_read(tmp_path: Path) -> None:
    write(tmp_path / "prompts/p.md", "From a file: ${row.x}")
    write_task(
        tmp_path,
        task_with(initial_prompt=None, initial_prompt_file="prompts/p.md", dataset={"rows": [{"id": "a", "x": 1}]}),
    )
    (row_task,) = _resolve(paths=[tmp_path])
    assert row_task.task.initial_prompt == "From a file: 1"


def test_replay_trajectory_is_validated(tmp_path: Path) -> None:
    write(tmp_path / "traj.yaml", "turns:\n  - calls: [{tool: Write, path: a.txt}]\n")
    write_task(tmp_path, task_with(agent={"type": "replay", "trajectory": "traj.yaml"}))
    result = run_cli("validate", tmp_path / "task.yaml")
    assert result.code == 1 and f"{tmp_path / 'traj.yaml'}:2: turns.0.calls.0.content" in result.err


def test_yaml_syntax_error_and_duplicate_key_have_lines(tmp_path: Path) -> None:
    broken = write(tmp_path / "a.yaml", "task_id: a\ndescription: [oops\n")
    dup = write(tmp_path / "b.yaml", "task_id: b\ntask_id: c\n")
    result = run_cli("validate", broken, dup)
    assert result.code == 1
    assert f"{broken}:2: (document): YAML syntax error" in result.err  # where the [ opens
    assert f"{dup}:2: task_id: duplicate key" in result.err


def test_validate_reports_every_file(tmp_path: Path) -> None:
    good = write_task(tmp_path, MINIMAL_TASK, "good.yaml")
    bad = write_task(tmp_path, task_with(task_id="x", success_criteria=None), "bad.yaml")
    result = run_cli("validate", tmp_path)
    assert (
        result.code == 1 and f"OK {good}" in result.out and f"{bad}:1: success_criteria: Field required" in result.err
    )


def test_missing_path(tmp_path: Path) -> None:
    result = run_cli("validate", tmp_path / "nope")
    assert result.code == 1 and "no such file" in result.err


def test_replay_trajectory_row_fields_are_checked_at_load(tmp_path: Path) -> None:
    write(tmp_path / "traj.yaml", "turns:\n  - calls: [{tool: Bash, command: 'echo ${row.word}'}]\n")
    write_task(
        tmp_path,
        task_with(
            agent={"type": "replay", "trajectory": "traj.yaml"},
            dataset={"rows": [{"id": "a", "word": "x"}, {"id": "b"}]},
        ),
    )
    result = run_cli("validate", tmp_path / "task.yaml")
    assert result.code == 1 and "agent.trajectory: unknown row field(s) word" in result.err and "row 'b'" in result.err


def test_one_file_through_two_paths_is_read_once(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", task_with(task_id="a"), "a.yaml")
    exp = write(
        tmp_path / "experiments/e.yaml", 'experiment_id: e\ntasks: ["../tasks/"]\nvariants: [{variant_id: v}]\n'
    )
    result = run_cli("list", tmp_path / "tasks", tmp_path / "tasks" / "a.yaml", "-e", exp)
    assert result.code == 0 and result.out.splitlines() == ["v a"], result.err
