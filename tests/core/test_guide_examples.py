"""Every complete YAML example of the task-definition guide validates.

Fragments are embedded in a minimal task (or experiment) exactly as written;
where the guide's fragment omits a required field (a criterion's
``description``), the test adds it and says so.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from coder_eval_dagster.core.yamlio import load_yaml_text

from ..support.helpers import MINIMAL_TASK, run_cli, write, write_task

CRITERIA_EXAMPLES = {
    "file_exists": r"""
        - type: "file_exists"
          path: "app.py"
          description: "app.py must be created"
    """,
    "file_contains": r"""
        - type: "file_contains"
          path: "app.py"
          includes:
            - "Hello"
            - "import datetime"
          excludes:
            - "TODO"
            - "FIXME"
          description: "File must contain required strings"
          weight: 1.0
          pass_threshold: 0.9
    """,
    "file_check": r"""
        - type: "file_check"
          path: "main.py"
          includes:
            - "from uipath import UiPath"
            - "def main"
          excludes:
            - "import os"
          patterns:
            - pattern: "def main\\(.*\\):"
              must_match: true
              flags: 0
          description: "main.py exists with correct imports and structure"
          weight: 1.0
          pass_threshold: 0.9
        - type: "file_check"
          path: "app.py"
          description: "app.py must be created"
    """,
    "json_check": r"""
        - type: "json_check"
          path: "data.json"
          description: "data.json is valid JSON"
        - type: "json_check"
          path: "output.json"
          json_schema: "schemas/output_schema.json"
          description: "Output conforms to expected schema"
        - type: "json_check"
          path: "report.json"
          assertions:
            - expression: "status"
              expected: "success"
            - expression: "length(results)"
              operator: "gte"
              expected: 1
            - expression: "metadata.version"
              operator: "regex"
              expected: "^\\d+\\.\\d+\\.\\d+$"
          description: "Report has correct structure and values"
        - type: "json_check"
          path: "result.json"
          json_schema: "schemas/result_schema.json"
          assertions:
            - expression: "status"
              expected: "completed"
            - expression: "items[?active].name"
              operator: "exists"
          description: "Result is valid and has expected values"
    """,
    "run_command": r"""
        - type: "run_command"
          command: "python app.py"
          timeout: 30
          expected_exit_code: 0
          description: "Script must run successfully"
          weight: 2.0
        - type: "run_command"
          command: "python hello.py"
          expected_stdout: "Hello, World!"
          stdout_match: "exact"
          description: "Script must output the correct text"
    """,
    "file_matches_regex": r"""
        - type: "file_matches_regex"
          path: "config.py"
          pattern: "^API_KEY = ['\"]\\w+['\"]$"
          must_match: true
          flags: 0
          description: "Config must define API_KEY"
    """,
    "reference_comparison": r"""
        - type: "reference_comparison"
          agent_file: "solution.py"
          comparison_method: "ast"
          similarity_threshold: 0.8
          description: "Solution must match reference structure"
          weight: 2.0
    """,
    "command_executed": r"""
        - type: "command_executed"
          tool_name: "Bash"
          command_pattern: "curl.*wttr\\.in"
          min_count: 1
          require_success: true
          description: "Agent must use curl to fetch weather"
    """,
    "cli_called": r"""
        - type: "cli_called"
          description: "Switched the project to the capable model"
          log: "mocks/calls.jsonl"
          verb: "ixp projects configure-model"
          positional: ["my_invoices-ixp"]
          flags:
            model: "gemini_2_5_pro"
          tool: "uip"
          min_count: 1
          max_count: null
          ignore_flags: ["output"]
        - type: "cli_called"
          description: "Did not delete proj-1"
          log: "mocks/calls.jsonl"
          verb: "ixp fields delete"
          positional: ["proj-1"]
          min_count: 0
          max_count: 0
        - type: "cli_called"
          description: "Listed proj-1"
          log: "mocks/calls.jsonl"
          verb: "ixp projects list"
          positional: ["proj-1"]
          value_flags: ["folder"]
        - type: "cli_called"
          description: "aliases"
          log: "mocks/calls.jsonl"
          flags:
            yes:
              present: true
              aliases: ["y"]
        - type: "cli_called"
          description: "DOTALL conjunction"
          log: "mocks/calls.jsonl"
          flags:
            updates:
              matches_regex: '"name": "Invoice Number".*Do NOT use the Purchase Order'
              flags: 16
    """,
    "commands_efficiency": r"""
        - type: "commands_efficiency"
          expected_commands: 8
          description: "Agent should solve this in ~8 tool calls"
    """,
    "uipath_eval": r"""
        - type: "uipath_eval"
          agent_name: "my-agent"
          eval_set: "regression-v1"
          thresholds:
            accuracy: 0.8
            f1: 0.75
          description: "Agent must meet accuracy and F1 thresholds"
    """,
    "llm_judge": r"""
        - type: "llm_judge"
          description: "Implementation follows the rubric"
          prompt: |
            Grade the implementation on correctness and idiomatic style.
            - 1.0: correct and idiomatic
            - 0.5: correct but not idiomatic
            - 0.0: incorrect or missing
          files: ["main.py", "tests/test_main.py"]
          include_reference: true
          include_agent_output: false
          include_tool_calls: false
          include_dialog: false
          model: "anthropic.claude-sonnet-4-6"
          temperature: 0.0
          max_tokens: 2000
          max_file_chars: 20000
          weight: 2.0
          pass_threshold: 0.7
    """,
    "agent_judge": r"""
        - type: "agent_judge"
          description: "Judge validates the generated XAML via CLI"
          prompt: |
            Inspect Main.xaml and grade how well it matches the task requirements.
          files: ["Main.xaml"]
          include_reference: true
          include_agent_output: false
          include_tool_calls: false
          include_dialog: false
          max_turns: 5
          turn_timeout: 300
          agent:
            model: "claude-sonnet-4-6"
            permission_mode: "bypassPermissions"
            allowed_tools: ["Bash", "Read", "Grep", "Glob"]
            sdk_options: {effort: low}
          weight: 5.0
          pass_threshold: 0.7
    """,
    "classification_match": r"""
        - type: "classification_match"
          path: "result.txt"
          expected_label: "positive"
          allowed_labels: [positive, negative]
          case_sensitive: false
          description: "Sentiment label matches ground truth"
    """,
    "skill_triggered": r"""
        - type: "skill_triggered"
          description: "uipath-agents activation"
          skill_name: uipath-agents
          expected_skill: "${row.expected_skill}"
          suite_thresholds:
            recall.yes: 0.70
            precision.yes: 0.80
    """,
}

REFERENCE = {"code": "def f():\n    return 1\n"}
SKILL_DATASET = {"rows": [{"id": "pos", "expected_skill": "uipath-agents"}, {"id": "neg", "expected_skill": ""}]}


@pytest.mark.parametrize("kind", sorted(CRITERIA_EXAMPLES))
def test_criterion_examples_validate(tmp_path: Path, kind: str) -> None:
    criteria = load_yaml_text(textwrap.dedent(CRITERIA_EXAMPLES[kind]))
    task = {**MINIMAL_TASK, "success_criteria": criteria, "reference": REFERENCE}
    if kind == "skill_triggered":
        task["dataset"] = SKILL_DATASET
    result = run_cli("validate", write_task(tmp_path, task))
    assert result.code == 0, result.err


def test_every_criterion_type_has_an_example() -> None:
    from coder_eval_dagster.core.criteria import REGISTRY

    # the guide's fifteen, and coder_eval's earlier import_check (tests/core/test_coder_eval_forms.py)
    assert set(CRITERIA_EXAMPLES) == set(REGISTRY) - {"import_check"}
    assert len(CRITERIA_EXAMPLES) == 15


TASK_FRAGMENTS = {
    "dataset": r"""
        dataset:
          rows:
            - id: alpha
              expected: "alpha"
          id_field: "id"
          sample_per_stratum: 5
          stratify_field: "expected_skill"
          sample_seed: 1234
    """,
    "skip": r"""
        task_id: "codex_disallowed_tools_test"
        skip: true
    """,
    "agent": r"""
        agent:
          type: "claude-code"
          permission_mode: "acceptEdits"
          allowed_tools:
            - "Read"
            - "Write"
            - "Bash"
          model: "claude-sonnet-4-20250514"
          sdk_options:
            effort: high
    """,
    "run_limits": r"""
        run_limits:
          max_turns: 20
          expected_turns: 8
          task_timeout: 600
          turn_timeout: 300
          max_total_tokens: 200000
          max_usd: 2.50
          stop_early: false
    """,
    "stop_early": r"""
        run_limits:
          max_turns: 30
        success_criteria:
          - type: skill_triggered
            skill_name: date-teller
            expected_skill: date-teller
            description: added by the test
            stop_early:
              decide_within: 5
          - type: file_exists
            path: report.md
            description: added by the test
    """,
    "sandbox": r"""
        sandbox:
          driver: "tempdir"
          python:
            env_packages:
              - pytest
              - pylint>=3.0
          ignore_patterns:
            - "!dist"
            - "!node_modules"
            - "*.bak"
          limits:
            timeout: 300
            max_memory_mb: 512
            max_cpus: 2
            max_pids: 512
            max_disk_mb: 1024
    """,
    "template_sources": r"""
        sandbox:
          template_sources:
            - type: "repo"
              url: "https://github.com/user/repo.git"
              commit: "abc123"
            - type: "template_dir"
              path: "../templates/python-starter"
              mount_point: "."
            - type: "starter_files"
              files:
                - path: "README.md"
                  content: |
                    # My Project
                - path: "src/main.py"
                  content: |
                    def main():
                        pass  # TODO: Implement
            - type: "starter_files"
              files:
                - path: "requirements.txt"
                  content: "pytest>=8.0\\npylint>=3.0"
    """,
    "reference_file": r"""
        reference:
          file: "reference_solution.py"
    """,
    "reference_code": r"""
        reference:
          code: |
            def fibonacci(n):
                if n <= 1:
                    return n
                return fibonacci(n - 1) + fibonacci(n - 2)
    """,
    "pre_run": r"""
        pre_run:
          - command: "python seed_db.py"
            timeout: 30
          - command: "start-mock-server.sh &"
          - command: "python check_connectivity.py"
            fail_on_error: false
    """,
    "post_run": r"""
        post_run:
          - command: "python3 validate_flow.py output.flow 12 4"
            timeout: 60
          - command: "cat results.json | jq '.summary'"
          - command: "tar czf /tmp/artifacts.tar.gz ."
            timeout: 120
    """,
    "simulation": r"""
        simulation:
          enabled: true
          persona: |
            A non-technical business analyst who knows the outcome they want
            but not how automation works. Mildly impatient.
          goal: |
            Build a flow that reads invoice PDFs from an Outlook folder.
          constraints:
            - "Do not paste code — you cannot read code."
          max_turns: 12
          stop_token: "<<<END>>>"
          stop_on_criteria_pass: true
          max_total_tokens: 150000
          n_trials: 3
          check_criteria: every_turn
    """,
}


@pytest.mark.parametrize("name", sorted(TASK_FRAGMENTS))
def test_task_fragments_validate(tmp_path: Path, name: str) -> None:
    write(tmp_path / "templates/python-starter/main.py", "print('hi')\n")
    write(tmp_path / "tasks/reference_solution.py", "x = 1\n")
    task = {**MINIMAL_TASK, **load_yaml_text(textwrap.dedent(TASK_FRAGMENTS[name]))}
    result = run_cli("validate", write_task(tmp_path / "tasks", task))
    assert result.code == 0, result.err


def test_agentless_example_validates(tmp_path: Path) -> None:
    path = write(
        tmp_path / "agentless.yaml",
        """
        task_id: agentless
        description: system check
        agent:
          type: none
        sandbox:
          driver: tempdir
        pre_run:
          - command: "uip orchestrator ping"
        success_criteria:
          - type: run_command
            command: "uip orchestrator ping"
            description: Orchestrator is reachable.
        """,
    )
    assert run_cli("validate", path).code == 0


def test_complete_example_validates(tmp_path: Path) -> None:
    write(tmp_path / "templates/python-starter/main.py", "print('hi')\n")
    path = write(
        tmp_path / "tasks/calculator_agent.yaml",
        r"""
        task_id: "calculator_agent"
        description: "Create a calculator agent using LangGraph"
        initial_prompt: |
          Create a calculator agent using StateGraph that performs
          basic arithmetic operations (+, -, *, /).
        agent:
          type: "claude-code"
          permission_mode: "acceptEdits"
          allowed_tools: ["Read", "Write", "Bash"]
        sandbox:
          driver: "tempdir"
          python:
            env_packages:
              - pytest
              - pylint>=3.0
          template_sources:
            - type: "template_dir"
              path: "../templates/python-starter"
        success_criteria:
          - type: "file_exists"
            path: "main.py"
            description: "main.py must exist"
            weight: 0.5
          - type: "file_contains"
            path: "main.py"
            includes: ["StateGraph", "BaseModel"]
            description: "Must use required libraries"
            weight: 2.0
          - type: "run_command"
            command: "python -m py_compile main.py"
            timeout: 10
            description: "Valid Python syntax"
          - type: "reference_comparison"
            agent_file: "main.py"
            comparison_method: "ast"
            similarity_threshold: 0.7
            description: "Code structure matches reference"
            weight: 2.5
          - type: "command_executed"
            tool_name: "Bash"
            command_pattern: "python.*main\\.py"
            min_count: 1
            description: "Agent must run the script"
        reference:
          code: |
            from pydantic import BaseModel
            graph = None
        """,
    )
    result = run_cli("validate", path)
    assert result.code == 0, result.err


def test_experiment_examples_validate(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", MINIMAL_TASK)
    path = write(
        tmp_path / "experiments/ab.yaml",
        """
        experiment_id: "skill-ab"
        description: "..."
        tasks: ["../tasks/"]
        repeats: 1
        defaults:
          run_limits: {max_turns: 30}
          pre_run:
            - command: "docker-compose up -d"
              timeout: 60
          post_run:
            - command: "rm -rf node_modules .npm-prefix"
              timeout: 30
        variants:
          - variant_id: baseline
            agent:
              model: "claude-sonnet-4-20250514"
          - variant_id: with-context-hint
            agent:
              model: "claude-sonnet-4-20250514"
            template_sources:
              - type: "starter_files"
                files:
                  - path: "CLAUDE.md"
                    content: |
                      The UiPath flows are in folder ID abc-123-def.
        """,
    )
    result = run_cli("validate", path)
    assert result.code == 0, result.err
    listed = run_cli("list", "-e", path)
    assert listed.out.split("\n")[:2] == ["baseline t1", "with-context-hint t1"]
