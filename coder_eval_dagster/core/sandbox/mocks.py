"""What a task shadows for its agent: `record_cli` shims and `mock_path_dirs`, first on the agent's PATH only.

A shim (``cli_mocks/<tool>``) runs nothing: it appends the call to
``cli_mocks/calls.jsonl`` (what ``cli_called`` reads by default), prints
the answer of the first response rule whose ``when`` matches (else the
entry's own) and exits with its code. The rules are matched by a copy of
``core/argv_match.py`` beside the shims, the criterion's own matcher. Only
the agent's commands see the shims and the mock folders: ``pre_run``,
``post_run`` and the criteria's commands run the real tools.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path

from .. import argv_match
from ..files import UnreadableFile, open_beneath, write_all
from ..models.sandbox import RECORD_CLI_DIR, RECORD_CLI_LOG, RecordedCli, SandboxConfig
from .base import Sandbox
from .templates import TemplateError, inside_sandbox

SHIM = """#!/usr/bin/env python3
# coder-eval record_cli shim: runs nothing; records the call and answers as the task says.
import json, os, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from argv_match import matches

ENTRY = json.loads({entry})
argv, answer, rule = sys.argv[1:], ENTRY, None
for index, response in enumerate(ENTRY["responses"]):
    if matches(response["when"], argv):
        answer, rule = response, index
        break
record = {{"ts": time.time(), "tool": ENTRY["tool"], "argv": argv, "exit": answer["exit_code"]}}
if rule is not None:
    record["rule"] = rule
with open(os.path.join(HERE, "calls.jsonl"), "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\\n")
sys.stdout.write(answer["stdout"])
sys.stderr.write(answer["stderr"])
sys.exit(answer["exit_code"])
"""
EXECUTABLE = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH


def _entry(recorded: RecordedCli) -> str:
    """The shim's answers as JSON (the rules' ``when`` lowered to what ``argv_match`` reads)."""
    entry = recorded.model_dump(include={"tool", "exit_code", "stdout", "stderr"})
    entry["responses"] = [
        {**response.model_dump(include={"exit_code", "stdout", "stderr"}), "when": response.when.spec()}
        for response in recorded.responses
    ]
    return json.dumps(entry)


def install_mocks(root: Path, config: SandboxConfig) -> None:
    """Write the shims (with the matcher and an empty log), and make the mock folders' files executable.

    Every file is opened beneath the sandbox (``open_beneath``), never through a link out of it: the sandbox's
    setup (a node package's install script, a template) has already run, and what it left or still changes
    there must not turn the harness's writes, as its user, onto this machine's files.
    """
    if config.record_cli:
        _write_beneath(root, f"{RECORD_CLI_DIR}/argv_match.py", Path(argv_match.__file__).read_bytes(), 0o644)
        _write_beneath(root, RECORD_CLI_LOG, b"", 0o644)
        for recorded in config.record_cli:
            shim = SHIM.format(entry=repr(_entry(recorded))).encode("utf-8")
            _write_beneath(root, f"{RECORD_CLI_DIR}/{recorded.tool}", shim, 0o755)
    for relative in config.mock_path_dirs:
        folder = inside_sandbox(root, relative)
        if not folder.is_dir():
            continue
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries if entry.is_file(follow_symlinks=False)]
        for name in names:
            _make_executable(root, f"{relative}/{name}")


def _write_beneath(root: Path, relative: str, data: bytes, mode: int) -> None:
    """``data`` as the sandbox file ``relative`` with ``mode``; a TemplateError when a link takes it out, or when
    the file there has another name (a hard link: its other name may be anywhere on its file system)."""
    try:
        fd = open_beneath(root, relative, os.O_WRONLY | os.O_CREAT, make_parents=True)
    except (OSError, UnreadableFile) as exc:  # a link out of the sandbox, a folder or FIFO in the way
        raise TemplateError(f"{relative}: {exc}; nothing was written there") from None
    try:
        if os.fstat(fd).st_nlink > 1:
            raise TemplateError(f"{relative} is a hard link to another file; nothing was written there")
        os.ftruncate(fd, 0)
        write_all(fd, data)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _make_executable(root: Path, relative: str) -> None:
    """A mock folder's regular file made executable; one that has become a link out, or no file, is left alone."""
    try:
        fd = open_beneath(root, relative, os.O_RDONLY)
    except (OSError, UnreadableFile):
        return
    try:
        os.fchmod(fd, os.fstat(fd).st_mode | EXECUTABLE)
    finally:
        os.close(fd)


def agent_path_dirs(sandbox: Sandbox) -> list[str]:
    """The folders put first on the agent's PATH, as the agent sees them (under ``workdir``): the shims', then
    each mock folder that exists."""
    dirs = [RECORD_CLI_DIR] if sandbox.config.record_cli else []
    dirs += sandbox.config.mock_path_dirs
    return [str(sandbox.workdir / relative) for relative in dirs if (sandbox.root / relative).is_dir()]


def agent_environment(sandbox: Sandbox) -> dict[str, str]:
    """The sandbox's environment as the agent gets it: the shims and mock folders first on PATH."""
    env = sandbox.environment()
    dirs = agent_path_dirs(sandbox)
    if dirs:
        env["PATH"] = os.pathsep.join([*dirs, env.get("PATH", os.defpath)])
    return env


def agent_command(command: str, sandbox: Sandbox) -> str:
    """A shell command an agent runs through ``sandbox.run`` (a replay), with the shims and mock folders first on
    PATH."""
    dirs = agent_path_dirs(sandbox)
    if not dirs:
        return command
    return f'PATH={shlex.quote(os.pathsep.join(dirs))}"{os.pathsep}$PATH"; export PATH\n{command}'
