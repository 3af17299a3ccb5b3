"""Errors a new user meets: suggestions, every problem of a file in one pass, clear locations."""

from __future__ import annotations

from pathlib import Path

from ..support.helpers import run_cli, write


def test_did_you_mean_for_fields_criterion_types_agent_types_and_overrides(tmp_path: Path) -> None:
    task = write(
        tmp_path / "t.yaml",
        """
        task_id: x
        descripton: a typo
        agent: {type: claude-cod}
        initial_prompt: p
        success_criteria:
          - {type: file_exist, path: a, description: d}
        """,
    )
    result = run_cli("validate", task)
    assert result.code == 1
    assert "descripton: unknown field (not part of the format) (did you mean `description`?)" in result.err
    assert "unknown type 'file_exist' (did you mean `file_exists`?)" in result.err
    assert "agent.type:" in result.err and "(did you mean `claude-code`?)" in result.err

    write(
        tmp_path / "ok/t.yaml",
        "task_id: y\ndescription: d\nagent: {type: none}\nsuccess_criteria: [{type: file_exists, path: a, description: d}]\n",
    )
    write(
        tmp_path / "ok/u.yaml",
        "task_id: z\ndescription: d\nagent: {type: none}\nsuccess_criteria: [{type: file_exists, path: a, description: d}]\n",
    )
    listed = run_cli("list", tmp_path / "ok", "-D", "run_limits.max_turn=3")
    assert listed.code == 2  # the command's usage, as for run
    assert listed.err.strip() == "-D: run_limits.max_turn: no such field in the task format (did you mean `max_turns`?)"


def test_every_problem_of_a_file_in_one_pass(tmp_path: Path) -> None:
    task = write(
        tmp_path / "t.yaml",
        """
        task_id: x
        description: d
        agent: {type: none}
        dataset: {rows: [{id: a}], sample_per_stratum: -1}
        unknown_top: 1
        success_criteria:
          - {type: run_command, command: "true", description: d, timeout: -5}
        """,
    )
    result = run_cli("validate", task)
    assert result.code == 1
    assert "dataset.sample_per_stratum" in result.err
    assert "unknown_top" in result.err
    assert "success_criteria.0.timeout" in result.err

    moved = write(
        tmp_path / "moved.yaml",
        """
        task_id: m
        description: d
        task_timeout: 100
        initial_prompt: hi
        agent: {type: claude-code, max_turns: 5, bogus: 1}
        success_criteria: [{type: file_exists, path: a, description: d}]
        max_iterations: 2
        """,
    )
    lines = run_cli("validate", moved).err.strip().splitlines()
    assert lines == [  # a moved cap is said with the block's other problems, not instead of them
        f"{moved}:4: task_timeout: no longer supported here; it lives under run_limits.task_timeout",
        f"{moved}:6: agent.max_turns: no longer supported here; it lives under run_limits.max_turns",
        f"{moved}:6: agent.bogus: unknown field (not part of the format)",
        f"{moved}:8: max_iterations: unknown field (not part of the format)",
    ]


