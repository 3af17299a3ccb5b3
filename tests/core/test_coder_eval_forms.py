"""coder_eval's task and experiment forms, accepted beside the guide's, and how they resolve."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.models.sandbox import NetworkPolicy
from coder_eval_dagster.core.models.task import Task
from coder_eval_dagster.core.resolution import resolve
from coder_eval_dagster.core.run_spec import RunSpec

from ..support.helpers import agentless_task, criterion, run_cli, task_with, write, write_task


def _resolved(tmp_path: Path, data: dict[str, Any], **spec: Any) -> list[Any]:
    result = resolve(RunSpec(task_paths=[str(write_task(tmp_path, data))], **spec))
    assert not result.problems, [str(p) for p in result.problems]
    return result.row_tasks


def _problems(tmp_path: Path, data: dict[str, Any], name: str = "task.yaml") -> list[str]:
    result = run_cli("validate", write_task(tmp_path, data, name))
    assert result.code == 1, result.out
    return result.err.splitlines()


# ----------------------------------------------------------------------------- tags


def test_namespaced_tags_are_tags_and_select_whole(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(task_id="gen", tags=["lifecycle:generate", "smoke"]), "gen.yaml")
    write_task(tmp_path, task_with(task_id="fix", tags=["lifecycle:fix"]), "fix.yaml")

    def ids(**spec: Any) -> list[str]:
        return [rt.task_id for rt in resolve(RunSpec(task_paths=[str(tmp_path)], **spec)).row_tasks]

    assert ids(tags=["lifecycle:generate"]) == ["gen"]
    assert ids(tags=["lifecycle"]) == []  # whole tags, no prefix match
    assert ids(exclude_tags=["smoke"]) == ["fix"]
    assert ids(tags=["lifecycle:generate", "lifecycle:fix"], exclude_tags=["lifecycle:fix"]) == ["gen"]
    (only,) = _problems(tmp_path, task_with(tags=["a:b:c"]), "bad.yaml")
    assert "tags.0: tag 'a:b:c' does not match pattern" in only and "key:value" in only


# ----------------------------------------------------------------------------- reference


def test_reference_directory_and_the_criteria_that_read_it(tmp_path: Path) -> None:
    write(tmp_path / "ref/solution.py", "x = 1\n")
    uses = criterion("run_command", command="diff -r $REFERENCE_DIR .")
    compare = criterion("reference_comparison", agent_file="a.py", reference_file="solution.py")
    (row_task,) = _resolved(tmp_path, task_with(reference={"directory": " ref "}, success_criteria=[uses, compare]))
    assert row_task.task.reference.directory == "ref"

    (missing,) = _problems(tmp_path, task_with(reference={"directory": "nowhere"}), "a.yaml")
    assert missing.endswith(": reference.directory: folder not found: nowhere (relative to the task YAML)")
    (no_folder,) = _problems(tmp_path, task_with(success_criteria=[uses]), "b.yaml")
    assert "success_criteria.0: reads the reference folder ($REFERENCE_DIR" in no_folder
    write(tmp_path / "solution.py", "x = 1\n")
    (file_form,) = _problems(tmp_path, task_with(reference={"file": "solution.py"}, success_criteria=[uses]), "c.yaml")
    assert "needs reference: {directory}" in file_form  # the guide's file form has no folder to name
    bare = criterion("reference_comparison", agent_file="a.py")
    (which,) = _problems(tmp_path, task_with(reference={"directory": "ref"}, success_criteria=[bare]), "d.yaml")
    assert "success_criteria.0.reference_file: required" in which
    (both,) = _problems(tmp_path, task_with(reference={"directory": "ref", "code": "x"}), "e.yaml")
    assert "exactly one of file, code or directory" in both
    # the guide's forms keep working
    _resolved(tmp_path, task_with(reference={"code": "x = 1"}, success_criteria=[bare]))


# ----------------------------------------------------------------------------- agent


def test_system_prompt_inline_or_from_a_file_read_at_resolution(tmp_path: Path) -> None:
    write(tmp_path / "sp.md", "Be terse.\n")
    (row_task,) = _resolved(tmp_path, task_with(agent={"system_prompt_file": "sp.md"}))
    assert (row_task.task.agent.system_prompt, row_task.task.agent.system_prompt_file) == (
        "Be terse.",
        None,
    )  # stripped, as coder_eval reads it
    (blank,) = _resolved(tmp_path, task_with(agent={"system_prompt": "  "}))
    assert blank.task.agent.system_prompt is None
    (both,) = _problems(tmp_path, task_with(agent={"system_prompt": "a", "system_prompt_file": "sp.md"}), "b.yaml")
    assert "agent.system_prompt_file: set system_prompt or system_prompt_file, not both" in both
    (replace,) = _problems(tmp_path, task_with(agent={"system_prompt_mode": "replace"}), "c.yaml")
    assert "agent.system_prompt_mode: replace needs a system_prompt" in replace


def test_a_variant_setting_one_system_prompt_form_drops_the_tasks_other(tmp_path: Path) -> None:
    write(tmp_path / "exp/long.md", "Variant prompt.")
    experiment = write(
        tmp_path / "exp/e.yaml",
        """
        experiment_id: sp
        variants:
          - variant_id: own
          - variant_id: filed
            agent: {system_prompt_file: long.md}
        """,
    )
    task = write_task(tmp_path, task_with(agent={"system_prompt": "Task prompt."}))
    own, filed = resolve(RunSpec(task_paths=[str(task)], experiment=str(experiment))).row_tasks
    assert own.task.agent.system_prompt == "Task prompt." and filed.task.agent.system_prompt == "Variant prompt."


def test_claude_code_only_fields_and_thinking_level(tmp_path: Path) -> None:
    write(tmp_path / "plug/skills/demo/SKILL.md", "---\nname: demo\ndescription: d\n---\n")
    fields = {"setting_sources": ["project"], "plugins": [{"type": "local", "path": str(tmp_path / "plug")}]}
    (row_task,) = _resolved(tmp_path, task_with(agent=fields))
    assert row_task.task.agent.plugins[0].path == str(tmp_path / "plug")
    on_codex = _problems(tmp_path, task_with(agent={"type": "codex", "setting_sources": ["project"]}), "a.yaml")
    assert any("agent.setting_sources: only allowed with type claude-code, not codex" in p for p in on_codex)
    (thinking,) = _problems(tmp_path, task_with(agent={"thinking_level": "low"}), "b.yaml")
    assert "agent.thinking_level: read by the antigravity and pi agents only" in thinking
    assert "sdk_options: {effort" in thinking
    (bad_level,) = _problems(tmp_path, task_with(agent={"type": "codex", "thinking_level": "huge"}), "c.yaml")
    assert "agent.thinking_level" in bad_level


def test_plugin_paths_are_relative_to_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "plugins/uipath/skills/x/SKILL.md", "---\nname: x\ndescription: d\n---\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUGINS_HOME", "plugins")
    (row_task,) = _resolved(tmp_path / "tasks", task_with(agent={"plugins": [{"path": "$PLUGINS_HOME/uipath"}]}))
    assert row_task.task.agent.plugins[0].path == str(tmp_path / "plugins/uipath")
    # a folder not there (yet) is a warning: a variable or a checkout may provide it before the run
    missing = resolve(
        RunSpec(task_paths=[str(write_task(tmp_path, task_with(agent={"plugins": [{"path": "$NO_VAR"}]})))])
    )
    assert len(missing.row_tasks) == 1 and not missing.problems
    (warning,) = [str(w) for w in missing.warnings]
    assert f"agent.plugins.0.path: warning: plugin folder not found: {tmp_path / '$NO_VAR'}" in warning
    assert warning.endswith("(relative to the current folder; $NO_VAR not set)")  # not "expanded": it was not


@pytest.mark.parametrize("kind", ["antigravity", "pi", "delegate", "openhands"])
def test_an_agent_type_that_is_not_installed_fails_in_one_line_naming_it(tmp_path: Path, kind: str) -> None:
    data = task_with(agent={"type": kind, "thinking_level": "low", "variant": "high"})
    (only,) = _problems(tmp_path, data)
    assert only.startswith(f"{tmp_path / 'task.yaml'}:") and only.endswith(
        f": agent.type: agent type {kind!r} is not installed here (coder_eval has it; an agent plugin can provide it)"
    )


def test_registering_an_agent_type_makes_it_installed() -> None:
    from coder_eval_dagster.core.models.agent import AGENT_TYPES

    assert AGENT_TYPES.not_installed("pi") is not None
    AGENT_TYPES.register("pi")
    try:
        assert AGENT_TYPES.not_installed("pi") is None and AGENT_TYPES.check("pi") == "pi"
    finally:
        AGENT_TYPES.names.remove("pi")


# ----------------------------------------------------------------------------- run_limits, simulation, dataset


def test_max_tool_calls_simulation_model_and_split_field_are_fields() -> None:
    task = Task.model_validate(
        task_with(
            run_limits={"max_tool_calls": 5},
            simulation={"persona": "p", "goal": "g", "model": "claude-haiku-4-5", "parallel_trials": 2},
            dataset={"rows": [{"id": "a"}], "split_field": "fold"},
        )
    )
    assert task.run_limits.max_tool_calls == 5 and task.simulation is not None
    assert task.simulation.model == "claude-haiku-4-5" and task.dataset is not None
    assert task.dataset.split_field == "fold"
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Task.model_validate(task_with(run_limits={"max_tool_calls": 0}))


def test_expected_tool_calls_is_the_soft_budget_not_a_misspelt_cap() -> None:
    limits = Task.model_validate(task_with(run_limits={"expected_tool_calls": 4})).run_limits
    assert limits.expected_tool_calls == 4 and limits.max_tool_calls is None
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Task.model_validate(task_with(run_limits={"expected_tool_calls": 0}))


# ----------------------------------------------------------------------------- sandbox


def test_sandbox_docker_block_and_the_flat_spelling(tmp_path: Path) -> None:
    nested = Task.model_validate(task_with(sandbox={"driver": "docker", "docker": {"image": "i:1", "network": "none"}}))
    flat = Task.model_validate(task_with(sandbox={"driver": "docker", "image": "i:1", "network": "none"}))
    assert nested.sandbox.docker.image == flat.sandbox.docker.image == "i:1"
    assert nested.sandbox.network == flat.sandbox.network == "none"  # docker.network is sandbox.network's other name
    blocked = task_with(sandbox={"docker": {"network": {"allow": ["pypi.org:443"]}}})
    assert Task.model_validate(blocked).sandbox.network == NetworkPolicy(allow=["pypi.org:443"])
    empty = {"extra_mounts": [], "env_passthrough_extra": [], "build": None}
    assert Task.model_validate(task_with(sandbox={"docker": empty})).sandbox.network == NetworkPolicy()  # confined

    asked = {"docker": {"dockerfile_path": "./Dockerfile", "env_passthrough_extra": ["FOO"], "working_dir": "auto"}}
    problems = _problems(tmp_path, task_with(sandbox=asked))
    assert [p.split(": ", 2)[1] for p in problems] == [
        "sandbox.docker.dockerfile_path",
        "sandbox.docker.env_passthrough_extra",
        "sandbox.docker.working_dir",
    ]  # as the file reads
    assert "not supported: images are not built here" in problems[0]
    differ = _problems(tmp_path, task_with(sandbox={"image": "a", "docker": {"image": "b"}}), "b.yaml")
    assert any("sandbox.image: set once: sandbox.image and sandbox.docker.image differ" in p for p in differ)
    differ = _problems(
        tmp_path, task_with(sandbox={"network": {"open": True}, "docker": {"network": "none"}}), "c.yaml"
    )
    assert any("sandbox.network: set once: sandbox.network and sandbox.docker.network differ" in p for p in differ)


def test_node_packages_record_cli_and_mock_path_dirs_are_fields(tmp_path: Path) -> None:
    sandbox = {
        "node": {"env_packages": ["left-pad"]},
        "mock_path_dirs": ["mocks"],
        "record_cli": [
            {
                "tool": "uip",
                "stdout": "fallback",
                "responses": [{"when": {"verb": "ixp list", "flags": {"output": "json"}}, "stdout": "[]"}],
            }
        ],
    }
    task = Task.model_validate(task_with(sandbox=sandbox))
    assert task.sandbox.node is not None and task.sandbox.node.env_packages == ["left-pad"]
    assert task.sandbox.record_cli[0].exit_code == 1 and task.sandbox.record_cli[0].responses[0].exit_code == 0

    def problem(changes: dict[str, Any], name: str) -> str:
        (only,) = _problems(tmp_path, task_with(sandbox=changes), name)
        return only

    assert "record_cli.0.tool: 'git' cannot be shadowed" in problem({"record_cli": [{"tool": "git"}]}, "a.yaml")
    assert "String should match pattern" in problem({"record_cli": [{"tool": "bin/uip"}]}, "b.yaml")
    twice = {"record_cli": [{"tool": "uip"}, {"tool": "uip"}]}
    assert "record_cli.1.tool: 'uip' is shadowed twice" in problem(twice, "c.yaml")
    shadowed = {
        "record_cli": [{"tool": "uip", "responses": [{"when": {"verb": "ixp"}}, {"when": {"verb": "ixp list"}}]}]
    }
    assert "record_cli.0.responses.1.when: never reached" in problem(shadowed, "d.yaml")
    assert "mock_path_dirs: '../x' must be a relative folder" in problem({"mock_path_dirs": ["../x"]}, "e.yaml")
    catch_all = {"record_cli": [{"tool": "uip", "responses": [{"when": {}}]}]}
    assert "responses.0.when: needs a verb" in problem(catch_all, "f.yaml")
    line = {"record_cli": [{"tool": "uip", "responses": [{"when": "ixp list"}]}]}
    assert "write {verb: 'ixp list'}" in problem(line, "g.yaml")


# ----------------------------------------------------------------------------- criteria


def test_cli_called_verb_any_of_exact_positional_and_its_default_log() -> None:
    task = Task.model_validate(
        task_with(success_criteria=[criterion("cli_called", verb_any_of=["ixp list", "ixp ls"], exact_positional=True)])
    )
    (called,) = task.success_criteria
    assert called.log == "cli_mocks/calls.jsonl" and called.verbs == [["ixp", "list"], ["ixp", "ls"]]
    for fields, message in (
        ({"verb": "a", "verb_any_of": ["b"]}, "set verb or verb_any_of, not both"),
        ({"verb_any_of": ["ixp", "ixp list"]}, "'ixp' already covers 'ixp list'"),
        ({"verb_any_of": []}, "none of them blank"),
    ):
        with pytest.raises(ValueError, match=message):
            Task.model_validate(task_with(success_criteria=[criterion("cli_called", **fields)]))


def test_import_check_is_a_criterion(tmp_path: Path) -> None:
    (row_task,) = _resolved(tmp_path, agentless_task(success_criteria=[criterion("import_check", path="main.py")]))
    assert row_task.task.success_criteria[0].timeout == 30


# ----------------------------------------------------------------------------- experiments


def _experiment(tmp_path: Path, variants: str, defaults: str = "") -> Path:
    text = f"experiment_id: exp\n{defaults}variants:\n{variants}"
    return write(tmp_path / "experiments/exp.yaml", text)


def test_variant_prompts_and_prompt_mutations(tmp_path: Path) -> None:
    write(tmp_path / "experiments/p.md", "from a file {name}")
    experiment = _experiment(
        tmp_path,
        """
  - variant_id: mutated
    prompt_mutations:
      - {type: suffix, content: SUF, separator: " | "}
      - {type: replace, pattern: "w(or)ld", replacement: "W\\\\1LD", regex: true}
      - {type: template, variables: {name: Bob}}
  - variant_id: inline
    initial_prompt: "brand new {name}"
  - variant_id: filed
    initial_prompt_file: p.md
