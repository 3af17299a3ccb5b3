"""No credential the harness was started with is reachable from a sandbox, nor lands anywhere, in any form.

The real CLI runs with credentials planted in its environment. pre_run
commands, a replayed agent's Bash calls and a run_command criterion attack
the way a hostile agent would: ``env``, ``/proc/$PPID/environ`` and
``cmdline``, and every visible process's environ, cmdline and memory
(``/proc/<pid>/mem``, scanned for key-shaped strings). What they find is
written into the sandbox (kept in the run folder, never redacted), and the
run folder, the tables, the Dagster instance and the CLI's output are then
searched for every credential as written, reversed and base64-encoded.
"""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ..support.helpers import write, write_replay_task

pytestmark = pytest.mark.slow

# Scans what a sandboxed process can see for key-shaped strings. The control
# value, built at run time, is in the scanner's own memory: finding it proves
# the memory scan works, so finding nothing else means something.
ATTACK = r"""
import base64, os, re, sys
shape = re.compile(rb"(?:sk-ant-|ghp_|awsS3cr3t|sk-proj-|pw0rd)[0-9a-f]{16,}")
control = ("sk-ant-" + "c0ffee" * 4).encode()
found = set()
def look(data):
    found.update(shape.findall(data))
pids = [p for p in os.listdir("/proc") if p.isdigit()] + [str(os.getppid())]
for pid in pids:
    for name in ("environ", "cmdline"):
        try:
            look(open(f"/proc/{pid}/{name}", "rb").read())
        except OSError:
            pass
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", buffering=0)
    except OSError:
        continue
    for line in maps:
        span, perms = line.split()[:2]
        start, end = (int(x, 16) for x in span.split("-"))
        if "r" in perms and end - start < 256 * 2**20:
            try:
                mem.seek(start)
                look(mem.read(end - start))
            except (OSError, ValueError, OverflowError):
                pass
look(os.popen("env").read().encode())
print("control ok" if control in found else "control MISSED")
for key in sorted(found - {control}):
    print("FOUND", key.decode(), key.decode()[::-1], base64.b64encode(key).decode())
"""


def _credentials() -> dict[str, str]:
    hex_ = lambda: secrets.token_hex(16)  # noqa: E731
    return {
        "ANTHROPIC_API_KEY": f"sk-ant-{hex_()}",
        "AWS_SECRET_ACCESS_KEY": f"awsS3cr3t{hex_()}",
        "GITHUB_TOKEN": f"ghp_{hex_()}",
        "OPENAI_API_KEY": f"sk-proj-{hex_()}",
        "CODEX_API_KEY": f"sk-proj-{hex_()}",
        "DATABASE_PASSWORD": f"pw0rd{hex_()}",
    }


def _forms(value: str) -> list[bytes]:
    encoded = [base64.b64encode(raw.encode()).rstrip(b"=") for raw in (value, value + "\n")]
    return [value.encode(), value[::-1].encode(), *encoded]


def _attacks(stage: str) -> str:
    """Run the scanner and the plain reads; keep the findings in the sandbox, and print them too."""
    return (
        f"{{ umount /proc; python3 attack.py; env; cat /proc/$PPID/environ /proc/$PPID/cmdline; "
        f"env | rev; env | base64; }} 2>&1 | tee leak-{stage}.txt; test -s leak-{stage}.txt"
    )


def _task(tmp_path: Path) -> Path:
    """The attacks from every stage; the agent's last Bash call waits for a ``release`` file in its sandbox."""
    write(tmp_path / "template" / "attack.py", ATTACK)
    wait = "while [ ! -e release ]; do sleep 0.1; done"
    criteria = [
        {"type": "run_command", "command": _attacks("criterion"), "description": "attacks"},
        {"type": "file_contains", "path": "leak-agent.txt", "includes": ["control ok"], "description": "scan"},
    ]
    return write_replay_task(
        tmp_path,
        "thief",
        [_attacks("agent"), wait],
        [_attacks("pre_run")],
        success_criteria=criteria,
        sandbox={"python": None, "template_sources": [{"type": "template_dir", "path": "template"}]},
    )


