"""A claude-code call's recorded output is what the tool returned to the model, through the installed CLI.

docs/running.md: task.html shows each call's "result (what the tool returned)", and the ATIF export "what each call
returned as the step's observation". The CLI's PostToolUse hook hands over its own ``tool_response`` object
(``{"stdout": ..., "stderr": ..., "interrupted": ...}``, a Read's ``{"type": "text", "file": {...}}``): recorded as
JSON, it was no text the model saw, it differed from the replay agent's plain text for the same command, and the
2,000-character cap was spent on escaping.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.fake_anthropic import FakeAnthropic, Script, Turn

from .conftest import SystemCli, anthropic_environment, claude_code_task, new_key

TWO_LINES = "printf 'hello from bash\\nsecond line\\n'; echo out > out.txt"


def calls_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [call for iteration in result["iterations"] for call in iteration["commands"]]


def tool_results_sent(requests: list[dict[str, Any]]) -> dict[str, Any]:
    """Each tool_result the CLI sent the model, by its tool_use id: its content as the model got it."""
    return {
        block["tool_use_id"]: block
        for body in requests
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    }


def as_text(content: Any) -> str:
    return content if isinstance(content, str) else "\n".join(part["text"] for part in content if "text" in part)


def test_each_call_records_the_text_the_model_received_not_the_hooks_json(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Callable[[Script], FakeAnthropic]
) -> None:
    key = new_key()
    script = Script(
        [
            Turn(tools=[("Bash", {"command": TWO_LINES})]),
            Turn(tools=[("Read", {"file_path": "notes.txt"})]),
            Turn(tools=[("Bash", {"command": "echo partial; cat missing.txt"})]),
            Turn(tools=[("Bash", {"command": f"printf %s {key} | rev"})]),  # a secret's form, still redacted
            Turn(text="Done: out.txt written."),
        ]
    )
    fake = scripted_anthropic(script)
    task = claude_code_task(
        tmp_path / "tasks", "outputs", pre_run=[{"command": "printf 'alpha\\nbeta\\n' > notes.txt"}]
    )
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, key))
    result = run.result("outputs")
    assert result["final_status"] == "SUCCESS", (result["error_message"], outcome.output)

    bash, read, failed, leaked = calls_of(result)
    assert bash["result_summary"] == "hello from bash\nsecond line"
    assert bash["result_status"] == "success" and bash["result_data"] is None
    assert read["result_status"] == "success" and "alpha" in read["result_summary"], read["result_summary"]
    assert not read["result_summary"].lstrip().startswith("{"), read["result_summary"]
    assert failed["result_status"] == "error" and failed["error_message"] == failed["result_summary"]
    assert failed["result_summary"].startswith("Exit code 1"), failed["result_summary"]
    assert "partial" in failed["result_summary"] and "missing.txt" in failed["result_summary"]

    assert leaked["result_summary"] == "***", leaked["result_summary"]

    # each is exactly what the model was sent for its call, in order
    sent = list(tool_results_sent(fake.script.agent_requests()).values())[:3]
    assert [as_text(block["content"]) for block in sent] == [c["result_summary"] for c in (bash, read, failed)]
    assert [bool(block.get("is_error")) for block in sent] == [False, False, True]
