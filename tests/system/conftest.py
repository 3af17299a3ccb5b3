"""The system layer's shared parts: the installed CLI as a subprocess, the scripted model servers, the leak search.

Every test here runs the product as a user does: the console script in a
process of its own, credentials only in that process's environment (never in
this process's ``os.environ``), and the scripted servers of
tests/support/fake_anthropic.py, fake_openai.py and fake_chat.py on 127.0.0.1
in place of the model APIs. Names are specific (``system_cli``,
``scripted_anthropic``...): other helpers' fixtures may live in this conftest
too.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
import yaml

from ..support.fake_anthropic import FakeAnthropic, Script, Turn
from ..support.fake_chat import ChatScript, FakeChat
from ..support.fake_http import LoopbackServer
from ..support.fake_openai import FakeResponses, ResponsesScript
from ..support.helpers import write, write_task

CLI = Path(sys.executable).parent / "coder-eval"
# Never inherited from the test process: a developer's own keys and model routes, instance and code location settings.
_NOT_INHERITED = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|^(ANTHROPIC_|CLAUDE|OPENAI_|CODEX_|AWS_|API_BACKEND$|DAGSTER_|CODER_EVAL_)"
    r"|^(COLUMNS|LINES)$",  # the size of the terminal the tests were started from: a test's command has none
    re.IGNORECASE,
)
# What an agent's Bash tool runs to read every credential it can: its environment, its parent's (the agent CLI's)
# and that of every other process it can see (under `coder-eval dev`, the key is in Dagster's processes' too).
ENV_PROBE = (
    "env > seen_env.txt; cat /proc/$PPID/environ /proc/self/environ /proc/[0-9]*/environ >> seen_env.txt 2>/dev/null;"
    " true"
)


def probing_session(**script: Any) -> Script:
    """The agent writes out.txt, runs ENV_PROBE (what its tools can see of any key), and says it is done."""
    return Script(
        [
            Turn(tools=[("Bash", {"command": "echo hi > out.txt"})], input_tokens=300, output_tokens=40),
            Turn(tools=[("Bash", {"command": ENV_PROBE})], input_tokens=400, output_tokens=30),
            Turn(text="Done: created out.txt", input_tokens=500, output_tokens=10),
        ],
        **script,
    )


def new_key(prefix: str = "sk-ant-") -> str:
    """A credential value no file could hold by chance."""
    return prefix + secrets.token_hex(16)


# ----------------------------------------------------------------------------- the CLI


@dataclass
class CliOutcome:
    code: int
    out: str
    err: str

    @property
    def output(self) -> str:
        return self.out + self.err


@dataclass
class RunFolder:
    """One run under ``--runs-dir``: run.json, and each evaluation's task.json and preserved sandbox."""

    path: Path

    @property
    def summary(self) -> dict[str, Any]:
        return json.loads((self.path / "run.json").read_text(encoding="utf-8"))

    def evaluation(self, task_id: str, variant: str = "default", replicate: str = "00") -> Path:
        return self.path / variant / task_id / replicate

    def result(self, task_id: str, variant: str = "default", replicate: str = "00") -> dict[str, Any]:
        return json.loads((self.evaluation(task_id, variant, replicate) / "task.json").read_text(encoding="utf-8"))


def table_models(cli: SystemCli) -> tuple[str | None, str | None]:
    """The ``model`` and ``agent_model`` of the one task_results row the CLI's one run wrote."""
    import pyarrow.parquet as pq

    (path,) = cli.runs.glob("tables/task_results/*/*.parquet")
    (row,) = pq.read_table(path, columns=["model", "agent_model"]).to_pylist()
    return row["model"], row["agent_model"]


def agent_usage(result: dict[str, Any]) -> tuple[int, int, float | None]:
    """A task.json's agent tokens and cost, as the report schema writes them: (uncached input, output, cost)."""
    usage = result["total_token_usage"] or {}
    return usage.get("uncached_input_tokens", 0), usage.get("output_tokens", 0), usage.get("total_cost_usd")


def only_run(runs: Path) -> RunFolder:
    """The one run folder under ``runs`` (not ``tables``, a hidden cache or the ``latest`` link)."""
    found = [
        path
        for path in runs.iterdir()
        if path.is_dir() and not path.is_symlink() and path.name != "tables" and not path.name.startswith(".")
    ]
    assert len(found) == 1, found
    return RunFolder(found[0])


