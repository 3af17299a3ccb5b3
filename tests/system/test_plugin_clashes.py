"""Installed packages that name what another already has, through the installed CLI.

Beside the echo plugin (tests/support/agent_plugin, installed by
test_agent_plugin's fixture) a second package is laid out as an installer
leaves it (its modules and its dist-info metadata) in a folder of its own on
PYTHONPATH. A name taken is used once, by the built-in or the first package,
and the other is left out with one warning line on stderr.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import criterion, write, write_task
from .conftest import SystemCli
from .test_agent_plugin import GROUP, echo_task, plugin_path  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow
CRITERIA_GROUP = "coder_eval_dagster.criteria"

IMPOSTOR_CHECKS = """
    from typing import Literal

    from coder_eval_dagster.core.criteria import CriterionBase, Outcome, checks


    class FileExistsAgain(CriterionBase):
        type: Literal["file_exists"]
        path: str


    @checks(FileExistsAgain)
    def check(criterion, ctx):
        return Outcome(1.0, {"impostor": True})


    class EchoSaysAgain(CriterionBase):
        type: Literal["echo_says"]
        text: str


    @checks(EchoSaysAgain)
    def echo_says(criterion, ctx):
        return Outcome(1.0, {"impostor": True})
"""


def package(site: Path, name: str, entry_points: str, modules: dict[str, str]) -> Path:
    """``site`` holding the package ``name`` as installed: its modules, and its metadata declaring ``entry_points``
    (the text of an entry_points.txt)."""
    info = site / f"{name.replace('-', '_')}-0.1.0.dist-info"
    write(info / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    write(info / "entry_points.txt", entry_points)
    for path, text in modules.items():
        write(site / path, text)
    return site


def impostor(site: Path) -> Path:
    """A package whose criteria module registers file_exists (a built-in's) and echo_says (the echo plugin's)."""
    return package(
        site,
        "impostor",
        f"[{CRITERIA_GROUP}]\nimpostor = impostor_checks\n",
        {"impostor_checks.py": IMPOSTOR_CHECKS},
    )


def warnings_of(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("coder-eval: left out")]


def test_a_package_cannot_replace_a_built_in_or_an_earlier_packages_criterion(
    tmp_path: Path,
    system_cli: SystemCli,
    plugin_path: Path,  # noqa: F811 (the fixture)
) -> None:
    env = {"PYTHONPATH": f"{plugin_path}:{impostor(tmp_path / 'site')}"}
    task = {
        "task_id": "clash",
        "description": "a file never written, and no echo.txt",
        "agent": {"type": "none"},
        "sandbox": {"python": None},
        "success_criteria": [criterion("file_exists", path="never.txt"), criterion("echo_says", text="hi")],
    }
    outcome, run = system_cli.run(write_task(tmp_path / "tasks", task), env=env)
    result = run.result("clash")
    assert result["final_status"] == "FAILURE", outcome.output
    assert [(c["criterion_type"], c["score"]) for c in result["success_criteria_results"]] == [
        ("file_exists", 0.0),
        ("echo_says", 0.0),
    ]
    assert "impostor" not in str(result["success_criteria_results"])
    assert warnings_of(outcome.err) == [
        "coder-eval: left out criterion type file_exists of impostor_checks: the built-in"
        " coder_eval_dagster.core.criteria.file_exists has it",
        "coder-eval: left out criterion type echo_says of impostor_checks: echo_plugin.checks has it",
    ], outcome.err


def test_a_name_two_packages_declare_is_the_first_ones_with_a_warning_naming_both(
    tmp_path: Path,
    system_cli: SystemCli,
    plugin_path: Path,  # noqa: F811 (the fixture)
) -> None:
    """The echo plugin comes first on PYTHONPATH: its agent type and criteria module are used, the twin's left out."""
    twin = package(
        tmp_path / "site",
        "echo-twin",
        f"[{GROUP}]\necho = echo_twin:Agent\n\n[{CRITERIA_GROUP}]\necho = echo_twin\n",
        {"echo_twin.py": "raise RuntimeError('the twin is never imported')\n"},
    )
    env = {"PYTHONPATH": f"{plugin_path}:{twin}"}
    listed = system_cli("agents", "list", env=env)
    assert listed.code == 0 and f"echo\t{GROUP}: echo_plugin.agent:EchoAgent" in listed.out, listed.output
    assert warnings_of(listed.err) == [
        f"coder-eval: left out echo = echo_twin:Agent of echo-twin 0.1.0 ({GROUP}):"
        " echo = echo_plugin.agent:EchoAgent of coder-eval-echo-plugin 0.1.0 has the name and is used",
        f"coder-eval: left out echo = echo_twin of echo-twin 0.1.0 ({CRITERIA_GROUP}):"
        " echo = echo_plugin.checks of coder-eval-echo-plugin 0.1.0 has the name and is used",
    ], listed.err

    outcome, run = system_cli.run(echo_task(tmp_path / "tasks"), env=env)
    assert run.result("echo")["final_status"] == "SUCCESS", outcome.output
    assert len(warnings_of(outcome.err)) == 2, outcome.err  # once each, however often the names are read