""",
        "defaults:\n  prompt_mutations: [{type: prefix, content: PRE}]\n",
    )
    task = write_task(tmp_path / "tasks", task_with(initial_prompt="hello world {name}"))
    rows = resolve(RunSpec(task_paths=[str(task)], experiment=str(experiment))).row_tasks
    assert [rt.task.initial_prompt for rt in rows] == [
        "PRE\n\nhello WorLD Bob | SUF",
        "brand new {name}",  # a variant's own prompt skips every mutation, the defaults' too
        "from a file {name}",
    ]
    clash = write(
        tmp_path / "clash.yaml",
        "experiment_id: x\nvariants:\n  - {variant_id: v, initial_prompt: a, prompt_mutations: [{type: prefix, content: b}]}\n",
    )
    result = run_cli("validate", clash)
    assert result.code == 1 and "variants.0.prompt_mutations: set one of initial_prompt" in result.err


def test_mutations_apply_to_each_rows_filled_prompt_file(tmp_path: Path) -> None:
    """As coder_eval: the prompt file's text without its blank ends, the row filled in, then the mutations (a
    replace of what the row brought replaces it); a mutation's own ${row.x} is filled too (ours)."""
    mutations = "[{type: replace, pattern: apple, replacement: pear}, {type: suffix, content: 'row ${row.id}'}]"
    experiment = _experiment(tmp_path, f"  - variant_id: base\n  - variant_id: v\n    prompt_mutations: {mutations}\n")
    write(tmp_path / "tasks/prompt.md", "\n  Eat ${row.fruit}.\n\n")
    rows = [{"id": "a", "fruit": "apple"}, {"id": "b", "fruit": "plum"}]
    task = task_with(initial_prompt=None, initial_prompt_file="prompt.md", dataset={"rows": rows})
    resolved = resolve(
        RunSpec(task_paths=[str(write_task(tmp_path / "tasks", task))], experiment=str(experiment))
    ).row_tasks
    assert [rt.task.initial_prompt for rt in resolved] == [
        "Eat apple.",
        "Eat plum.",
        "Eat pear.\n\nrow a",
        "Eat plum.\n\nrow b",
    ]