def stop_group(process: subprocess.Popen[Any], first: int = signal.SIGKILL, grace_s: float = 60) -> None:
    """Stop a process started in its own session, and everything it started: ``first``, then SIGKILL."""
    for sig in dict.fromkeys((first, signal.SIGKILL)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


class SystemCli:
    """The installed ``coder-eval`` run in ``folder``, with its own instance (``home``) and runs folder (``runs``)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.home = folder / "dagster_home"
        self.runs = folder / "runs"

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """This process's environment without any credential or model route of its own, plus ``env``."""
        inherited = {name: value for name, value in os.environ.items() if not _NOT_INHERITED.search(name)}
        return {**inherited, "DAGSTER_HOME": str(self.home), **env}

    def start(
        self,
        *args: str | Path,
        env: Mapping[str, str],
        stdout: int | IO[Any] = subprocess.PIPE,
        cwd: Path | None = None,
        prefix: Sequence[str] = (),
    ) -> subprocess.Popen[bytes]:
        """The command in a session of its own (stop it with ``stop_group``); stderr goes where stdout goes. From
        ``cwd`` (a user's other folder), under ``prefix`` (``unshare`` making its user an ordinary one)."""
        return subprocess.Popen(
            [*prefix, str(CLI), *map(str, args)],
            cwd=cwd or self.folder,
            env=self.environment(env),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE if stdout == subprocess.PIPE else subprocess.STDOUT,
            start_new_session=True,
        )

    def __call__(
        self,
        *args: str | Path,
        env: Mapping[str, str],
        timeout: float = 180,
        cwd: Path | None = None,
        prefix: Sequence[str] = (),
    ) -> CliOutcome:
        process = self.start(*args, env=env, cwd=cwd, prefix=prefix)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(process)
            out, err = process.communicate()
            pytest.fail(f"coder-eval {args} still ran after {timeout:g} s:\n{(out + err).decode(errors='replace')}")
        return CliOutcome(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))

    def run(
        self, task: Path, *options: str, env: Mapping[str, str], timeout: float = 180
    ) -> tuple[CliOutcome, RunFolder]:
        """``coder-eval run TASK --runs-dir RUNS OPTIONS``: what it printed, and the run folder it wrote."""
        outcome = self("run", task, "--runs-dir", self.runs, *options, env=env, timeout=timeout)
        assert self.runs.is_dir(), outcome.output
        return outcome, only_run(self.runs)

    def invalid(self, task: Path) -> CliOutcome:
        """``coder-eval validate TASK`` of a file it must refuse (exit 1): what it said."""
        outcome = self("validate", task, env={})
        assert outcome.code == 1, outcome.output
        return outcome


@pytest.fixture
def system_cli(tmp_path: Path) -> SystemCli:
    return SystemCli(tmp_path)


# ----------------------------------------------------------------------------- tasks


WRITES_A = [{"type": "file_exists", "path": "a.txt", "description": "a.txt exists"}]


def task_file(folder: Path, task_id: str, **changes: Any) -> Path:
    """``<task_id>.yaml`` in ``folder``: its pre_run writes a.txt and its one criterion wants it (no agent block:
    give ``agent``), with ``changes`` laid over its top-level keys."""
    data: dict[str, Any] = {
        "task_id": task_id,
        "description": task_id,
        "sandbox": {"python": None},
        "pre_run": [{"command": "echo a > a.txt"}],
        "success_criteria": WRITES_A,
        **changes,
    }
    return write_task(folder, data, f"{task_id}.yaml")


def claude_code_task(folder: Path, task_id: str, **changes: Any) -> Path:
    """A claude-code task file (out.txt must exist) in ``folder``, with ``changes`` laid over its top-level keys."""
    data = {
        "task_id": task_id,
        "description": f"the {task_id} path",
        "initial_prompt": "Create out.txt",
        "sandbox": {"python": None},
        "agent": {"type": "claude-code", "permission_mode": "bypassPermissions", "model": "claude-test"},
        "success_criteria": [{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}],
        **changes,
    }
    return write_task(folder, data, f"{task_id}.yaml")


def replay_task_file(folder: Path, task_id: str, turns: list[dict[str, Any]], **changes: Any) -> Path:
    """A replay task (no model call of its own) playing ``turns``, with ``changes`` laid over its keys."""
    write(folder / f"{task_id}.traj.yaml", yaml.safe_dump({"turns": turns}))
    data = {
        "task_id": task_id,
        "description": f"the {task_id} path",
        "initial_prompt": "p",
        "sandbox": {"python": None},
        "agent": {"type": "replay", "trajectory": f"{task_id}.traj.yaml"},
        **changes,
    }
    return write_task(folder, data, f"{task_id}.yaml")


# ----------------------------------------------------------------------------- scripted servers


