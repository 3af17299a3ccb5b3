"""A file the user names (`-o`, `--junit`) written through a link to it, as coder_eval writes it: the link was
replaced by a regular file, and `report -f junit -o /dev/stdout` run as root turned the machine's /dev/stdout
into a file."""

from __future__ import annotations

import os

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_outputs_named_by_a_link_are_written_to_what_it_points_at(system_cli: SystemCli) -> None:
    folder = system_cli.folder
    task = task_file(folder / "tasks", "plain", agent={"type": "none"})
    junit_link, junit_file = folder / "junit.lnk", folder / "reports" / "junit.xml"
    junit_file.parent.mkdir()
    os.symlink(junit_file, junit_link)  # to a file not there yet
    outcome, run = system_cli.run(task, "--junit", junit_link, env={})
    assert outcome.code == 0, outcome.output
    assert junit_link.is_symlink() and "<testsuites" in junit_file.read_text()

    stdout_link = folder / "stdout.lnk"
    os.symlink("/proc/self/fd/1", stdout_link)  # the command's own standard output
    shown = system_cli("report", run.path, "-f", "junit", "-o", stdout_link, env={})
    assert shown.code == 0, shown.output
    assert stdout_link.is_symlink() and "<testsuites" in shown.out

    page_link, page = folder / "page.lnk", folder / "compare.md"
    page.write_text("an earlier page\n")
    os.symlink(page, page_link)
    compared = system_cli("compare", run.path, "--format", "md", "-o", page_link, env={})
    assert compared.code == 0, compared.output
    assert page_link.is_symlink() and "default" in page.read_text()

    far = folder / "far" / "away"
    far.mkdir(parents=True)
    os.symlink(far / "cmp.html", folder / "cmp.lnk")
    shown = system_cli("compare", run.path, "--format", "html", "-o", folder / "cmp.lnk", env={})
    assert shown.code == 0 and (far / "cmp.html").is_file(), shown.output
    assert (far / "cmp.success_rate.png").is_file() and not list(folder.glob("*.png"))  # beside the page
    for not_a_file in ("/dev/stdout", far):  # nothing written: the figures went beside a folder, then it failed
        refused = system_cli("compare", run.path, "--format", "html", "-o", not_a_file, env={})
        assert refused.code == 2 and "an HTML page writes its figures (PNG files) beside it" in refused.err
    assert not list(far.parent.glob("away.*.png"))


def test_an_output_to_dev_stdout_redirected_to_a_file_keeps_what_the_command_says_after_it(
    system_cli: SystemCli,
) -> None:
    """`--junit /dev/stdout > run.log`: the log's file replaced by a new one lost the summary printed after it."""
    task = task_file(system_cli.folder / "tasks", "plain", agent={"type": "none"})
    log = system_cli.folder / "run.log"
    with log.open("wb") as stream:
        command = system_cli.start(
            "run", task, "--runs-dir", system_cli.runs, "--junit", "/dev/stdout", env={}, stdout=stream
        )
        assert command.wait(timeout=180) == 0
    said = log.read_text()
    assert said.index("<testsuites") < said.index("PASSED 1 evaluation"), said
