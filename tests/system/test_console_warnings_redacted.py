"""A warning the harness logs reaches the terminal redacted without ``-v`` too: Python's last resort (the handler of
a logger that has none) printed it as it was, and a model's 401 quoting the key was printed in clear."""

from __future__ import annotations

import pytest

from ..support.helpers import write
from .conftest import SystemCli

pytestmark = pytest.mark.slow

KEY = "sk-ant-api03-" + "Qx7" * 12


def test_a_warning_quoting_a_key_is_masked_on_stderr(system_cli: SystemCli) -> None:
    """The model is named by the key itself, so the pricing warning ("no price known for model ...") quotes it."""
    folder = system_cli.folder
    write(
        folder / "traj.yaml",
        "turns:\n  - usage: {input_tokens: 100, output_tokens: 10}\n    calls: []\n    text: done\n",
    )
    write(
        folder / "t.yaml",
        "task_id: t\ndescription: d\ninitial_prompt: hi\n"
        f"agent: {{type: replay, trajectory: traj.yaml, model: {KEY}}}\n"
        "success_criteria:\n  - {type: file_exists, path: a.txt, description: d}\n",
    )
    for verbose in ((), ("-v",)):
        outcome = system_cli(
            "run", folder / "t.yaml", "--runs-dir", system_cli.runs, *verbose, env={"ANTHROPIC_API_KEY": KEY}
        )
        assert outcome.code == 1, outcome.output
        assert "no price known for model '***'" in outcome.err, outcome.err
        assert KEY not in outcome.output
