"""Bounded, safe inputs (issue 15 items 3-9, issue 13 items 3-4), probed as an attacker would.

Alias bombs, special and oversize files, schema references to the host or the
network, template links out of the sandbox, shell syntax in dataset values,
unsafe ids, and bad options and environments: each is refused with one clear
line, or neutralized, and never reaches the host.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from coder_eval_dagster.core.evaluation import evaluate, new_evaluation
from coder_eval_dagster.core.files import CRITERION_READ_CAP, MAX_DOCUMENT_BYTES
from coder_eval_dagster.core.resolution import resolve
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.run_spec import RunSpec
from coder_eval_dagster.core.yamlio import MAX_ALIAS_EXPANSION, parse_document

from ..support.fake_http import LoopbackServer, RecordingHandler
from ..support.helpers import criterion, run_cli, task_with, write, write_task

AGENTLESS = {"initial_prompt": None, "agent": {"type": "none"}, "sandbox": {"python": None}}


def agentless(**changes: Any) -> dict[str, Any]:
    return task_with(**{**AGENTLESS, **changes})


MEMORY_LIMIT = 1 << 30  # a child CLI that needed more than 1 GiB would die, not pass


def cli_process(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    """The real CLI in its own process, with its address space capped at MEMORY_LIMIT."""

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    command = [sys.executable, "-m", "coder_eval_dagster.cli", *map(str, args)]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        preexec_fn=cap_memory,
    )


def problem_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return [line for line in stderr.splitlines() if not line.startswith("API routing:")]  # the route, not a problem


# --------------------------------------------------------------------------- item 4: YAML bombs, special files


BILLION_LAUGHS = """\
task_id: t
description: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""
MERGE_BOMB = "a0: &a0 {k: v}\n" + "".join(
    f"a{n}: &a{n} {{<<: [{', '.join(f'*a{n - 1}' for _ in range(2))}], k{n}: [*a{n - 1}, *a{n - 1}]}}\n"
    for n in range(1, 40)
)


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        (BILLION_LAUGHS, 7, "expand it by more than"),
        (MERGE_BOMB, 9, "expand it by more than"),
        ("a: &a [x, *a]\n", 1, "refers to a node that contains it"),
        ("a: " + "[" * 150 + "]" * 150 + "\n", 1, "nest"),
    ],
    ids=["billion-laughs", "merge-keys", "recursive", "deep"],
)
def test_yaml_bombs_are_refused_quickly_with_bounded_memory(tmp_path, text, line, why):
    path = write(tmp_path / "bomb.yaml", text)
    assert len(text) < 2000
    started = time.monotonic()
    done = cli_process("validate", path, timeout=30)
    assert time.monotonic() - started < 20
    (only,) = problem_lines(done.stderr)
    assert done.returncode == 1
    assert only.startswith(f"{path}:") and why in only, only
    if "expand" in why:
        assert only.startswith(f"{path}:{line}: (document): document refused"), only


def test_a_large_document_without_aliases_still_loads(tmp_path):
    rows = [{"id": f"r{i}", "x": i} for i in range(5000)]
    path = write_task(tmp_path, task_with(initial_prompt="${row.x}", dataset={"rows": rows}))
    assert run_cli("validate", path).code == 0
    values = MAX_ALIAS_EXPANSION + 1  # only what aliases add is limited; the file size bounds the rest
    assert len(parse_document(path, "[" + "1," * values + "]").data) == values


def _fifo(folder: Path, name: str = "fifo") -> Path:
    path = folder / name
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"agent": {"type": "replay", "trajectory": "/dev/zero"}, "initial_prompt": None},
            "agent.trajectory",
            "not a regular file",
        ),
        ({"initial_prompt": None, "initial_prompt_file": "."}, "initial_prompt_file", "not a regular file"),
        ({"initial_prompt": None, "initial_prompt_file": "fifo"}, "initial_prompt_file", "not a regular file"),
        ({"dataset": {"paths": ["fifo"]}}, "dataset.paths.0", "not a regular file"),
        ({"reference": {"file": "/dev/zero"}}, "reference.file", "not a regular file"),
        (
            {"sandbox": {"template_sources": [{"type": "template_dir", "path": "fifo"}]}},
            "sandbox.template_sources.0.path",
            "not a folder",
        ),
    ],
    ids=[
        "trajectory-dev-zero",
        "prompt-file-dir",
        "prompt-file-fifo",
        "dataset-fifo",
        "reference-dev-zero",
        "template-fifo",
    ],
)
def test_special_files_are_refused_with_a_located_problem(tmp_path, changes, field, message):
    _fifo(tmp_path)
    path = write_task(tmp_path, task_with(**changes))
    done = cli_process("validate", path, timeout=30)
    (only,) = problem_lines(done.stderr)
    assert done.returncode == 1
    assert only.startswith(f"{path}:") and f": {field}: " in only and message in only, only