def _files(*roots: Path) -> list[Path]:
    return [path for root in roots for path in root.rglob("*") if path.is_file() and not path.is_symlink()]


def _tables_text(tables: Path) -> bytes:
    """The Parquet tables' values as text (their pages may be compressed)."""
    import pyarrow.parquet as pq

    return b"".join(str(pq.read_table(path).to_pylist()).encode() for path in tables.rglob("*.parquet"))


def test_no_credential_is_reachable_or_recorded_in_any_form(tmp_path: Path) -> None:
    planted = _credentials()
    cli = Path(sys.executable).parent / "coder-eval"
    process = subprocess.Popen(
        [str(cli), "run", str(_task(tmp_path)), "--runs-dir", str(tmp_path / "runs")],
        env={**os.environ, **planted, "DAGSTER_HOME": str(tmp_path / "home")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not (found := list(tmp_path.glob("runs/latest/default/thief/00/sandbox/leak-agent.txt"))):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.1)
    running_environ = Path(f"/proc/{process.pid}/environ").read_bytes()  # the CLI's, mid-run
    (found[0].parent / "release").touch()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, (out + err).decode()  # every attack ran and the memory scan found its control

    (run_dir,) = (tmp_path / "runs").glob("2*")
    leaks = {stage: (run_dir / f"default/thief/00/sandbox/leak-{stage}.txt") for stage in ("pre_run", "agent")}
    assert all(b"control ok" in path.read_bytes() for path in leaks.values())
    haystacks = {
        "CLI output": out + err,
        "CLI environ": running_environ,
        "tables": _tables_text(tmp_path / "runs" / "tables"),
        **{str(path): path.read_bytes() for path in _files(run_dir, tmp_path / "home")},
    }
    leaked = [
        f"{name} in {where}"
        for name, value in planted.items()
        for form in _forms(value)
        for where, text in haystacks.items()
        if form in text
    ]
    assert leaked == []


def test_a_key_a_model_echoes_into_its_text_or_a_tool_input_is_not_recorded(tmp_path: Path) -> None:
    """A model may write a key into its answer or a command (the proxy hands it the real one upstream): those were
    stored as written in task.json, task.html and the commands table while the command's output said ***."""
    key = f"sk-ant-test-{secrets.token_hex(12)}"
    turn = {"text": f"the key might be {key}", "calls": [{"tool": "Bash", "command": f"echo {key} | wc -c > n.txt"}]}
    write(tmp_path / "traj.yaml", yaml.safe_dump({"turns": [turn]}))
    task = write(
        tmp_path / "echo.yaml",
        "task_id: echo\ndescription: d\ninitial_prompt: p\nsandbox: {python: null}\n"
        "agent: {type: replay, trajectory: traj.yaml}\n"
        "success_criteria: [{type: file_exists, path: n.txt, description: n}]\n",
    )
    run_dir = _run_passing(tmp_path, task, {"ANTHROPIC_API_KEY": key})
    haystacks = {str(path): path.read_bytes() for path in _files(run_dir)}
    haystacks["tables"] = _tables_text(tmp_path / "runs" / "tables")
    assert [where for where, text in haystacks.items() if key.encode() in text] == []
    assert b"the key might be ***" in (run_dir / "default" / "echo" / "00" / "task.json").read_bytes()


def test_secrets_under_other_names_stay_out_of_sandbox_commands(tmp_path: Path) -> None:
    """Names beside KEY/TOKEN/SECRET (DB_PASS, MYSQL_PWD, NPM_CONFIG__AUTH, SENTRY_DSN, GH_PAT, a connection string,
    a webhook, a passphrase, an AUTH_ word inside a name), URLs holding a password or a token as their user, values
    holding a key or an Authorization header, and a model-route setting in lower case reached every command under
    the default driver, and so the reports; settings such as GIT_AUTHOR_NAME still do."""
    planted = {
        "DATABASE_URL": f"postgres://app:{secrets.token_hex(8)}@db/x",
        "PIP_INDEX_URL": f"https://u:{secrets.token_hex(8)}@pypi.corp/simple",
        "MYSQL_PWD": secrets.token_hex(8),
        "DB_PASS": secrets.token_hex(8),
        "NPM_CONFIG__AUTH": secrets.token_hex(8),
        "SENTRY_DSN": f"https://{secrets.token_hex(8)}@o1.ingest.sentry.io/1",
        "GH_PAT": secrets.token_hex(8),
        "AZURE_STORAGE_CONNECTION_STRING": f"DefaultEndpointsProtocol=https;AccountKey={secrets.token_hex(8)}",
        "TELEMETRY_CONNECTION_STRING": f"InstrumentationKey={secrets.token_hex(8)};IngestionEndpoint=https://x/",
        "SLACK_WEBHOOK_URL": f"https://hooks.slack.com/services/T0/B0/{secrets.token_hex(8)}",
        "STORE": f"BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv={secrets.token_hex(8)}",
        "GPG_PASSPHRASE": secrets.token_hex(8),
        "DOCKER_AUTH_CONFIG": f'{{"auths": {{"r": {{"auth": "{secrets.token_hex(8)}"}}}}}}',
        # a token as a URL's user, a header in git's settings, a password manager's session, a CI job's JWT
        "UPSTREAM_REPO": f"https://ghp_{secrets.token_hex(8)}@github.com/org/repo.git",
        "GIT_CONFIG_PARAMETERS": f"'http.extraheader'='AUTHORIZATION: basic {secrets.token_hex(8)}'",  # (git 2.31+)
        "GIT_CONFIG_VALUE_0": f"PRIVATE-TOKEN: glpat-{secrets.token_hex(8)}",
        "FEED_URL": f"https://pkgs.example/simple?token={secrets.token_hex(8)}",
        "MODEL_URL": f"https://b.s3.amazonaws.com/m?X-Amz-Signature={secrets.token_hex(8)}",
        "HTTP_BEARER": f"Bearer {secrets.token_hex(8)}",
        "SSHPASS": secrets.token_hex(8),
        "BW_SESSION": secrets.token_hex(8),
        "CI_JOB_JWT": secrets.token_hex(8),
        "anthropic_base_url": f"http://127.0.0.1:9/{secrets.token_hex(8)}",
    }
    task = write(
        tmp_path / "envs.yaml",
        "task_id: envs\ndescription: d\nagent: {type: none}\nsandbox: {python: null}\n"
        'pre_run: [{command: "env > env.txt"}]\n'
        "success_criteria: [{type: file_contains, path: env.txt, includes: [GIT_AUTHOR_NAME=someone], description: e}]\n",
    )
    run_dir = _run_passing(tmp_path, task, {**planted, "GIT_AUTHOR_NAME": "someone"})
    seen = (run_dir / "default" / "envs" / "00" / "sandbox" / "env.txt").read_text()
    assert [name for name in planted if f"{name}=" in seen] == []
    assert "DAGSTER_HOME=" not in seen  # nor the harness's own settings
    records = b"".join(path.read_bytes() for path in _files(run_dir))
    assert [name for name, value in planted.items() if value.encode() in records] == []


def _run_passing(tmp_path: Path, task: Path, env: dict[str, str]) -> Path:
    """``coder-eval run TASK`` with ``env`` laid over this environment; its run folder, once it passed."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "coder-eval"), "run", str(task), "--runs-dir", str(tmp_path / "runs")],
        env={**os.environ, **env, "DAGSTER_HOME": str(tmp_path / "home")},
        capture_output=True,
        timeout=180,
    )
    assert done.returncode == 0, (done.stdout + done.stderr).decode()
    (run_dir,) = (tmp_path / "runs").glob("2*")
    return run_dir