def proxied_through(url: str) -> dict[str, str]:
    """Proxy settings that send anything not on loopback to the scripted server, which records the attempt."""
    origin = re.sub(r"(https?://[^/]+).*", r"\1", url)
    return {"HTTPS_PROXY": origin, "HTTP_PROXY": origin, "NO_PROXY": "127.0.0.1,localhost"}


def anthropic_environment(url: str, key: str) -> dict[str, str]:
    """What a user exports for the direct Anthropic API (no CLI retries: a failure shows at once)."""
    return {"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": url, "CLAUDE_CODE_MAX_RETRIES": "0", **proxied_through(url)}


def bedrock_environment(url: str, token: str) -> dict[str, str]:
    """What a user exports for Bedrock with a bearer token, the endpoint being the scripted server."""
    return {
        "AWS_BEARER_TOKEN_BEDROCK": token,
        "ANTHROPIC_BEDROCK_BASE_URL": url,
        "AWS_REGION": "us-east-1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        **proxied_through(url),
    }


def _serving(server: type[LoopbackServer]) -> Iterator[Callable[[Any], Any]]:
    """A fixture body: ``serve(script)`` starts ``server`` on 127.0.0.1; all stop at the end. No environment is set."""
    started: list[LoopbackServer] = []

    def serve(script: Any) -> Any:
        fake = server(script)
        fake.__enter__()
        started.append(fake)
        return fake

    yield serve
    for fake in started:
        fake.__exit__()


@pytest.fixture
def scripted_anthropic() -> Iterator[Callable[[Script], FakeAnthropic]]:
    """``scripted_anthropic(Script(...))``: a Messages API (and Bedrock's paths) on 127.0.0.1; ``.url``, ``.script``."""
    yield from _serving(FakeAnthropic)


@pytest.fixture
def scripted_responses() -> Iterator[Callable[[ResponsesScript], FakeResponses]]:
    """``scripted_responses(ResponsesScript(...))``: an OpenAI Responses API on 127.0.0.1 (``.url`` ends in /v1)."""
    yield from _serving(FakeResponses)


@pytest.fixture
def scripted_chat() -> Iterator[Callable[[ChatScript], FakeChat]]:
    """``scripted_chat(ChatScript(...))``: an OpenAI Chat Completions API on 127.0.0.1 (``.url`` ends in /v1)."""
    yield from _serving(FakeChat)


# ----------------------------------------------------------------------------- the leak search


def key_forms(key: str) -> dict[str, bytes]:
    """A key as a leak would show it: as written, reversed, base64 (as `echo $KEY | base64` too), hex (`od`, `xxd`)."""
    return {
        "as written": key.encode(),
        "reversed": key[::-1].encode(),
        "base64": base64.b64encode(key.encode()).rstrip(b"="),
        "base64 of a line": base64.b64encode(key.encode() + b"\n").rstrip(b"="),
        "hex": key.encode().hex().encode(),
    }


def _contents(path: Path) -> bytes:
    """A file's bytes; a Parquet file's values as text too (its pages may be compressed)."""
    data = path.read_bytes()
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        data += str(pq.read_table(path).to_pylist()).encode()
    return data


def no_key_anywhere(key: str, *roots: Path, output: str) -> None:
    """Fail naming each place ``key`` shows in any form: every file under ``roots`` (Parquet by value), ``output``."""
    haystacks = {"the CLI's output": output.encode()}
    for root in roots:
        assert root.is_dir(), f"nothing to search at {root}"
        files = [path for path in sorted(root.rglob("*")) if path.is_file() and not path.is_symlink()]
        assert files, f"no file under {root}"
        haystacks.update((str(path), _contents(path)) for path in files)
    found = [
        f"{form} in {where}"
        for where, text in haystacks.items()
        for form, pattern in key_forms(key).items()
        if pattern in text
    ]
    assert not found, "the key leaked:\n" + "\n".join(found)


def carried(key: str, headers: list[dict[str, str]]) -> bool:
    """Whether every recorded request (there were some) carried ``key`` itself: as x-api-key or a bearer token."""

    def credential(sent: dict[str, str]) -> str | None:
        lowered = {name.lower(): value for name, value in sent.items()}
        return lowered.get("x-api-key") or lowered.get("authorization", "").removeprefix("Bearer ") or None

    return bool(headers) and all(credential(sent) == key for sent in headers)


def probe_ran(sandbox: Path) -> str:
    """What ENV_PROBE saw (asserting it ran, so that finding no key in it means something)."""
    seen = sandbox / "seen_env.txt"
    assert seen.is_file(), f"the probe left no {seen}"
    text = seen.read_text(errors="replace")
    assert "PATH=" in text, text[:500]
    return text
