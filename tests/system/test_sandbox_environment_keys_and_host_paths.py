"""What a sandbox command's ``env`` shows, as a user runs coder-eval: no private key under a name no rule knows, no
folder of this machine the user was in."""

from __future__ import annotations

import json
import secrets

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def _pem(kind: str, newline: str) -> str:
    """A PEM private key block of ``kind`` (``""``, ``"OPENSSH "``...), its lines joined by ``newline``."""
    body = [secrets.token_urlsafe(48) for _ in range(3)]
    return newline.join([f"-----BEGIN {kind}PRIVATE KEY-----", *body, f"-----END {kind}PRIVATE KEY-----", ""])


def test_private_keys_and_the_users_last_folder_reach_no_sandbox_command(system_cli: SystemCli) -> None:
    """A value holding a PEM private key (a service account's JSON, an SSH key) was in `env` under any name, and so
    in task.json; so were OLDPWD, the folder on this machine the user had been in before, and ``_``, the path of
    coder-eval's own venv."""
    account = {"type": "service_account", "private_key_id": "k1", "private_key": _pem("", "\n")}
    planted = {
        "GCP_SA_JSON": json.dumps(account),
        "SSH_PRIVATE": _pem("OPENSSH ", "\n"),
        "DEPLOY_RSA": _pem("RSA ", "\n"),
        "OLDPWD": f"/home/someone/projects/{secrets.token_hex(8)}",
        "_": f"/home/someone/venv-{secrets.token_hex(8)}/bin/coder-eval",
        "VIRTUAL_ENV": f"/home/someone/venv-{secrets.token_hex(8)}",  # the harness's, where the sandbox has none
    }
    folder = system_cli.folder / "tasks"
    task_file(folder, "envs", agent={"type": "none"}, pre_run=[{"command": "env; echo a > a.txt"}])
    outcome, run = system_cli.run(folder, env={**planted, "GIT_AUTHOR_NAME": "someone"})
    assert outcome.code == 0, outcome.output
    seen = run.result("envs")["pre_run_results"][0]["stdout"]
    assert "GIT_AUTHOR_NAME=someone" in seen and "PWD=/sandbox" in seen.splitlines()
    assert [name for name in planted if any(line.startswith(f"{name}=") for line in seen.splitlines())] == []
    recorded = (run.evaluation("envs") / "task.json").read_text(encoding="utf-8")
    assert [name for name, value in planted.items() if value in recorded or json.dumps(value) in recorded] == []
    assert "PRIVATE KEY" not in recorded
