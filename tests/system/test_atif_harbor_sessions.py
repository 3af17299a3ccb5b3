"""A session Harbor recorded replays through the installed `coder-eval`: ATIF-v1.8 (Harbor 0.25's and 0.26's default
version, which adds audio parts), JSON as Python's ``json.dumps`` writes it (a character beyond U+FFFF as two
``\\uXXXX`` escapes), and Bash commands that name the session's working folder (``/app``) as well as its file calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coder_eval_dagster.core.layout import load_result

from ..support.helpers import write_task
from .conftest import SystemCli

SPEAK = {"type": "audio", "source": {"media_type": "audio/mp3", "path": "/logs/ask.mp3", "duration_sec": 2.5}}
COMMANDS = ["cat /app/hello.txt > copy.txt", 'cd /app && echo "/application /srv/app /app/ /app" > where.txt']


def harbor_session() -> dict[str, Any]:
    """A Claude Code session as Harbor 0.26 records one (working folder ``/app``): audio beside text, an emoji."""
    calls = [
        {
            "tool_call_id": "w",
            "function_name": "Write",
            "arguments": {"file_path": "/app/hello.txt", "content": "hi\n"},
        },
        *(
            {"tool_call_id": f"b{n}", "function_name": "Bash", "arguments": {"command": command}}
            for n, command in enumerate(COMMANDS)
        ),
    ]
    return {
        "schema_version": "ATIF-v1.8",
        "session_id": "harbor-1",
        "agent": {"name": "claude-code", "version": "2.1.0", "model_name": "claude-sonnet-4-5", "extra": {"cwds": ["/app"]}},
        "steps": [
            {"step_id": 1, "source": "user", "message": [{"type": "text", "text": "Write hello.txt"}, SPEAK]},
            {
                "step_id": 2,
                "source": "agent",
                "message": [{"type": "text", "text": "Writing it 🎉"}, SPEAK],
                "tool_calls": calls,
                "observation": {"results": [{"source_call_id": "w", "content": [SPEAK]}]},
                "metrics": {"prompt_tokens": 1500, "completion_tokens": 80, "cost_usd": 0.004},
            },
            {"step_id": 3, "source": "agent", "message": "Done 🎉."},
        ],
    }  # fmt: skip


def replay_of(folder: Path, session: dict[str, Any]) -> Path:
    """A task replaying ``session``, written as Harbor writes it (``json.dumps(..., indent=2)``: ASCII escapes)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "session.json").write_text(json.dumps(session, indent=2), encoding="utf-8")
    criteria = [
        {"type": "file_contains", "path": "copy.txt", "includes": ["hi"], "description": "cat read hello.txt"},
        {
            "type": "file_contains",
            "path": "where.txt",
            "includes": ["/application /srv/app /sandbox/ /sandbox\n"],
            "description": "only the working folder itself became the sandbox's",
        },
    ]
    task = {
        "task_id": "harbor",
        "description": "a Harbor session replayed",
        "initial_prompt": "Write hello.txt",
        "sandbox": {"python": None},
        "agent": {"type": "replay", "trajectory": "session.json"},
        "success_criteria": criteria,
    }
    return write_task(folder, task, "harbor.yaml")


def test_a_harbor_v1_8_session_with_audio_and_an_escaped_emoji_replays(system_cli: SystemCli) -> None:
    task = replay_of(system_cli.folder / "tasks", harbor_session())
    assert "\\ud83c\\udf89" in (task.parent / "session.json").read_text(encoding="utf-8")
    checked = system_cli("validate", task.parent / "session.json", env={})
    assert checked.code == 0, checked.output

    done, run = system_cli.run(task, env={})
    assert done.code == 0, done.output
    turns = load_result(run.evaluation("harbor") / "task.json").trajectory
    assert [turn.text for turn in turns] == ["Writing it 🎉", "Done 🎉."]  # the audio part is not text
    commands = [call.parameters["command"] for call in turns[0].calls if call.tool == "Bash"]
    assert commands == [
        "cat /sandbox/hello.txt > copy.txt",
        'cd /sandbox && echo "/application /srv/app /sandbox/ /sandbox" > where.txt',
    ]


def test_a_broken_audio_part_and_half_a_surrogate_pair_are_refused_at_their_lines(system_cli: SystemCli) -> None:
    session = harbor_session()
    session["steps"][1]["message"][1] = {"type": "audio", "source": {"media_type": "image/png", "path": "a.png"}}
    task = replay_of(system_cli.folder / "audio", session)
    refused = system_cli.invalid(task.parent / "session.json")
    lines = json.dumps(session, indent=2).splitlines()
    line = [n for n, text in enumerate(lines, start=1) if '"message": [' in text][1]  # the agent step's
    assert refused.err.startswith(f"{task.parent / 'session.json'}:{line}: steps.1.message"), refused.output
    assert ".1.type: an audio part has an audio source (its media_type) and no text" in refused.err, refused.output

    lone = json.dumps(harbor_session(), indent=2).replace("\\udf89", "", 1)  # the first emoji's low half gone
    path = system_cli.folder / "lone.json"
    path.write_text(lone, encoding="utf-8")
    refused = system_cli.invalid(path)
    (said,) = refused.err.splitlines()
    line = next(n for n, text in enumerate(lone.splitlines(), start=1) if "Writing it" in text)
    assert said.startswith(f"{path}:{line}: (document): JSON error (line {line}, column "), refused.output
    assert "\\ud83c is half of a character beyond U+FFFF (a surrogate) without its other half" in said, refused.output