def test_a_special_file_given_as_a_task_file_is_refused(tmp_path):
    fifo = _fifo(tmp_path, "task.yaml")
    done = cli_process("validate", fifo, "/dev/zero", timeout=30)
    lines = problem_lines(done.stderr)
    assert done.returncode == 1
    assert lines == [
        f"not a regular file or folder: {fifo}",
        "not a regular file or folder: /dev/zero",
    ]


def test_a_fifo_named_like_a_task_file_is_refused_and_a_folder_so_named_is_walked(tmp_path):
    os.mkfifo(write_task(tmp_path / "tasks" / "x.yaml", task_with()).parent.parent / "y.yaml")
    result = run_cli("validate", tmp_path / "tasks")
    assert result.code == 1 and "y.yaml:1: (document): not a regular file" in result.err
    assert f"OK {tmp_path / 'tasks' / 'x.yaml' / 'task.yaml'}" in result.out


def test_oversize_files_are_refused(tmp_path):
    big = "#" * (MAX_DOCUMENT_BYTES + 1)
    task = write(tmp_path / "big.yaml", f"{big}\ntask_id: t\n")
    write(tmp_path / "prompt.md", big)
    prompt_task = write_task(tmp_path, task_with(initial_prompt=None, initial_prompt_file="prompt.md"))
    result = run_cli("validate", task, prompt_task)
    assert result.code == 1
    assert f"{task}:1: (document): file too large" in result.err
    assert f"{prompt_task}:" in result.err and ": initial_prompt_file: file too large" in result.err


# --------------------------------------------------------------------------- item 3: criteria read with a cap


def _sandbox_check(tmp_path: Path, spec: dict[str, Any]):
    from coder_eval_dagster.core.check_context import CheckContext
    from coder_eval_dagster.core.models.sandbox import SandboxConfig
    from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

    from ..support.helpers import check_criterion

    box = TempdirSandbox(tmp_path / "sandbox", SandboxConfig(python=None))
    box.root.mkdir(exist_ok=True)
    return box, lambda: check_criterion(spec, CheckContext(box, tmp_path, None, run=RunContext.create()))


def test_criteria_read_a_huge_file_with_a_cap_and_say_so(tmp_path):
    box, run = _sandbox_check(tmp_path, criterion("file_contains", path="huge.txt", includes=["START"]))
    with (box.root / "huge.txt").open("wb") as stream:
        stream.write(b"START")
        stream.truncate(1 << 30)  # 1 GiB, sparse: costs no disk
    tracemalloc.start()
    try:
        result = run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.score == 1.0, result
    assert "only its first" in result.details["truncated"]
    assert peak < 4 * CRITERION_READ_CAP


@pytest.mark.parametrize(
    "spec",
    [
        criterion("file_contains", path="main.py", excludes=["import os"]),
        criterion("file_check", path="main.py", excludes=["import os"]),
        criterion("file_check", path="main.py", patterns=[{"pattern": "import os", "must_match": False}]),
        criterion("file_matches_regex", path="main.py", pattern="import os", must_match=False),
    ],
    ids=["file_contains", "file_check-excludes", "file_check-patterns", "file_matches_regex"],
)
def test_a_forbidden_string_padded_past_the_cap_does_not_pass(tmp_path, spec):
    """An agent cannot hide what a negative check forbids behind 8 MiB of padding: absence is unproven."""
    box, run = _sandbox_check(tmp_path, spec)
    (box.root / "main.py").write_text("#" * CRITERION_READ_CAP + "\nimport os\n")
    result = run()
    assert result.score == 0.0 and not result.passed, result
    assert "only its first" in result.details["truncated"]


@pytest.mark.parametrize(
    ("target", "readable"),
    [
        ("/sandbox/real.txt", True),
        ("/sandbox/sub/../real.txt", True),
        ("/etc/hostname", False),
        ("/sandbox/../x", False),
    ],
)
def test_a_link_reads_as_the_sandboxs_own_commands_see_it(tmp_path, target, readable):
    """`ln -s "$PWD/real.txt" link.txt` in the sandbox points at /sandbox/real.txt, where its commands see it."""
    box, run = _sandbox_check(tmp_path, criterion("file_contains", path="link.txt", includes=["inside"]))
    (box.root / "real.txt").write_text("inside\n")
    (box.root / "sub").mkdir()
    (box.root / "link.txt").symlink_to(target)
    result = run()
    if readable:
        assert result.score == 1.0, result
    else:
        assert result.score == 0.0 and "leaves the sandbox" in result.error, result


