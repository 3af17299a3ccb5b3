"""Random and mutated YAML gets the project's validation error, never a crash."""

from __future__ import annotations

import copy
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..support.helpers import MINIMAL_TASK, criterion, run_cli

PROBLEM_LINE = re.compile(r"^\S.*:\d+: \S+: .+$")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["${row.x}", "!", "..", "/etc", "file_exists", "none", "replay"]),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)

RICH_TASK: dict[str, Any] = {
    **MINIMAL_TASK,
    "tags": ["smoke"],
    "agent": {"type": "claude-code", "allowed_tools": ["Bash"], "sdk_options": {"effort": "low"}},
    "sandbox": {"python": None, "ignore_patterns": ["!dist"], "limits": {"timeout": 5}},
    "run_limits": {"max_turns": 3, "stop_early_gate_threshold": 0.5},
    "dataset": {"rows": [{"id": "a", "x": "1"}, {"id": "b", "x": "2"}]},
    "pre_run": [{"command": "true"}],
    "success_criteria": [
        criterion(
            "skill_triggered",
            skill_name="s",
            expected_skill="${row.x}",
            stop_early={"decide_within": 2},
            suite_thresholds={"recall.yes": 0.5},
        ),
        criterion("cli_called", log="l.jsonl", verb="a b", flags={"yes": {"present": True, "aliases": ["y"]}}),
        criterion("json_check", path="a.json", assertions=[{"expression": "a", "operator": "gt", "expected": 1}]),
    ],
}


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(data: Any, path: tuple, action: str, value: Any) -> Any:
    data = copy.deepcopy(data)
    if not path:
        return value
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    if action == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return data


def _validate_text(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "task.yaml"
        path.write_text(text, encoding="utf-8")
        os.mkfifo(Path(folder) / "fifo")  # special files a task may point at
        (Path(folder) / "folder").mkdir()
        result = run_cli("validate", path)
    assert result.code in (0, 1), result.err
    assert "internal error" not in result.err and "Traceback" not in result.err
    for line in result.err.splitlines():
        assert PROBLEM_LINE.match(line), line


FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@FUZZ
@given(st.text(max_size=200))
def test_random_text(text: str) -> None:
    _validate_text(text)


@FUZZ
@given(values)
def test_random_documents(data: Any) -> None:
    _validate_text(yaml.safe_dump(data))


@FUZZ
@given(st.data())
def test_mutated_valid_task(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_paths(RICH_TASK)))
    action = data.draw(st.sampled_from(["delete", "replace"])) if path else "replace"
    mutated = _mutate(RICH_TASK, path, action, data.draw(values))
    _validate_text(yaml.safe_dump(mutated, sort_keys=False))


def test_rich_task_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(RICH_TASK), encoding="utf-8")
    assert run_cli("validate", path).code == 0


SPECIAL_FILES = ["/dev/zero", "/dev/null", "/dev/stdin", "/proc/self/mem", "fifo", "folder", ".", "..", "/"]
FILE_FIELDS: list[tuple[str | int, ...]] = [
    ("initial_prompt_file",),
    ("agent", "trajectory"),
    ("dataset", "paths"),
    ("reference",),
    ("sandbox", "template_sources"),
]


@FUZZ
@given(st.sampled_from(FILE_FIELDS), st.sampled_from(SPECIAL_FILES))
def test_special_files_in_file_fields(field: tuple, special: str) -> None:
    task = copy.deepcopy(RICH_TASK)
    match field:
        case ("initial_prompt_file",):
            task.pop("initial_prompt")
            task["initial_prompt_file"] = special
        case ("agent", "trajectory"):
            task["agent"] = {"type": "replay", "trajectory": special}
        case ("dataset", "paths"):
            task["dataset"] = {"paths": [special]}
        case ("reference",):
            task["reference"] = {"file": special}
        case _:
            task["sandbox"]["template_sources"] = [{"type": "template_dir", "path": special}]
    _validate_text(yaml.safe_dump(task, sort_keys=False))


@FUZZ
@given(
    st.integers(1, 12),
    st.integers(1, 14),
    st.sampled_from(["list", "mapping", "merge"]),
    st.sampled_from(["description", "success_criteria", "tags", "dataset", "extra"]),
)
def test_alias_bombs(fan_out: int, depth: int, shape: str, field: str) -> None:
    """Chains of anchors where each level repeats the one below ``fan_out`` times."""
    lines = ["b0: &b0 [lol, lol]"]
    for level in range(1, depth + 1):
        below = ", ".join([f"*b{level - 1}"] * fan_out)
        if shape == "list":
            lines.append(f"b{level}: &b{level} [{below}]")
        elif shape == "mapping":
            items = ", ".join(f"k{i}: *b{level - 1}" for i in range(fan_out))
            lines.append(f"b{level}: &b{level} {{{items}}}")
        else:
            lines.append(f"b{level}: &b{level} {{<<: {{k: *b{level - 1}}}, m: [{below}]}}")
    task = {key: value for key, value in RICH_TASK.items() if key != field}
    text = yaml.safe_dump(task, sort_keys=False) + "\n".join(lines) + f"\n{field}: *b{depth}\n"
    _validate_text(text)