def test_yaml_syntax_errors_give_line_column_and_the_quoting_hint(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", "task_id: x\ndescription: a: b\n")
    result = run_cli("validate", task)
    assert result.code == 1
    assert f"{task}:2: (document): YAML syntax error (line 2, column 15)" in result.err
    assert 'must be quoted, e.g. description: "a: b"' in result.err


def test_a_missing_path_has_no_made_up_line(tmp_path: Path) -> None:
    result = run_cli("validate", tmp_path / "nonexistent")
    assert result.code == 1
    assert result.err.strip() == f"no such file or directory: {tmp_path / 'nonexistent'}"


def test_coder_eval_forms_refused_here_say_why_in_one_line_and_numbers_are_finite(tmp_path: Path) -> None:
    task = write(
        tmp_path / "t.yaml",
        """
        task_id: x
        description: d
        agent: {type: none}
        sandbox: {docker: {network: llm_only}}
        success_criteria:
          - {type: file_exists, path: a, description: d, weight: .inf}
          - {type: file_exists, path: b, description: d, pass_threshold: .nan}
        """,
    )
    result = run_cli("validate", task)
    assert result.code == 1
    lines = result.err.strip().splitlines()
    assert lines == [
        f"{task}:5: sandbox.docker.network: unknown network 'llm_only' (llm_only is coder_eval's later form, "
        "not in its release): use bridge, none, host, or a block {allow: [host:port, ...]}",
        f"{task}:7: success_criteria.0.weight: Input should be a finite number",
        f"{task}:8: success_criteria.1.pass_threshold: Input should be a finite number",
    ]
    experiment = write(
        tmp_path / "e.yaml",
        """
        experiment_id: e
        defaults:
          agent:
            by_type: {claude-code: {permission_mode: bypassPermissions}}
        variants:
          - variant_id: r
            prompt_mutations: [{type: rephrase, instructions: formal}]
        """,
    )
    refused = run_cli("validate", task.parent / "none", "-e", experiment)
    assert "e.yaml:5: defaults.agent.by_type: not supported: coder_eval's later per-agent defaults block" in refused.err
    assert "e.yaml:8: variants.0.prompt_mutations.0.type: rephrase is not supported" in refused.err
    assert "did you mean" not in refused.err


def claude_task(folder: Path, agent: str) -> Path:
    """A claude-code task whose agent block is ``agent`` (YAML flow fields)."""
    return write(
        folder / "t.yaml",
        f"""
        task_id: t
        description: d
        initial_prompt: p
        agent: {{type: claude-code, {agent}}}
        success_criteria: [{{type: run_command, command: "true", description: d}}]
        """,
    )


def test_a_claude_settings_file_is_checked_at_load(tmp_path: Path) -> None:
    """Missing, not JSON, not an object: the task's problem at its line, not a FileNotFoundError of the run."""
    write(tmp_path / "bad.json", "not json")
    write(tmp_path / "list.json", "[1]")
    write(tmp_path / "ok.json", '{"env": {"A": "1"}}')
    expected = {
        "nope/settings.json": "agent.claude_settings: file not found: nope/settings.json (relative to the task YAML)",
        "bad.json": "agent.claude_settings: bad.json is not JSON: Expecting value: line 1 column 1 (char 0)",
        "list.json": "agent.claude_settings: list.json is not a JSON object",
    }
    for settings, message in expected.items():
        result = run_cli("validate", claude_task(tmp_path, f"claude_settings: {settings}"))
        assert result.code == 1 and result.err.startswith(f"{tmp_path / 't.yaml'}:5: {message}"), result.err
    assert run_cli("validate", claude_task(tmp_path, "claude_settings: ok.json")).code == 0


def test_a_mistyped_sdk_option_says_what_was_expected_and_what_was_given(tmp_path: Path) -> None:
    expected = {
        "effort: 7": "effort: expected 'low', 'medium', 'high', 'xhigh' or 'max'; given 7 (int)",
        "max_thinking_tokens: abc": "max_thinking_tokens: expected a valid integer, unable to parse string as an "
        "integer; given 'abc' (str)",
        "fallback_model: [1]": "fallback_model: expected a valid string; given [1] (list)",
        "betas: [context-1m-2025-08-07, 1]": "betas.1: expected 'context-1m-2025-08-07'; given 1 (int)",
    }
    for option, message in expected.items():
        result = run_cli("validate", claude_task(tmp_path, f"sdk_options: {{{option}}}"))
        assert result.code == 1 and result.err == f"{tmp_path / 't.yaml'}:5: agent.sdk_options.{message}\n"


def _sdk_options_task(tmp_path: Path, *options: str) -> Path:
    """A claude-code task whose sdk_options hold ``options``, a ``key: value`` a line from line 8."""
    lines = "".join(f"    {option}\n" for option in options)
    head = "\ntask_id: t\ndescription: d\ninitial_prompt: p\nagent:\n  type: claude-code\n  sdk_options:\n"
    tail = 'success_criteria: [{type: run_command, command: "true", description: d}]\n'
    return write(tmp_path / "t.yaml", head + lines + tail)


def test_a_mistyped_sdk_option_is_pointed_at_its_own_line(tmp_path: Path) -> None:
    """The CONTRACT's `<path>:<line>: <dotted.field.path>`: the key's line, not the `sdk_options:` line."""
    task = _sdk_options_task(tmp_path, "effort: high", "max_thinking_tokens: lots")
    result = run_cli("validate", task)
    assert result.code == 1 and result.err.startswith(
        f"{task}:9: agent.sdk_options.max_thinking_tokens: expected a valid integer"
    )


def test_every_refused_sdk_option_is_said_at_once(tmp_path: Path) -> None:
    """CONTRACT's "one error per problem": only the first refused key was said, the next after a fix."""
    task = _sdk_options_task(tmp_path, "model: x", "allowed_tools: [Read]", "bogus_key: 1", "effort: 7")
    result = run_cli("validate", task)
    assert result.code == 1 and result.err.splitlines() == [
        f"{task}:8: agent.sdk_options.model: managed by coder-eval and cannot be set through sdk_options",
        f"{task}:9: agent.sdk_options.allowed_tools: managed by coder-eval and cannot be set through sdk_options",
        f"{task}:10: agent.sdk_options.bogus_key: not a ClaudeAgentOptions field of the installed claude-agent-sdk",
        f"{task}:11: agent.sdk_options.effort: expected 'low', 'medium', 'high', 'xhigh' or 'max'; given 7 (int)",
    ], result.err


def test_every_broken_rule_between_fields_is_said_at_once(tmp_path: Path) -> None:
    """CONTRACT's "one error per problem": a type: none task with a prompt and two trajectory criteria said all three
    (it said the prompt, then after a fix the first criterion, then the next)."""
    task = write(
        tmp_path / "t.yaml",
        """\
        task_id: t
        description: d
        initial_prompt: p
        agent: {type: none}
        success_criteria:
          - {type: file_exists, path: a, description: a}
          - {type: command_executed, command_pattern: pytest, description: b}
          - {type: commands_efficiency, expected_commands: 3, description: c}
        """,
    )
    result = run_cli("validate", task)
    assert result.code == 1
    assert [line.split(": ", 2)[1] for line in result.err.splitlines()] == [
        "initial_prompt",
        "success_criteria.1.type",
        "success_criteria.2.type",
    ], result.err


def test_a_problem_is_said_once_when_a_folder_is_named_twice(tmp_path: Path) -> None:
    """CONTRACT 2's one error per problem: a folder named as a path and by an experiment file among the paths."""
    write(
        tmp_path / "tasks" / "d.yaml",
        "task_id: d\ndescription: d\nagent: {type: none}\n"
        "success_criteria:\n  - {type: file_exists, pathx: a, description: x}\n",
    )
    experiment = write(
        tmp_path / "e.yaml", f"experiment_id: e\ntasks: [{tmp_path / 'tasks'}]\nvariants: [{{variant_id: a}}]\n"
    )
    result = run_cli("validate", tmp_path / "tasks", experiment)
    assert result.code == 1
    assert sorted(result.err.splitlines()) == [
        f"{tmp_path / 'tasks' / 'd.yaml'}:5: success_criteria.0.path: Field required",
        f"{tmp_path / 'tasks' / 'd.yaml'}:5: success_criteria.0.pathx: unknown field (not part of the format) "
        "(did you mean `path`?)",
    ]


def test_a_variant_simulation_field_is_named_at_its_line(tmp_path: Path) -> None:
    write(
        tmp_path / "t.yaml",
        "task_id: t\ndescription: d\nagent: {type: none}\nsuccess_criteria: [{type: file_exists, path: a, description: x}]\n",
    )
    experiment = (
        "experiment_id: e\ntasks: [t.yaml]\nvariants:\n  - variant_id: a\n    simulation:\n      {key}: {value}\n"
    )
    for key, value, message in (
        ("n_trials", 0, "Input should be greater than or equal to 1"),
        ("n_trial", 2, "unknown simulation field"),
    ):
        path = write(tmp_path / "e.yaml", experiment.format(key=key, value=value))
        result = run_cli("validate", path)
        assert result.code == 1 and result.err == f"{path}:6: variants.0.simulation.{key}: {message}\n", result.err


def test_every_suite_threshold_problem_is_said_at_once(tmp_path: Path) -> None:
    """CONTRACT 2's one error per problem: four broken thresholds took four rounds of validate."""
    path = write(
        tmp_path / "st.yaml",
        "task_id: st\ndescription: d\nagent: {type: none}\ndataset: {rows: [{id: a, expected_skill: x}]}\n"
        "success_criteria:\n  - type: skill_triggered\n    skill_name: x\n"
        '    expected_skill: "${row.expected_skill}"\n    description: x\n'
        "    suite_thresholds: {accuracy: 1.5, recall.yes: -1, f1.maybe: 0.5, bogus: 1}\n",
    )
    result = run_cli("validate", path)
    fields = [line.split(": ")[1] for line in result.err.splitlines()]
    assert result.code == 1 and fields == [
        f"success_criteria.0.suite_thresholds.{metric}" for metric in ("accuracy", "recall.yes", "f1.maybe", "bogus")
    ], result.err


def test_a_key_that_is_not_text_is_named_at_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "k.yaml",
        "task_id: k\ndescription: d\nagent: {type: none}\nrun_limits:\n  max_turns: 3\n  2: x\n"
        "success_criteria: [{type: file_exists, path: a, description: x}]\n1: x\n",
    )
    result = run_cli("validate", path)
    assert result.code == 1 and result.err.splitlines() == [
        f"""{path}:6: run_limits.2: a key must be text, and '2' is read as a number: write it in quotes ("2")""",
        f"""{path}:8: 1: a key must be text, and '1' is read as a number: write it in quotes ("1")""",
    ], result.err
