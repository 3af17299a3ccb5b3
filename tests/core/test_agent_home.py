"""An agent's HOME and the folder of the scripts the harness starts it with (core/agent_cli.py)."""

from __future__ import annotations

import os
import stat

from coder_eval_dagster.core.agent_cli import agent_home, launchers, write_wrapper


def test_the_launch_scripts_live_in_a_private_folder_beside_home_that_nobody_could_make_first() -> None:
    """Beside HOME (the agent writes there) and not at a name another user of /tmp could take first (a folder
    named after the HOME, made with exist_ok, took a link planted to an attacker's folder)."""
    with agent_home("coder-eval-test-") as home:
        root, launch = home.parent, launchers(home)
        assert launch.parent == root and not launch.is_relative_to(home)
        for folder in (root, launch):
            info = os.lstat(folder)
            assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
        wrapper = write_wrapper(home, "/usr/bin/true", ["PATH"], [])
        assert wrapper.parent == launch
    assert not root.exists()