def test_a_mutation_a_row_makes_invalid_is_that_rows_problem(tmp_path: Path) -> None:
    """A regex pattern filled from a row that no longer compiles is said with the row, not an internal error."""
    mutation = "[{type: replace, pattern: '${row.word}', replacement: X, regex: true}]"
    experiment = _experiment(tmp_path, f"  - variant_id: v\n    prompt_mutations: {mutation}\n")
    task = task_with(initial_prompt="Say ${row.word}", dataset={"rows": [{"id": "a", "word": "a(b"}]})
    spec = RunSpec(task_paths=[str(write_task(tmp_path / "tasks", task))], experiment=str(experiment))
    (problem,) = resolve(spec).problems
    assert "prompt mutation 1 with row 'a'" in problem.message and "invalid regular expression" in problem.message


def test_repeats_precedence_and_driver(tmp_path: Path) -> None:
    experiment = _experiment(
        tmp_path,
        "  - variant_id: one\n  - variant_id: three\n    repeats: 3\n    driver: docker\n",
        "defaults: {repeats: 2}\n",
    )
    task = str(write_task(tmp_path / "tasks", task_with(sandbox={"python": None})))
    one, three = resolve(RunSpec(task_paths=[task], experiment=str(experiment))).row_tasks
    assert (one.replicates, three.replicates) == (2, 3)
    assert (one.task.sandbox.driver, three.task.sandbox.driver) == ("tempdir", "docker")
    forced = resolve(RunSpec(task_paths=[task], experiment=str(experiment), repeats=4, driver="tempdir")).row_tasks
    assert [(rt.replicates, rt.task.sandbox.driver) for rt in forced] == [(4, "tempdir"), (4, "tempdir")]
    twice = write(
        tmp_path / "twice.yaml", "experiment_id: t\nrepeats: 2\ndefaults: {repeats: 3}\nvariants: [{variant_id: v}]\n"
    )
    assert "repeats: set repeats once" in run_cli("validate", twice).err
    with pytest.raises(ValueError, match="less than or equal to 99"):
        RunSpec(repeats=100)


