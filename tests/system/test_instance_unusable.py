"""A Dagster instance whose storage cannot be used (a PostgreSQL URL read from a variable that is not set, a
server that refuses), through the installed CLI: one line naming why, exit 2, no traceback. It was an
"internal error" (exit 3) spread over many lines, and `dev` printed a traceback."""

from __future__ import annotations

import pytest

from ..support.helpers import write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow
WHY = "coder-eval: the Dagster instance cannot be used: "


@pytest.mark.parametrize(
    ("storage", "said"),
    [
        ("{env: CODER_EVAL_TEST_UNSET_URL}", 'the environment variable "CODER_EVAL_TEST_UNSET_URL" which is not set'),
        ('"postgresql+psycopg2://coder:pw@127.0.0.1:1/evals"', "port 1 failed: Connection refused"),
    ],
    ids=["variable-unset", "server-refuses"],
)
def test_an_unusable_instance_is_one_line_naming_why(system_cli: SystemCli, storage: str, said: str) -> None:
    write(system_cli.home / "dagster.yaml", f"storage:\n  postgres:\n    postgres_url: {storage}\n")
    task = task_file(system_cli.folder / "tasks", "plain", agent={"type": "none"})
    commands = [("run", task, "--runs-dir", system_cli.runs), ("dev", "-p", "1")]
    for command in commands if "variable" in storage else commands[:1]:
        outcome = system_cli(*command, env={})
        assert outcome.code == 2, outcome.output
        (line,) = [line for line in outcome.err.splitlines() if line.startswith("coder-eval:")]
        assert line.startswith(WHY) and said in line, outcome.err
        assert ("coder-eval run --resume" in line) == (command[0] == "run"), line  # dev has no run to go on with
        assert "Traceback" not in outcome.err and "internal error" not in outcome.err
        assert len(outcome.err.strip().splitlines()) <= 2, outcome.err  # dagster-postgres's retries: one line


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("telemetry: {enabled: false\n", "dagster.yaml:2: YAML syntax error: expected ',' or '}'"),
        ("- a\n", "dagster.yaml to parse to dictionary"),
        (  # without the instance's whole config schema Dagster's message goes on with (4 KB)
            "concurrancy: {default_op_concurrency_limit: 1}\n",
            'Received unexpected config entry "concurrancy" at the root. (check its dagster.yaml',
        ),
        ("run_storage: {module: nosuch.mod, class: X}\n", "No module named 'nosuch'"),
        (
            "run_storage: {module: coder_eval_dagster.storage, class: FastSqliteRunStorag}\n",
            "has no attribute 'FastSqliteRunStorag'",
        ),
        (
            'storage: {postgres: {postgres_url: "postgresql://u:p@127.0.0.1:1/db"}}\n',
            "No module named 'psycopg' (a PostgreSQL URL names its driver: postgresql+psycopg2://...)",
        ),
    ],
    ids=["yaml-syntax", "not-a-mapping", "unknown-key", "no-such-module", "no-such-class", "url-without-driver"],
)
def test_a_dagster_yaml_that_cannot_be_read_is_one_line_naming_it(
    system_cli: SystemCli, content: str, said: str
) -> None:
    """A typo in the instance's dagster.yaml was an "internal error" (exit 3) that never named the file."""
    write(system_cli.home / "dagster.yaml", content)
    task = task_file(system_cli.folder / "tasks", "plain", agent={"type": "none"})
    outcome = system_cli("run", task, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 2, outcome.output
    (line,) = [line for line in outcome.err.splitlines() if line.startswith("coder-eval:")]
    assert line.startswith(WHY) and said in line, outcome.err


def test_a_dagster_home_that_is_a_file_is_one_line_for_every_command(system_cli: SystemCli) -> None:
    """`dev` said it as an internal error (exit 3), `register` as "File exists"; as `run` says it, now."""
    home = write(system_cli.folder / "home-file", "not a folder\n")
    task = task_file(system_cli.folder / "tasks", "plain", agent={"type": "none"})
    for command in (("dev", "-p", "1"), ("register", task), ("run", task, "--runs-dir", system_cli.runs)):
        outcome = system_cli(*command, env={"DAGSTER_HOME": str(home)})
        assert outcome.code == 2, outcome.output
        said = f"coder-eval: DAGSTER_HOME {home} is not a folder; point DAGSTER_HOME at a writable folder\n"
        assert outcome.err == said, (command, outcome.err)
