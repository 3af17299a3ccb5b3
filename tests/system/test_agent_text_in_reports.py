"""What an evaluation's files print reaches the terminal and run.md as text: no escape sequence runs in the
reader's terminal (a window title, the clipboard through OSC 52, a cleared screen), no row of run.md is broken
by a carriage return, and no HTML or link of its own renders there."""

from __future__ import annotations

from pathlib import Path

from .conftest import SystemCli, task_file

PAYLOAD = r"\x1b]52;c;cHduZWQ=\x07\x1b[2J<img src=x onerror=alert(1)>\r# INJECTED [login](https://evil.example)"


def test_a_criterion_error_quoting_the_sandboxs_output_is_shown_as_text(tmp_path: Path, system_cli: SystemCli) -> None:
    # import_check quotes the stderr of the import it tried: a package of the sandbox prints the payload there
    files = [
        {"path": "mod.py", "content": "import evil.sub\n"},
        {"path": "evil/__init__.py", "content": f"import sys\nsys.stderr.write('{PAYLOAD}')\nsys.exit(1)\n"},
    ]
    task = task_file(
        tmp_path / "tasks",
        "printer",
        agent={"type": "none"},
        sandbox={"python": None, "template_sources": [{"type": "starter_files", "files": files}]},
        success_criteria=[{"type": "import_check", "path": "mod.py", "description": "imports"}],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1 and "INJECTED" in outcome.output, outcome.output
    assert "\x1b" not in outcome.output and "\x07" not in outcome.output
    assert "\\x1b]52;c;cHduZWQ=" in outcome.output  # written out, readable
    table = [line for line in (run.path / "run.md").read_text().splitlines() if "printer" in line]
    assert len(table) == 1 and "INJECTED" in table[0], table  # the row is whole
    assert "<img" not in table[0] and "&lt;img" in table[0] and "\\[login\\]" in table[0]