def test_experiment_by_name_and_the_base_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    task = str(write_task(tmp_path / "tasks", task_with(pre_run=[{"command": "task"}], post_run=[{"command": "task"}])))
    _experiment(
        tmp_path,
        "  - variant_id: named\n",
        "defaults:\n  pre_run: [{command: named}]\n  post_run: [{command: named}]\n",
    )
    assert RunSpec(experiment="exp").experiment == "experiments/exp.yaml"
    assert RunSpec(experiment="nowhere").experiment == "nowhere"
    (named,) = resolve(RunSpec(task_paths=[task], experiment="exp")).row_tasks
    assert named.variant_id == "named"
    write(
        tmp_path / "experiments/default.yaml",
        """
        experiment_id: default
        defaults:
          repeats: 2
          agent: {model: base-model}
          pre_run: [{command: base}]
          post_run: [{command: base}]
        variants: [{variant_id: base}]
        """,
    )
    (alone,) = resolve(RunSpec(task_paths=[task])).row_tasks  # the base layer is the run's experiment
    assert (alone.variant_id, alone.replicates, alone.task.agent.model) == ("base", 2, "base-model")
    (under,) = resolve(RunSpec(task_paths=[task], experiment="exp")).row_tasks  # under -e: its defaults only
    assert (under.variant_id, under.replicates, under.task.agent.model) == ("named", 2, "base-model")
    # the sandbox steps come from the run's experiment only, as coder_eval takes them (its default's cleanup
    # does not run under -e); without -e the base layer's are the run's
    assert [h.command for h in under.task.pre_run] == ["named", "task"]
    assert [h.command for h in under.task.post_run] == ["task", "named"]
    assert [h.command for h in alone.task.pre_run] == ["base", "task"]
    assert [h.command for h in alone.task.post_run] == ["task", "base"]
    missing = resolve(RunSpec(task_paths=[task], experiment="nowhere"))
    assert [str(p) for p in missing.problems] == [
        "no such experiment file (nor experiments/nowhere.yaml, experiments/nowhere.yml or experiments/nowhere;"
        " experiments here: exp): nowhere"
    ]


