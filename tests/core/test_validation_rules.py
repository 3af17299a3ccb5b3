"""One valid and one invalid case per load-time rule of the guide.

Each invalid case must exit 1 and name the offending field as
``<path>:<line>: <dotted.field.path>: <message>``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ..support.helpers import criterion, run_cli, task_with, write, write_task

FE = criterion("file_exists", path="a.txt")
NONE_AGENT = {"type": "none"}


def agentless(**changes: Any) -> dict[str, Any]:
    return task_with(**{"initial_prompt": None, "agent": NONE_AGENT, **changes})


def with_criteria(*criteria: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return task_with(success_criteria=list(criteria), **changes)


SKILL = criterion("skill_triggered", skill_name="s", expected_skill="s")
CMD = criterion("command_executed", command_pattern="pytest")
CLASSIFY = criterion("classification_match", path="o.txt", expected_label="a", allowed_labels=["a", "b"])
CLI = criterion("cli_called", log="calls.jsonl")
ROWS = {"rows": [{"id": "r1"}]}  # suite thresholds gate a dataset's rows
SIMULATED = {"enabled": True, "persona": "p", "goal": "g"}

# (id, valid task, invalid task, field named in the error, message fragment)
RULES: list[tuple[str, dict[str, Any], dict[str, Any], str, str]] = [
    ("extra-top-level", task_with(), task_with(bogus=1), "bogus", "unknown field"),
    ("task-id-required", task_with(), task_with(task_id=None), "task_id", "required"),
    ("task-id-safe", task_with(task_id="ok.id-1"), task_with(task_id="a/b"), "task_id", "pattern"),
    # a file the run folder writes beside the id's folder: the run ended IsADirectoryError when it wrote it
    (
        "task-id-not-a-run-file",
        task_with(task_id="variant.jsonl"),
        task_with(task_id="variant.json"),
        "task_id",
        "a file the run folder writes",
    ),
    ("description-required", task_with(), task_with(description=None), "description", "required"),
    ("criteria-at-least-one", task_with(), task_with(success_criteria=[]), "success_criteria", "at least 1"),
    ("tags-kebab", task_with(tags=["pure-python"]), task_with(tags=["Pure_Python"]), "tags.0", "pattern"),
    ("skip-bool", task_with(skip=True), task_with(skip="maybe"), "skip", "boolean"),
    ("prompt-required", task_with(), task_with(initial_prompt=None), "initial_prompt", "required"),
    ("prompt-xor-file", task_with(), task_with(initial_prompt_file="p.md"), "initial_prompt_file", "not both"),
    (
        "prompt-file-exists",
        task_with(initial_prompt=None, initial_prompt_file="prompt.md"),
        task_with(initial_prompt=None, initial_prompt_file="missing.md"),
        "initial_prompt_file",
        "not found",
    ),
    # agent
    (
        "agent-type",
        task_with(agent={"type": "codex"}),
        task_with(agent={"type": "gpt"}),
        "agent.type",
        "unknown agent type 'gpt'",
    ),
    (
        "agent-model-not-blank",
        task_with(agent={"model": "claude-sonnet-4-6"}),
        task_with(agent={"model": " "}),
        "agent.model",
        "should match pattern",
    ),
    (
        "permission-mode",
        task_with(agent={"permission_mode": "plan"}),
        task_with(agent={"permission_mode": "yolo"}),
        "agent.permission_mode",
        "Input should be",
    ),
    (
        "agent-max-turns-moved",
        task_with(run_limits={"max_turns": 3}),
        task_with(agent={"max_turns": 3}),
        "agent.max_turns",
        "run_limits.max_turns",
    ),
    (
        "agent-turn-timeout-moved",
        task_with(run_limits={"turn_timeout": 30}),
        task_with(agent={"turn_timeout": 30}),
        "agent.turn_timeout",
        "run_limits.turn_timeout",
    ),
    ("top-max-turns-moved", task_with(), task_with(max_turns=3), "max_turns", "run_limits.max_turns"),
    ("top-task-timeout-moved", task_with(), task_with(task_timeout=60), "task_timeout", "run_limits.task_timeout"),
    (
        "system-prompt-claude-code-and-codex-only",
        task_with(agent={"type": "codex", "system_prompt": "Be terse."}),  # codex's developer instructions
        agentless(agent={"type": "none", "system_prompt": "Be terse."}),
        "agent.system_prompt",
        "only allowed with type claude-code or codex, not none",
    ),
    (
        "system-prompt-file-claude-code-and-codex-only",
        task_with(agent={"type": "codex", "system_prompt_file": "prompt.md"}),
        task_with(agent={"type": "opencode", "model": "custom/m", "system_prompt_file": "prompt.md"}),
        "agent.system_prompt_file",
        "only allowed with type claude-code or codex, not opencode",
    ),
    (
        "system-prompt-not-for-replay",
        task_with(agent={"type": "replay", "trajectory": "traj.yaml"}),
        task_with(agent={"type": "replay", "trajectory": "traj.yaml", "system_prompt": "Be terse."}),
        "agent.system_prompt",
        "only allowed with type claude-code or codex, not replay",
    ),
    (
        "plugins-empty-on-any-type",  # coder_eval's bare A/B variant (plugins: []) over a codex task
        task_with(agent={"type": "codex", "plugins": []}),
        task_with(agent={"type": "codex", "plugins": [{"type": "local", "path": "plug"}]}),
        "agent.plugins",
        "only allowed with type claude-code, not codex",
    ),
    (
        "allowed-tools-or-sdk-tools",
        task_with(agent={"sdk_options": {"tools": ["Read"]}}),
        task_with(agent={"allowed_tools": ["Read"], "sdk_options": {"tools": ["Read"]}}),
        "agent.sdk_options.tools",
        "set allowed_tools or sdk_options.tools, not both",
    ),
    (
        "sdk-options-known",
        task_with(agent={"sdk_options": {"effort": "high"}}),
        task_with(agent={"sdk_options": {"warp_speed": 9}}),
        "agent.sdk_options.warp_speed",
        "not a ClaudeAgentOptions field",
    ),
    (
        "sdk-options-managed",
        task_with(agent={"sdk_options": {"max_thinking_tokens": 1000}}),
        task_with(agent={"sdk_options": {"permission_mode": "plan"}}),
        "agent.sdk_options.permission_mode",
        "managed by coder-eval",
    ),
    (
        "sdk-options-cwd-managed",
        task_with(agent={"sdk_options": {"fallback_model": "m"}}),
        task_with(agent={"sdk_options": {"cwd": "/"}}),
        "agent.sdk_options.cwd",
        "managed by coder-eval",
    ),
    (
        "sdk-options-flags-managed",  # a CLI flag set directly would be a way around permission_mode and model
        task_with(agent={"sdk_options": {"fallback_model": "m"}}),
        task_with(agent={"sdk_options": {"extra_args": {"permission-mode": "bypassPermissions"}}}),
        "agent.sdk_options.extra_args",
        "managed by coder-eval",
    ),
    (
        "context-window-range",  # coder_eval's: claude-code's auto-compact window, 100,000 to 1,000,000 tokens
        task_with(agent={"context_window": 200_000}),
        task_with(agent={"context_window": 50_000}),
        "agent.context_window",
        "out of range for claude-code: 100,000 to 1,000,000 tokens",
    ),
    (
        "context-window-type",
        task_with(agent={"type": "codex", "context_window": 50_000}),
        task_with(agent={"type": "replay", "trajectory": "t.yaml", "context_window": 200_000}),
        "agent.context_window",
        "applied by the claude-code and codex agents only, not replay",
    ),
    (
        "context-window-settings",
        task_with(agent={"context_window": 200_000, "claude_settings": {"env": {}}}),
        task_with(agent={"context_window": 200_000, "claude_settings": {"autoCompactWindow": 300_000}}),
        "agent.context_window",
        "set only one",
    ),
    (
        "sdk-options-typed",
        task_with(agent={"sdk_options": {"effort": "low"}}),
        task_with(agent={"sdk_options": {"effort": "ludicrous"}}),
        "agent.sdk_options.effort",
        "expected 'low'",
    ),
    (
        "sdk-options-claude-only",
        task_with(agent={"type": "claude-code", "sdk_options": {"effort": "low"}}),
        task_with(agent={"type": "codex", "sdk_options": {"effort": "low"}}),
        "agent.sdk_options",
        "claude-code",
    ),
    (
        "replay-needs-trajectory",
        task_with(agent={"type": "replay", "trajectory": "traj.yaml"}),
        task_with(agent={"type": "replay"}),
        "agent.trajectory",
        "requires a trajectory",
    ),
    # type: none contract
    ("none-no-prompt", agentless(), agentless(initial_prompt="hi"), "initial_prompt", "type: none"),
    (
        "none-no-prompt-file",
        agentless(),
        agentless(initial_prompt_file="prompt.md"),
        "initial_prompt_file",
        "type: none",
    ),
    (
        "none-no-simulation",
        agentless(simulation={"enabled": False, "persona": "p", "goal": "g"}),
        agentless(simulation={"enabled": True, "persona": "p", "goal": "g"}),
        "simulation.enabled",
        "type: none",
    ),
    (
        "none-no-command-executed",
        agentless(),
        agentless(success_criteria=[CMD]),
        "success_criteria.0.type",
        "trajectory",
    ),
    (
        "none-no-skill-triggered",
        agentless(),
        agentless(success_criteria=[SKILL]),
        "success_criteria.0.type",
        "trajectory",
    ),
    (
        "none-no-reference-comparison",
        agentless(),
        agentless(reference={"code": "x=1"}, success_criteria=[criterion("reference_comparison", agent_file="a.py")]),
        "success_criteria.0.type",
        "trajectory",
    ),
    (
        "none-no-efficiency",
        agentless(),
        agentless(success_criteria=[criterion("commands_efficiency", expected_commands=3)]),
        "success_criteria.0.type",
        "trajectory",
    ),
    # sandbox
    (
        "sandbox-driver",
        task_with(sandbox={"driver": "docker"}),
        task_with(sandbox={"driver": "vm"}),
        "sandbox.driver",
        "Input should be",
    ),
    (
        "sandbox-python-null",
        task_with(sandbox={"python": None}),
        task_with(sandbox={"python": {"packages": ["x"]}}),
        "sandbox.python.packages",
        "unknown field",
    ),
    (
        "template-type",
        task_with(sandbox={"template_sources": [{"type": "starter_files", "files": [{"path": "a", "content": ""}]}]}),
        task_with(sandbox={"template_sources": [{"type": "zip", "path": "x"}]}),
        "sandbox.template_sources.0",
        "zip",
    ),
    (
        "repo-first",
        task_with(
            sandbox={"template_sources": [{"type": "repo", "url": "u"}, {"type": "template_dir", "path": "tpl"}]}
        ),
        task_with(
            sandbox={"template_sources": [{"type": "template_dir", "path": "tpl"}, {"type": "repo", "url": "u"}]}
        ),
        "sandbox.template_sources.1",
        "must be first",
    ),
    (
        "mount-point-inside",
        task_with(sandbox={"template_sources": [{"type": "template_dir", "path": "tpl", "mount_point": "c/d"}]}),
        task_with(sandbox={"template_sources": [{"type": "template_dir", "path": "tpl", "mount_point": "../out"}]}),
        "sandbox.template_sources.0.mount_point",
        "inside the sandbox",
    ),
    (
        "mount-point-absolute",
        task_with(),
        task_with(sandbox={"template_sources": [{"type": "template_dir", "path": "tpl", "mount_point": "/etc"}]}),
        "sandbox.template_sources.0.mount_point",
        "inside the sandbox",
    ),
    (
        "template-dir-exists",
        task_with(sandbox={"template_sources": [{"type": "template_dir", "path": "tpl"}]}),
        task_with(sandbox={"template_sources": [{"type": "template_dir", "path": "nope"}]}),
        "sandbox.template_sources.0.path",
        "not found",
    ),
    (
        "starter-file-inside",
        task_with(),
        task_with(
            sandbox={"template_sources": [{"type": "starter_files", "files": [{"path": "../x", "content": ""}]}]}
        ),
        "sandbox.template_sources.0.files.0.path",
        "inside the sandbox",
    ),
    (
        "ignore-bare-bang",
        task_with(sandbox={"ignore_patterns": ["!dist", " *.bak "]}),
        task_with(sandbox={"ignore_patterns": ["!"]}),
        "sandbox.ignore_patterns.0",
        "bare '!'",
    ),
    (
        "ignore-empty",
        task_with(agent={"ignore_patterns": ["x"]}),
        task_with(sandbox={"ignore_patterns": ["  "]}),
        "sandbox.ignore_patterns.0",
        "empty",
    ),
    (
        "sandbox-limits",
        task_with(sandbox={"limits": {"timeout": 5}}),
        task_with(sandbox={"limits": {"max_memory_mb": 0}}),
        "sandbox.limits.max_memory_mb",
        "greater than or equal",
    ),
    # run_limits
    (
        "max-turns-gt-0",
        task_with(run_limits={"max_turns": 1}),
        task_with(run_limits={"max_turns": 0}),
        "run_limits.max_turns",
        "greater than 0",
    ),
    (
        "expected-turns-ge-1",
        task_with(run_limits={"expected_turns": 1}),
        task_with(run_limits={"expected_turns": 0}),
        "run_limits.expected_turns",
        "greater than or equal to 1",
    ),
    (
        "task-timeout-ge-30",
        task_with(run_limits={"task_timeout": 30}),
        task_with(run_limits={"task_timeout": 29}),
        "run_limits.task_timeout",
        "greater than or equal to 30",
    ),
    (
        "turn-timeout-ge-10",
        task_with(run_limits={"turn_timeout": 10}),
        task_with(run_limits={"turn_timeout": 9}),
        "run_limits.turn_timeout",
        "greater than or equal to 10",
    ),
    (
        "input-tokens-ge-1",
        task_with(run_limits={"max_input_tokens": 1}),
        task_with(run_limits={"max_input_tokens": 0}),
        "run_limits.max_input_tokens",
        "greater than or equal to 1",
    ),
    (
        "output-tokens-ge-1",
        task_with(run_limits={"max_output_tokens": 1}),
        task_with(run_limits={"max_output_tokens": 0}),
        "run_limits.max_output_tokens",
        "greater than or equal to 1",
    ),
    (
        "total-tokens-ge-1",
        task_with(run_limits={"max_total_tokens": 1}),
        task_with(run_limits={"max_total_tokens": 0}),
        "run_limits.max_total_tokens",
        "greater than or equal to 1",
    ),
    (
        "max-usd-gt-0",
        task_with(run_limits={"max_usd": 0.01}),
        task_with(run_limits={"max_usd": 0}),
        "run_limits.max_usd",
        "greater than 0",
    ),
    (
        "stop-early-true-removed",
        task_with(run_limits={"stop_early": False}),
        task_with(run_limits={"stop_early": True}),
        "run_limits.stop_early",
        "removed",
    ),
    (
        "gate-threshold-range",
        task_with(run_limits={"stop_early_gate_threshold": 0.5}),
        task_with(run_limits={"stop_early_gate_threshold": 1.5}),
        "run_limits.stop_early_gate_threshold",
        "less than or equal",
    ),
    (
        "gate-threshold-armed",
        with_criteria({**SKILL, "stop_early": {}}, run_limits={"stop_early_gate_threshold": 0.1}),
        with_criteria({**SKILL, "stop_early": {}}, run_limits={"stop_early_gate_threshold": 0.0}),
        "run_limits.stop_early_gate_threshold",
        "> 0.0",
    ),
    # common criterion fields
    (
        "criterion-type-known",
        task_with(),
        with_criteria(criterion("file_exist", path="a")),
        "success_criteria.0",
        "file_exist",
    ),
    (
        "criterion-description",
        task_with(),
        with_criteria({"type": "file_exists", "path": "a"}),
        "success_criteria.0.description",
        "required",
    ),
    (
        "weight-ge-0",
        with_criteria({**FE, "weight": 0}, FE),
        with_criteria({**FE, "weight": -1}),
        "success_criteria.0.weight",
        "greater than or equal to 0",
    ),
    (
        "weight-0-not-every-criterion",
        with_criteria({**FE, "weight": 0}, FE),
        with_criteria({**FE, "weight": 0}, {**CMD, "weight": 0}),
        "success_criteria",
        "every criterion has weight 0: nothing decides the task's success; give one a weight > 0",
    ),
    (
        "pass-threshold-range",
        with_criteria({**FE, "pass_threshold": 1}),
        with_criteria({**FE, "pass_threshold": 1.1}),
        "success_criteria.0.pass_threshold",
        "less than or equal to 1",
    ),
    (
        "stop-early-only-live",
        with_criteria({**CMD, "stop_early": {"on_pass": "stop"}}, {**FE, "stop_early": None}),  # null: the default
        with_criteria({**FE, "stop_early": {}}),
        "success_criteria.0.stop_early",
        "only command_executed, skill_triggered (live-observable",
    ),
    (
        "stop-early-keys",
        with_criteria({**SKILL, "stop_early": {"decide_within": 5}}),
        with_criteria({**SKILL, "stop_early": {"decide_within": 0}}),
        "success_criteria.0.stop_early.decide_within",
        "greater",
    ),
    (
        "stop-early-on-pass",
        with_criteria({**SKILL, "stop_early": {"on_pass": "continue"}}),
        with_criteria({**SKILL, "stop_early": {"on_pass": "halt"}}),
        "success_criteria.0.stop_early.on_pass",
        "Input should be",
    ),
    (
        "weight-0-no-stop-early",
        with_criteria({**CMD, "weight": 0}, FE),
        with_criteria({**CMD, "weight": 0, "stop_early": {}}, FE),
        "success_criteria.0.stop_early",
        "informational",
    ),
    (
        "weight-0-no-suite-thresholds",
        with_criteria({**CLASSIFY, "weight": 0}, FE),
        with_criteria({**CLASSIFY, "weight": 0, "suite_thresholds": {"accuracy": 0.5}}, FE),
        "success_criteria.0.suite_thresholds",
        "informational",
    ),
    (
        "suite-thresholds-label-metrics-only-classification",
        with_criteria({**CLASSIFY, "suite_thresholds": {"accuracy": 0.5}}, dataset=ROWS),
        with_criteria({**FE, "suite_thresholds": {"accuracy": 0.5}}, dataset=ROWS),
        "success_criteria.0.suite_thresholds.accuracy",
        "unknown metric",
    ),
    (
        "suite-thresholds-score-metrics-any-criterion",
        with_criteria(
            {**FE, "suite_thresholds": {"count": 3, "mean": 0.5, "std": 0, "completion_rate": 1}}, dataset=ROWS
        ),
        with_criteria({**FE, "suite_thresholds": {"mean": 1.5}}, dataset=ROWS),
        "success_criteria.0.suite_thresholds.mean",
        "within [0, 1]",
    ),
    (
        "suite-thresholds-need-a-dataset",
        with_criteria({**FE, "suite_thresholds": {"mean": 0.5}}, dataset=ROWS),
        with_criteria({**FE, "suite_thresholds": {"mean": 0.5}}),
        "success_criteria.0.suite_thresholds",
        "no dataset",
    ),
    (
        "suite-threshold-metric-name",
        with_criteria({**SKILL, "suite_thresholds": {"recall.yes": 0.7, "macro_f1": 0.5}}, dataset=ROWS),
        with_criteria({**SKILL, "suite_thresholds": {"recall_yes": 0.7}}, dataset=ROWS),
        "success_criteria.0.suite_thresholds.recall_yes",
        "unknown metric",
    ),
    (
        "suite-threshold-label",
        with_criteria({**CLASSIFY, "suite_thresholds": {"f1.b": 0.7, "recall.(other)": 0.1}}, dataset=ROWS),
        with_criteria({**CLASSIFY, "suite_thresholds": {"f1.c": 0.7}}, dataset=ROWS),
        "success_criteria.0.suite_thresholds.f1.c",
        "unknown label",
    ),
    # per-criterion rules
    (
        "file-contains-path",
        with_criteria(criterion("file_contains", path="a", includes=["x"])),
        with_criteria(criterion("file_contains", includes=["x"])),
        "success_criteria.0.path",
        "required",
    ),
    (
        "file-check-regex",
        with_criteria(criterion("file_check", path="a", patterns=[{"pattern": "a+"}])),
        with_criteria(criterion("file_check", path="a", patterns=[{"pattern": "a("}])),
        "success_criteria.0.patterns.0.pattern",
        "invalid regular expression",
    ),
    (
        "json-operator",
        with_criteria(criterion("json_check", path="a.json", assertions=[{"expression": "a", "operator": "exists"}])),
        with_criteria(
            criterion("json_check", path="a.json", assertions=[{"expression": "a", "operator": "like", "expected": 1}])
        ),
        "success_criteria.0.assertions.0.operator",
        "Input should be",
    ),
    (
        "json-expected-required",
        task_with(),
        with_criteria(criterion("json_check", path="a.json", assertions=[{"expression": "a", "operator": "gt"}])),
        "success_criteria.0.assertions.0.expected",
        "required",
    ),
    (
        "json-jmespath",
        task_with(),
        with_criteria(criterion("json_check", path="a.json", assertions=[{"expression": "a[", "expected": 1}])),
        "success_criteria.0.assertions.0.expression",
        "JMESPath",
    ),
    (
        "run-command-stdout-match",
        with_criteria(criterion("run_command", command="x", expected_stdout="a", stdout_match="contains")),
        with_criteria(criterion("run_command", command="x", expected_stdout="a", stdout_match="fuzzy")),
        "success_criteria.0.stdout_match",
        "Input should be",
    ),
    (
        "score-from-stdout-exclusive",
        with_criteria(criterion("run_command", command="x", score_from_stdout=True)),
        with_criteria(criterion("run_command", command="x", score_from_stdout=True, expected_stdout="1")),
        "success_criteria.0.score_from_stdout",
        "mutually exclusive",
    ),
    (
        "file-matches-regex-pattern",
        with_criteria(criterion("file_matches_regex", path="a", pattern="x", flags=2)),
        with_criteria(criterion("file_matches_regex", path="a", pattern="[")),
        "success_criteria.0.pattern",
        "invalid regular",
    ),
    (
        "reference-required",
        with_criteria(criterion("reference_comparison", agent_file="a.py"), reference={"code": "x=1"}),
        with_criteria(criterion("reference_comparison", agent_file="a.py")),
        "success_criteria.0",
        "requires a reference",
    ),
    (
        "reference-xor",
        task_with(reference={"file": "ref.py"}),
        task_with(reference={"file": "ref.py", "code": "x"}),
        "reference.file",
        "exactly one",
    ),
    (
        "reference-method",
        with_criteria(
            criterion("reference_comparison", agent_file="a.py", comparison_method="token"), reference={"code": "x"}
        ),
        with_criteria(
            criterion("reference_comparison", agent_file="a.py", comparison_method="diff"), reference={"code": "x"}
        ),
        "success_criteria.0.comparison_method",
        "Input should be",
    ),
    (
        "command-executed-counts",
        with_criteria({**CMD, "min_count": 0, "max_count": 0}),
        with_criteria({**CMD, "min_count": 2, "max_count": 1}),
        "success_criteria.0.max_count",
        "min_count",
    ),
    (
        "command-executed-regex",
        with_criteria({**CMD, "exclude_pattern": "--dry"}),
        with_criteria({**CMD, "exclude_pattern": "(x"}),
        "success_criteria.0.exclude_pattern",
        "invalid regular",
    ),
    (
        "efficiency-ge-1",
        with_criteria(criterion("commands_efficiency", expected_commands=1)),
        with_criteria(criterion("commands_efficiency", expected_commands=0)),
        "success_criteria.0.expected_commands",
        "greater",
    ),
    (
        "uipath-required",
        with_criteria(criterion("uipath_eval", agent_name="a", eval_set="e", thresholds={"f1": 0.5})),
        with_criteria(criterion("uipath_eval", agent_name="a", eval_set="e")),
        "success_criteria.0.thresholds",
        "required",
    ),
    (
        "llm-judge-prompt",
        with_criteria(criterion("llm_judge", prompt="grade")),
        with_criteria(criterion("llm_judge")),
        "success_criteria.0.prompt",
        "required",
    ),
    (
        "agent-judge-agent",
        with_criteria(criterion("agent_judge", prompt="p", agent={"model": "m"})),
        with_criteria(criterion("agent_judge", prompt="p", agent={"max_turns": 3})),
        "success_criteria.0.agent.max_turns",
        "run_limits",
    ),
    (
        "agent-judge-claude-settings",
        with_criteria(criterion("agent_judge", prompt="p", agent={"allowed_tools": ["Read"]})),
        with_criteria(criterion("agent_judge", prompt="p", agent={"claude_settings": {"hooks": {}}})),
        "success_criteria.0.agent.claude_settings",
        "never loaded",
    ),
    (
        "agent-judge-plugins",
        with_criteria(criterion("agent_judge", prompt="p", agent={"plugins": None})),
        with_criteria(criterion("agent_judge", prompt="p", agent={"plugins": [{"path": "p"}]})),
        "success_criteria.0.agent.plugins",
        "never loaded",
    ),
    (
        "agent-judge-setting-sources",
        with_criteria(criterion("agent_judge", prompt="p", agent={"model": "m"})),
        with_criteria(criterion("agent_judge", prompt="p", agent={"setting_sources": ["project"]})),
        "success_criteria.0.agent.setting_sources",
        "never loaded",
    ),
    (
        "agent-judge-type",
        with_criteria(criterion("agent_judge", prompt="p", agent={"type": "claude-code"})),
        with_criteria(criterion("agent_judge", prompt="p", agent={"type": "codex"})),
        "success_criteria.0.agent.type",
        "claude-code agent",
    ),
    (
        "classification-labels",
        task_with(),
        with_criteria({**CLASSIFY, "allowed_labels": []}),
        "success_criteria.0.allowed_labels",
        "at least 1",
    ),
    (
        "skill-expected-required",
        task_with(),
        with_criteria(criterion("skill_triggered", skill_name="s")),
        "success_criteria.0.expected_skill",
        "required",
    ),
    # cli_called
    (
        "cli-one-predicate",
        with_criteria({**CLI, "flags": {"model": {"contains": "gem"}}}),
        with_criteria({**CLI, "flags": {"model": {"contains": "gem", "equals": "x"}}}),
        "success_criteria.0.flags.model",
        "exactly one predicate",
    ),
    (
        "cli-regex-flags-only-beside-regex",
        with_criteria({**CLI, "flags": {"m": {"matches_regex": "a.b", "flags": 16}}}),
        with_criteria({**CLI, "flags": {"m": {"equals": "a", "flags": 2}}}),
        "success_criteria.0.flags.m.flags",
        "beside matches_regex",
    ),
    (
        "cli-ignored-flag-predicate",
        with_criteria({**CLI, "flags": {"model": "x"}}),
        with_criteria({**CLI, "flags": {"output": "json"}}),
        "success_criteria.0.flags.output",
        "ignore_flags",
    ),
    (
        "cli-alias-another-key",
        with_criteria({**CLI, "flags": {"yes": {"present": True, "aliases": ["y"]}}}),
        with_criteria({**CLI, "flags": {"yes": {"present": True, "aliases": ["force"]}, "force": {"absent": True}}}),
        "success_criteria.0.flags.yes.aliases",
        "another flag",
    ),
    (
        "cli-alias-ignored",
        task_with(),
        with_criteria({**CLI, "flags": {"format": {"equals": "json", "aliases": ["output"]}}}),
        "success_criteria.0.flags.format.aliases",
        "ignore_flags",
    ),
    (
        "cli-present-true",
        task_with(),
        with_criteria({**CLI, "flags": {"yes": {"present": False}}}),
        "success_criteria.0.flags.yes.present",
        "Input should be True",
    ),
    (
        "cli-counts",
        with_criteria({**CLI, "verb": "x", "min_count": 0, "max_count": 0}),
        with_criteria({**CLI, "min_count": 3, "max_count": 1}),
        "success_criteria.0.max_count",
        "min_count",
    ),
    (
        "cli-log-not-blank",
        with_criteria(criterion("cli_called", verb="x")),
        with_criteria(criterion("cli_called", verb="x", log="")),
        "success_criteria.0.log",
        "at least 1 character",
    ),
    # pre_run / post_run
    (
        "pre-run-timeout",
        task_with(pre_run=[{"command": "x", "timeout": 300}]),
        task_with(pre_run=[{"command": "x", "timeout": 301}]),
        "pre_run.0.timeout",
        "less than or equal to 300",
    ),
    (
        "post-run-timeout",
        task_with(post_run=[{"command": "x", "timeout": 1}]),
        task_with(post_run=[{"command": "x", "timeout": 0}]),
        "post_run.0.timeout",
        "greater than or equal to 1",
    ),
    (
        "pre-run-command",
        task_with(pre_run=[{"command": "x", "fail_on_error": False}]),
        task_with(pre_run=[{"timeout": 3}]),
        "pre_run.0.command",
        "required",
    ),
    # dataset
    (
        "dataset-rows-xor-paths",
        task_with(dataset={"rows": [{"id": "a"}]}),
        task_with(dataset={"rows": [{"id": "a"}], "paths": ["rows.jsonl"]}),
        "dataset.rows",
        "exactly one",
    ),
    (
        "dataset-source-required",
        task_with(dataset={"paths": ["rows.jsonl"]}),
        task_with(dataset={"id_field": "id"}),
        "dataset.rows",
        "exactly one",
    ),
    (
        "dataset-sample-ge-1",
        task_with(dataset={"rows": [{"id": "a"}], "sample_per_stratum": 1}),
        task_with(dataset={"rows": [{"id": "a"}], "sample_per_stratum": 0}),
        "dataset.sample_per_stratum",
        "greater",
    ),
    (
        "dataset-id-present",
        task_with(dataset={"rows": [{"key": "a"}], "id_field": "key"}),
        task_with(dataset={"rows": [{"key": "a"}]}),
        "dataset.id_field",
        "no 'id' value",
    ),
    (
        "dataset-id-unique",
        task_with(dataset={"rows": [{"id": "a"}, {"id": "b"}]}),
        task_with(dataset={"rows": [{"id": "a"}, {"id": "a"}]}),
        "dataset.id_field",
        "duplicate row id",
    ),
    (
        "dataset-id-regex",
        task_with(dataset={"rows": [{"id": "a.b-c_1"}]}),
        task_with(dataset={"rows": [{"id": "a b"}]}),
        "dataset.id_field",
        "must match",
    ),
    (
        "dataset-id-not-a-run-file",
        task_with(dataset={"rows": [{"id": "suite"}]}),
        task_with(dataset={"rows": [{"id": "suite.json"}]}),
        "dataset.id_field",
        "a file the run folder writes",
    ),
    (
        "dataset-unknown-row-field",
        task_with(initial_prompt="${row.text}", dataset={"rows": [{"id": "a", "text": "t"}]}),
        task_with(initial_prompt="${row.txt}", dataset={"rows": [{"id": "a", "text": "t"}]}),
        "initial_prompt",
        "row 'a'",
    ),
    (
        "dataset-file-exists",
        task_with(dataset={"paths": ["rows.jsonl"]}),
        task_with(dataset={"paths": ["gone.jsonl"]}),
        "dataset.paths.0",
        "not found",
    ),
    # simulation
    (
        "simulation-required",
        task_with(simulation={"persona": "p", "goal": "g"}),
        task_with(simulation={"persona": "p"}),
        "simulation.goal",
        "required",
    ),
    (
        "simulation-opens-without-prompt",
        task_with(initial_prompt=None, simulation=SIMULATED),
        task_with(initial_prompt=None, simulation={**SIMULATED, "enabled": False}),
        "initial_prompt",
        "required for agent type claude-code",
    ),
    (
        "replayed-dialog-opening-required",
        task_with(initial_prompt=None, simulation=SIMULATED, agent={"type": "replay", "trajectory": "opening.yaml"}),
        task_with(initial_prompt=None, simulation=SIMULATED, agent={"type": "replay", "trajectory": "traj.yaml"}),
        "initial_prompt",
        "a trajectory whose first item is the user's opening",
    ),
    (
        "replayed-dialog-opening-or-prompt",
        task_with(simulation=SIMULATED, agent={"type": "replay", "trajectory": "traj.yaml"}),
        task_with(simulation=SIMULATED, agent={"type": "replay", "trajectory": "opening.yaml"}),
        "agent.trajectory",
        "opens with a user: message, which only opens a simulated dialog with no prompt: the task has its own prompt",
    ),
    (
        "simulation-max-turns",
        task_with(simulation={"persona": "p", "goal": "g", "max_turns": 100}),
        task_with(simulation={"persona": "p", "goal": "g", "max_turns": 101}),
        "simulation.max_turns",
        "less than or equal to 100",
    ),
    (
        "simulation-check-criteria",
        task_with(simulation={"persona": "p", "goal": "g", "check_criteria": "both"}),
        task_with(simulation={"persona": "p", "goal": "g", "check_criteria": "sometimes"}),
        "simulation.check_criteria",
        "Input should be",
    ),
    (
        "simulation-stop-on-pass",
        task_with(
            simulation={"persona": "p", "goal": "g", "stop_on_criteria_pass": True, "check_criteria": "every_turn"}
        ),
        task_with(simulation={"persona": "p", "goal": "g", "stop_on_criteria_pass": True}),
        "simulation.stop_on_criteria_pass",
        "every_turn or both",
    ),
]


def _workspace(tmp_path: Path) -> Path:
    """A task folder with the side files the valid cases refer to."""
    write(tmp_path / "prompt.md", "Do the thing.\n")
    write(tmp_path / "ref.py", "x = 1\n")
    write(tmp_path / "tpl/main.py", "print(1)\n")
    write(tmp_path / "rows.jsonl", '{"id": "r1"}\n')
    write(tmp_path / "traj.yaml", "turns:\n  - calls: [{tool: Bash, command: 'true'}]\n")
    write(tmp_path / "opening.yaml", "turns:\n  - user: hi\n  - calls: [{tool: Bash, command: 'true'}]\n")
    return tmp_path


@pytest.mark.parametrize(("valid", "invalid", "field", "fragment"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_rule(tmp_path: Path, valid: dict[str, Any], invalid: dict[str, Any], field: str, fragment: str) -> None:
    folder = _workspace(tmp_path)
    ok = run_cli("validate", write_task(folder, valid, "valid.yaml"))
    assert ok.code == 0, ok.err
    bad_path = write_task(folder, invalid, "invalid.yaml")
    bad = run_cli("validate", bad_path)
    assert bad.code == 1
    pattern = rf"^{re.escape(str(bad_path))}:\d+: {re.escape(field)}: .*{re.escape(fragment)}"
    assert re.search(pattern, bad.err, re.MULTILINE), bad.err
    assert "Traceback" not in bad.err


def test_rule_ids_are_unique() -> None:
    ids = [r[0] for r in RULES]
    assert len(ids) == len(set(ids))


def test_the_reserved_ids_are_every_file_the_run_folder_writes_beside_an_ids_folder() -> None:
    """models/base.py names them again (the format imports nothing above it): the two lists stay one."""
    from coder_eval_dagster.core import layout
    from coder_eval_dagster.core.models.base import RUN_FOLDER_FILE_RE, RUN_FOLDER_FILES

    beside_ids = {
        layout.PLAN_FILE,
        layout.SNAPSHOT_FILE,
        layout.SPEND_LEDGER,
        layout.RUN_FILE,
        layout.RUN_MD,
        layout.RUN_VIEWER,
        layout.EXPERIMENT_FILE,
        layout.EXPERIMENT_MD,
        layout.COMPARISON_PAGE,
        layout.JUNIT_FILE,
        layout.VARIANT_FILE,
        layout.VARIANT_MD,
        layout.SUITE_FILE,
    }
    assert beside_ids == RUN_FOLDER_FILES
    for page in (Path(layout.COMPARISON_PAGE), Path(layout.comparison_against("2026-12-06T01-00-00Z"))):
        assert RUN_FOLDER_FILE_RE.fullmatch(page.name)
        for figure in ("success_rate", "forest_1", "cost_success"):  # save_pngs: `<page stem>.<figure>.png`
            assert RUN_FOLDER_FILE_RE.fullmatch(f"{page.stem}.{figure}.png")
    assert not RUN_FOLDER_FILE_RE.fullmatch("comparison.png")