def test_a_negative_check_passes_on_a_file_read_whole(tmp_path):
    box, run = _sandbox_check(tmp_path, criterion("file_contains", path="main.py", excludes=["import os"]))
    (box.root / "main.py").write_text("print(1)\n")
    assert run().score == 1.0


def test_json_check_names_a_file_cut_at_the_cap(tmp_path):
    box, run = _sandbox_check(tmp_path, criterion("json_check", path="big.json"))
    (box.root / "big.json").write_text(json.dumps({"x": "a" * (CRITERION_READ_CAP + 10)}))
    result = run()
    assert result.score == 0.0 and "larger than" in result.error


def test_a_fifo_planted_by_the_agent_is_not_waited_on(tmp_path):
    box, run = _sandbox_check(tmp_path, criterion("file_contains", path="f", includes=["x"]))
    _fifo(box.root, "f")
    result = run()
    assert result.score == 0.0 and "not a regular file" in result.error


# --------------------------------------------------------------------------- item 5: json_check $ref


class _Recorder(LoopbackServer):
    handler = RecordingHandler


def test_json_check_refs_reach_neither_the_host_nor_the_network(tmp_path):
    host_schema = tmp_path / "host.json"
    host_schema.write_text('{"type": "integer"}')
    box, run = _sandbox_check(tmp_path, criterion("json_check", path="out.json", json_schema="schema.json"))
    (box.root / "out.json").write_text('{"a": "text", "b": 2}')
    server = SimpleNamespace(paths=[])
    with _Recorder(server) as url:
        for ref in (host_schema.as_uri(), f"{url}/schema.json"):
            schema = {"properties": {"a": {"$ref": ref}}}
            (box.root / "schema.json").write_text(json.dumps(schema))
            result = run()
            assert result.score == 0.0 and "only references inside the schema" in result.error, result
    assert server.paths == []


def test_json_check_refs_inside_the_schema_resolve(tmp_path):
    box, run = _sandbox_check(tmp_path, criterion("json_check", path="out.json", json_schema="schema.json"))
    (box.root / "out.json").write_text('{"a": "text"}')
    schema = {"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}}
    (box.root / "schema.json").write_text(json.dumps(schema))
    result = run()
    assert result.score == 0.0 and result.error is None
    assert result.details["schema_errors"] == ["'text' is not of type 'integer'"]


# --------------------------------------------------------------------------- item 6: template links


def _evaluate(folder: Path, data: dict[str, Any]):
    resolution = resolve(RunSpec(task_paths=[str(write_task(folder, data))]))
    assert not resolution.problems, resolution.problems
    (row_task,) = resolution.row_tasks
    return evaluate(new_evaluation("r", folder / "run", row_task, 1, None))


def test_a_template_link_out_of_the_sandbox_is_never_written_through(tmp_path):
    host = tmp_path / "host"
    host.mkdir()
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / "esc").symlink_to(host)
    write(tmp_path / "more" / "planted.txt", "from a template")
    cases = [
        {"type": "template_dir", "path": "../more", "mount_point": "esc"},
        {"type": "starter_files", "files": [{"path": "esc/planted.txt", "content": "x"}]},
    ]
    for index, second in enumerate(cases):
        sources = [{"type": "template_dir", "path": "../tpl"}, second]
        data = agentless(task_id=f"t{index}", sandbox={"python": None, "template_sources": sources})
        result = _evaluate(
            tmp_path / f"case{index}", {**data, "success_criteria": [criterion("file_exists", path="x")]}
        )
        assert result.final_status == "ERROR" and "leads out of the sandbox" in (result.error or ""), result
    assert list(host.iterdir()) == []


def test_a_template_file_replaces_a_link_instead_of_following_it(tmp_path):
    host_file = tmp_path / "host.txt"
    host_file.write_text("host")
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "f").symlink_to(host_file)
    write(tmp_path / "two" / "f", "template")
    sources = [{"type": "template_dir", "path": "one"}, {"type": "template_dir", "path": "two"}]
    data = agentless(sandbox={"python": None, "template_sources": sources})
    result = _evaluate(
        tmp_path, {**data, "success_criteria": [criterion("file_contains", path="f", includes=["template"])]}
    )
    assert result.final_status == "SUCCESS", result
    assert host_file.read_text() == "host"


