"""A service account's private key printed by a task's command is masked in every record of the run: the variable
holds the key's lines joined by the two characters ``\\n``, a command printing the key prints real newlines (or
only some of its lines), and only the variable's whole value was looked for, so each line was stored in clear."""

from __future__ import annotations

import base64
import codecs
import json
import secrets
import shlex

import pytest

from .conftest import SystemCli, no_key_anywhere, task_file

pytestmark = pytest.mark.slow

LINES = [base64.b64encode(secrets.token_bytes(48)).decode() for _ in range(6)]
PEM = "\n".join(["-----BEGIN PRIVATE KEY-----", *LINES, "-----END PRIVATE KEY-----"])


def _printing(lines: list[str], separator: str) -> str:
    """A command printing ``lines``, each followed by ``separator`` (``\\n``: real newlines; ``\\\\n``: the two
    characters). The key reaches the command only through it (a sandbox never sees the variable): in rot13, so
    that the task's own copy, which the run records as the author wrote it, is none of the forms looked for."""
    rot13 = " ".join(shlex.quote(codecs.encode(line, "rot13")) for line in lines)
    return f"printf '%s{separator}' {rot13} | tr 'A-Za-z' 'N-ZA-Mn-za-m'"


def test_a_key_printed_with_other_newlines_or_in_part_is_masked_everywhere(system_cli: SystemCli) -> None:
    account = json.dumps({"type": "service_account", "private_key": PEM + "\n", "client_email": "ci@p.iam"})
    criteria = [
        {"type": "run_command", "command": _printing(LINES[2:4], "\\n"), "description": "two lines"},
        {"type": "run_command", "command": _printing(PEM.splitlines(), "\\\\n"), "description": "as JSON escapes"},
    ]
    task = task_file(
        system_cli.folder / "tasks",
        "leak",
        agent={"type": "none"},
        pre_run=[{"command": _printing(PEM.splitlines(), "\\n")}],
        success_criteria=criteria,
    )
    outcome, run = system_cli.run(task, env={"GOOGLE_APPLICATION_CREDENTIALS_JSON": account})
    assert outcome.code == 0, outcome.output
    result = run.result("leak")
    assert result["pre_run_results"][0]["stdout"].count("***") == len(LINES), result["pre_run_results"]
    for line in LINES:
        no_key_anywhere(line, system_cli.runs, system_cli.home, output=outcome.output)
