"""What the installed `coder-eval run` prints at the end of a run with more failures than it lists: 40 lines,
taken from every variant, and how many more there are (it stopped at 40 of the first variant's, saying nothing)."""

from __future__ import annotations

import pytest
import yaml

from ..support.helpers import write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_a_long_failure_list_takes_every_variant_and_says_how_many_it_left_out(system_cli: SystemCli) -> None:
    folder = system_cli.folder / "tasks"
    rows = {"rows": [{"id": f"r{n:02d}"} for n in range(25)]}
    never = {"type": "run_command", "command": "false", "description": "never passes"}
    task_file(folder, "failing", agent={"type": "none"}, dataset=rows, success_criteria=[never])
    experiment = write(
        system_cli.folder / "ab.yaml",
        yaml.safe_dump({"experiment_id": "ab", "variants": [{"variant_id": "a"}, {"variant_id": "b"}]}),
    )
    outcome, _ = system_cli.run(folder, "-e", str(experiment), env={})
    assert outcome.code == 1, outcome.output
    listed = [line for line in outcome.out.splitlines() if line.startswith("✗ ")]
    assert len(listed) == 40, outcome.out
    assert sum("[a]" in line for line in listed) == sum("[b]" in line for line in listed) == 20
    assert "… and 10 more that did not pass: run.md and the run viewer list them all" in outcome.out