# --------------------------------------------------------------------------- item 7, issue 13 items 3-4: row values


HOSTILE = ["x; touch {marker}", "$(touch {marker})", "`touch {marker}`", "a'b\"c", "with space"]


def test_row_values_in_commands_are_data_not_shell(tmp_path):
    marker = tmp_path / "pwned"
    rows = [{"id": f"r{i}", "v": value.format(marker=marker)} for i, value in enumerate(HOSTILE)]
    data = agentless(
        dataset={"rows": rows},
        pre_run=[{"command": "printf %s ${row.v} > pre.txt"}],
        post_run=[{"command": "printf %s ${row.v} > post.txt"}],
        success_criteria=[criterion("file_contains", path="pre.txt", includes=["${row.v}"])],
    )
    path = write_task(tmp_path, data)
    for row_task in resolve(RunSpec(task_paths=[str(path)])).row_tasks:
        result = evaluate(new_evaluation("r", tmp_path / "run", row_task, 1, None))
        assert result.final_status == "SUCCESS", (row_task.row, result)
        sandbox = tmp_path / "run" / "default" / row_task.task_id / "01" / "sandbox"
        assert (sandbox / "post.txt").read_text() == row_task.row["v"]
    assert not marker.exists()


def test_row_values_in_a_replayed_bash_call_are_data(tmp_path):
    marker = tmp_path / "pwned"
    write(
        tmp_path / "traj.yaml",
        yaml.safe_dump({"turns": [{"calls": [{"tool": "Bash", "command": "printf %s ${row.v} > out.txt"}]}]}),
    )
    data = task_with(
        agent={"type": "replay", "trajectory": "traj.yaml"},
        sandbox={"python": None},
        dataset={"rows": [{"id": "a", "v": f"; touch {marker}"}]},
        success_criteria=[criterion("file_contains", path="out.txt", includes=["${row.v}"])],
    )
    result = _evaluate(tmp_path, data)
    assert result.final_status == "SUCCESS" and not marker.exists(), result


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"description": "about ${row.x}"}, "description", "not substituted here"),
        ({"agent": {"type": "claude-code", "model": "${row.x}"}}, "agent.model", "not substituted here"),
        ({"sandbox": {"limits": {"timeout": "${row.x}"}}}, "sandbox.limits.timeout", "not substituted here"),
    ],
)
def test_placeholders_where_they_are_not_substituted_are_refused(tmp_path, changes, field, message):
    path = write_task(tmp_path, task_with(dataset={"rows": [{"id": "a", "x": "1"}]}, **changes))
    result = run_cli("validate", path)
    assert result.code == 1
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "${row.x}" in text)
    assert f"{path}:{line}: {field}: " in result.err and message in result.err, result.err


def test_placeholders_without_a_dataset_are_refused(tmp_path):
    path = write_task(tmp_path, task_with(pre_run=[{"command": "echo ${row.x}"}]))
    result = run_cli("validate", path)
    assert result.code == 1 and ": pre_run.0.command: ${row.…} needs a dataset" in result.err, result.err


@pytest.mark.parametrize(
    "value",
    ["hello world", "it's", 'a "b" $(touch pwned) `touch pwned` \\ $HOME', "x; touch pwned"],
    ids=["spaces", "single-quote", "shell-syntax", "command"],
)
def test_a_row_value_in_a_command_is_data_bare_or_in_either_quotes(tmp_path, value):
    """In a pre_run command (which coder_eval does not fill) the value is what lands there, however it is quoted,
    and never runs; the criteria take it as written, as coder_eval's do."""
    quoted = "printf %s \"${row.v}\" > double.txt; printf %s '${row.v}' > single.txt; printf %s ${row.v} > bare.txt"
    checks = [
        criterion("file_contains", path=f"{name}.txt", includes=["${row.v}"], description=name)
        for name in ("double", "single", "bare")
    ]
    data = agentless(
        dataset={"rows": [{"id": "a", "v": value}]}, pre_run=[{"command": quoted}], success_criteria=checks
    )
    result = _evaluate(tmp_path, data)
    assert result.final_status == "SUCCESS", [(c.description, c.details) for c in result.criteria]
    sandbox = tmp_path / "run/default/t1/a/01/sandbox"
    assert [(sandbox / f"{name}.txt").read_text() for name in ("double", "single", "bare")] == [value] * 3
    assert not (sandbox / "pwned").exists()