# ----------------------------------------------------------------------------- datasets: split and sampling


def test_split_and_sample_per_stratum(tmp_path: Path) -> None:
    rows = [
        {"id": "a1", "split": "train", "expected_skill": "a"},
        {"id": "a2", "split": "test", "expected_skill": "a"},
        {"id": "a3", "split": "test", "expected_skill": "a"},
        {"id": "b1", "split": "test", "expected_skill": "b"},
        {"id": "u", "expected_skill": "b"},
    ]
    task = write_task(tmp_path, agentless_task(dataset={"rows": rows, "sample_seed": 3}))

    def ids(**spec: Any) -> list[str]:
        return [rt.row_id for rt in resolve(RunSpec(task_paths=[str(task)], **spec)).row_tasks]

    assert ids(split="test") == ["a2", "a3", "b1"]  # the unlabelled row goes once the dataset is labelled
    assert ids(split="test", sample_per_stratum=1) in (["a2", "b1"], ["a3", "b1"])
    assert len(ids(sample_per_stratum=1)) == 2 and ids(sample_per_stratum=1, sample=5) == ids()  # --sample wins
    # a split no row of a labelled dataset has: the selector is wrong, the run refused (coder_eval's SplitSelectorError)
    other = write_task(tmp_path, agentless_task(task_id="other"), "other.yaml")
    refused = resolve(RunSpec(task_paths=[str(task), str(other)], split="dev"))
    assert refused.skipped == [] and [(p.path, p.field) for p in refused.problems] == [
        (str(task), "dataset.split_field")
    ]
    assert refused.problems[0].message == (
        "--split 'dev': no row of the dataset is in that split (split_field 'split'); "
        "labelled splits present: ['test', 'train']"
    )
    unlabelled = write_task(tmp_path, agentless_task(task_id="u", dataset={"rows": [{"id": "x"}]}), "u.yaml")
    assert [rt.row_id for rt in resolve(RunSpec(task_paths=[str(unlabelled)], split="test")).row_tasks] == ["x"]


