"""The harness's own folders on the host, each spelled once: the Dagster home and its user's home.

The CLI opens its instance in the Dagster home (``launch.local_home``) and
checks it before a run (``preflight``); commands never see either folder
(``sandbox/holder.harness_places``), and no template or reference copy takes
them in. Stdlib only: the sandbox's modules import it.
"""

from __future__ import annotations

import os
from pathlib import Path

# The Dagster home when DAGSTER_HOME is unset, relative to where the command runs (the repository's top-level
# dagster.yaml is written for it).
DEFAULT_DAGSTER_HOME = ".dagster"


def dagster_home() -> Path:
    """``$DAGSTER_HOME`` when set, else ``./.dagster``: the one instance the CLI and `coder-eval dev` share.

    As given (a message names it so); ``.resolve()`` it to compare it with real paths."""
    return Path(os.environ.get("DAGSTER_HOME") or DEFAULT_DAGSTER_HOME)


def user_home() -> Path:
    """The harness user's home, its real path."""
    return Path(os.path.realpath(os.path.expanduser("~")))
