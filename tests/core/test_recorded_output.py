"""A tool call's output as every agent's trajectory keeps it (agents/base.py: recorded_output)."""

from __future__ import annotations

import pytest

from coder_eval_dagster.core.agents.base import OUTPUT_CHARS, recorded_output

SECRET = "sk-ant-api03-" + "Q" * 40


@pytest.fixture(autouse=True)
def a_key_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)


def test_a_secret_across_the_cut_leaves_none_of_its_characters() -> None:
    """Cut first, then redacted: the key's first characters before the cut were kept (no whole key to find)."""
    output = "x" * (OUTPUT_CHARS - 20) + SECRET + "y" * 500
    kept = recorded_output(output)
    assert "sk-ant" not in kept and "QQQ" not in kept
    assert kept.endswith("…") and len(kept) == OUTPUT_CHARS + 1


def test_a_short_output_is_kept_whole_with_its_secrets_masked() -> None:
    assert recorded_output(f"key={SECRET}\n") == "key=***\n"