def test_row_scalars_read_as_coder_eval_writes_them(tmp_path):
    rows = [{"id": "a", "flag": True, "ratio": 0.5, "none": None}]
    data = agentless(
        dataset={"rows": rows},
        pre_run=[{"command": "echo 'True 0.5 []' > out.txt"}],
        success_criteria=[
            criterion("file_contains", path="out.txt", includes=["${row.flag} ${row.ratio} [${row.none}]"])
        ],
    )
    assert _evaluate(tmp_path, data).final_status == "SUCCESS"


def test_a_whole_value_placeholder_keeps_the_row_value_type(tmp_path):
    rows = [{"id": "a", "sq": 1, "n": 5, "label": 3}]
    data = agentless(
        dataset={"rows": rows},
        pre_run=[{"command": "echo '{\"a\": 1}' > out.json"}],
        success_criteria=[
            criterion("json_check", path="out.json", assertions=[{"expression": "a", "expected": "${row.sq}"}]),
            criterion("run_command", command="echo ${row.n}", expected_stdout="${row.n}", timeout="${row.n}"),
        ],
    )
    (row_task,) = resolve(RunSpec(task_paths=[str(write_task(tmp_path, data))])).row_tasks
    assert row_task.task.success_criteria[0].assertions[0].expected == 1
    assert row_task.task.success_criteria[1].expected_stdout == "5"  # a string field takes the text
    result = evaluate(new_evaluation("r", tmp_path / "run", row_task, 1, None))
    assert result.final_status == "SUCCESS", result
    (assertion,) = result.criteria[0].details["assertions"]
    assert assertion == {"expression": "a", "operator": "equals", "passed": True, "actual": 1, "expected": 1}


# --------------------------------------------------------------------------- item 8: ids


LONG = "x" * 300


@pytest.mark.parametrize("variant_id", ["..", ".", "a/b", LONG])
def test_unsafe_variant_ids_are_refused(tmp_path, variant_id):
    write_task(tmp_path / "tasks", task_with())
    experiment = write(
        tmp_path / "exp.yaml",
        yaml.safe_dump({"experiment_id": "e", "tasks": ["tasks"], "variants": [{"variant_id": variant_id}]}),
    )
    result = run_cli("validate", experiment)
    assert result.code == 1 and f"{experiment}:5: variants.0.variant_id: " in result.err, result.err


def test_over_long_task_and_row_ids_are_refused_at_load(tmp_path):
    task = write_task(tmp_path / "a", task_with(task_id=LONG))
    rows = write_task(
        tmp_path / "b", task_with(initial_prompt="${row.id}", dataset={"rows": [{"id": "ok"}, {"id": LONG}]})
    )
    result = run_cli("validate", task, rows)
    assert result.code == 1
    assert f"{task}:1: task_id: String should have at most 100 characters" in result.err
    assert f"{rows}:" in result.err and "dataset.id_field: row id" in result.err and "at most 100" in result.err


# --------------------------------------------------------------------------- item 9: bad options and environments


def _run_line(tmp_path: Path, *args: str | Path, env: dict[str, str] | None = None) -> str:
    task = write_task(tmp_path / "tasks", agentless(success_criteria=[criterion("file_exists", path=".")]))
    env = {"DAGSTER_HOME": str(tmp_path / "home"), **(env or {})}
    done = cli_process("run", task, "--runs-dir", tmp_path / "runs", *args, env=env, timeout=60)
    (only,) = problem_lines(done.stderr)
    assert done.returncode == 2, done
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("*/run_plan.json"))
    return only


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--concurrency", "-3"], "argument --concurrency/-j/--max-parallel: must be at least 0, got -3"),
        (["--sample", "-1"], "argument --sample: must be at least 1, got -1"),
        (["--sample", "0"], "argument --sample: must be at least 1, got 0"),
    ],
)
def test_bad_options_give_one_line(tmp_path, args, expected):
    assert expected in _run_line(tmp_path, *args)


def test_a_dagster_home_that_is_a_file(tmp_path):
    home = write(tmp_path / "home-file", "x")
    line = _run_line(tmp_path, env={"DAGSTER_HOME": str(home)})
    assert line == f"coder-eval: DAGSTER_HOME {home} is not a folder; point DAGSTER_HOME at a writable folder"


def test_an_unwritable_runs_dir(tmp_path):
    blocker = write(tmp_path / "blocker", "x")
    line = _run_line(tmp_path, "--runs-dir", blocker / "runs")
    assert line.startswith(f"coder-eval: --runs-dir {blocker / 'runs'} cannot be written") and "--runs-dir" in line