def test_a_split_label_that_is_not_text_compares_as_its_str(tmp_path: Path) -> None:
    """coder_eval's DATASETS.md: "non-string values compare via str()": a JSON ``true`` is the split ``True``."""
    rows = [{"id": "a", "holdout": True}, {"id": "b", "holdout": False}, {"id": "c", "holdout": 1.0}]
    task = write_task(tmp_path, agentless_task(dataset={"rows": rows, "split_field": "holdout"}))

    def ids(split: str) -> list[str]:
        return [rt.row_id for rt in resolve(RunSpec(task_paths=[str(task)], split=split)).row_tasks]

    assert (ids("True"), ids("False"), ids("1.0"), ids("true")) == (["a"], ["b"], ["c"], [])


def test_coder_eval_agent_fields_of_the_release_additional_ignore_patterns_variant_and_pure(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from coder_eval_dagster.core.agents.opencode import arguments
    from coder_eval_dagster.core.models.agent import AgentConfig

    aliased = task_with(agent={"additional_ignore_patterns": ["*.log"]})
    (row_task,) = _resolved(tmp_path, aliased)
    assert row_task.task.agent.ignore_patterns == ["*.log"]
    opencode = AgentConfig.model_validate({"type": "opencode", "model": "custom/m", "variant": "high", "pure": True})
    assert arguments(SimpleNamespace(config=opencode), None)[-2:] == ["--variant", "high"]  # type: ignore[arg-type]
    (elsewhere,) = _problems(tmp_path, task_with(agent={"type": "codex", "variant": "high"}), "a.yaml")
    assert "agent.variant: only allowed with type opencode, not codex" in elsewhere
    impure = task_with(agent={"type": "opencode", "model": "custom/m", "pure": False})
    (loaded_plugins,) = _problems(tmp_path, impure, "b.yaml")
    assert "agent.pure: opencode always runs without external plugins here" in loaded_plugins


def test_blocks_written_with_no_value_are_not_set(tmp_path: Path) -> None:
    """coder_eval reads `agent:`, `run_limits:` and `sandbox.template_sources:` holding nothing (their lines all
    commented out) as not set: the experiment's defaults fill them, where a null replaced them (and was refused)."""
    task = write(
        tmp_path / "tasks/t.yaml",
        """
        task_id: t
        description: d
        agent:
          # type: claude-code
        run_limits:
          # max_turns: 20
        sandbox:
          python: null
          template_sources:
        pre_run: [{command: "echo x > x"}]
        success_criteria: [{type: file_exists, path: x, description: x}]
        """,
    )
    experiment = _experiment(
        tmp_path, "  - variant_id: v\n", "defaults:\n  agent: {type: none}\n  run_limits: {task_timeout: 60}\n"
    )
    result = resolve(RunSpec(task_paths=[str(task)], experiment=str(experiment)))
    assert result.problems == []
    (row_task,) = result.row_tasks
    assert (row_task.task.agent.type, row_task.task.run_limits.task_timeout) == ("none", 60)
    assert row_task.task.sandbox.template_sources == []