def test_an_over_long_runs_dir(tmp_path):
    line = _run_line(tmp_path, "--runs-dir", tmp_path / ("y" * 300))
    assert "a path component is 300 bytes (at most 255)" in line


def test_a_tables_folder_that_is_a_file(tmp_path):
    write(tmp_path / "runs" / "tables", "x")
    line = _run_line(tmp_path)
    assert "the tables folder" in line and "is not a folder" in line


def test_a_file_system_error_later_on_is_one_line(tmp_path):
    (tmp_path / "home" / "dagster.yaml").mkdir(parents=True)  # the instance's config file is a folder
    line = _run_line(tmp_path)
    assert line == f"coder-eval: cannot use {tmp_path / 'home' / 'dagster.yaml'}: Is a directory; check that path"


@pytest.mark.skipif(shutil.which("chattr") is None, reason="needs chattr (e2fsprogs) to make a folder immutable")
def test_an_immutable_tables_folder(tmp_path):
    tables = tmp_path / "runs" / "tables" / "task_results"
    tables.mkdir(parents=True)
    if subprocess.run(["chattr", "+i", str(tables)], capture_output=True).returncode != 0:
        pytest.skip("this file system (or user) cannot make a folder immutable; the file case above covers the check")
    try:
        line = _run_line(tmp_path)
    finally:
        subprocess.run(["chattr", "-i", str(tables)], check=True)
    assert line == (
        f"coder-eval: the tables folder {tables} cannot be written (Operation not permitted); "
        f"make {tables.parent} a writable folder, or use another --runs-dir"
    )


# --------------------------------------------------------------------------- the file sensor


def test_the_file_sensor_survives_hostile_task_files(tmp_path):
    """A bomb, a special file and a FIFO inside a template: the tick ends, the good task is registered."""
    import threading

    import dagster as dg

    from coder_eval_dagster.defs.resources import CoderEvalSettings, RunOptionsConfig, RunSpecConfig

    from ..support.dagster_services import sensor_tick

    tasks = tmp_path / "tasks"
    write_task(
        tasks,
        agentless(
            task_id="good", sandbox={"python": None, "template_sources": [{"type": "template_dir", "path": "tpl"}]}
        ),
    )
    _fifo(write(tasks / "tpl" / "a.txt", "a").parent)
    write(tasks / "bomb.yaml", BILLION_LAUGHS)
    write_task(tasks, agentless(task_id="zero", agent={"type": "replay", "trajectory": "/dev/zero"}), "zero.yaml")
    settings = CoderEvalSettings(
        spec=RunSpecConfig(task_paths=[str(tasks)]), options=RunOptionsConfig(runs_dir=str(tmp_path / "runs"))
    )
    with dg.instance_for_test() as instance:
        results: list[Any] = []
        worker = threading.Thread(target=lambda: results.append(sensor_tick(instance, settings, None)), daemon=True)
        worker.start()
        worker.join(60)
        assert results, "the sensor tick did not finish"
        assert instance.get_dynamic_partitions("task") == ["good"]
        assert len(results[0].run_requests) == 1


def test_a_template_venv_link_does_not_take_the_sandbox_venv_out(tmp_path):
    host = tmp_path / "host"
    host.mkdir()
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / ".venv").symlink_to(host)
    sandbox = {
        "python": {"env_packages": ["coder-eval-no-such-package"]},
        "ignore_patterns": ["!.venv"],
        "template_sources": [{"type": "template_dir", "path": "tpl"}],
    }
    result = _evaluate(tmp_path, agentless(sandbox=sandbox))
    assert result.final_status == "ERROR" and "leads out of the sandbox" in (result.error or ""), result
    assert list(host.iterdir()) == []


def test_a_resolved_sandbox_file_swapped_for_a_link_is_not_followed(tmp_path):
    """Between a sandbox path's resolution and its read, a process left in the sandbox could swap the file for a
    link to a host file: the read refuses a link in the last place."""
    from ..support.text_files import read_text_capped

    (tmp_path / "host.txt").write_text("HOST\n")
    (tmp_path / "out.txt").symlink_to(tmp_path / "host.txt")
    with pytest.raises(FileNotFoundError, match="a link put there"):
        read_text_capped(tmp_path / "out.txt", follow=False)
    assert read_text_capped(tmp_path / "out.txt")[0] == "HOST\n"  # (files of the task itself may be links)
