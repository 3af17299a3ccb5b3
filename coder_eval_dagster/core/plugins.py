"""What installed packages add to coder-eval: agent types, criteria and price sources, through entry points.

A package declares them in its metadata (``pyproject.toml``)::

    [project.entry-points."coder_eval_dagster.agents"]
    my-agent = "my_package.agent"        # agent type `my-agent`: a module (or class) with `async def run`

    [project.entry-points."coder_eval_dagster.criteria"]
    my-checks = "my_package.checks"      # a module whose import registers criteria with `@checks`

    [project.entry-points."coder_eval_dagster.prices"]
    my-prices = "my_package.prices"      # a module whose import registers a price source

The installed distributions are read once per process (about 20 ms). An
agent type is only named at start-up and imported when a task runs it; the
criteria and price modules are imported at start-up (a task's criteria are
validated against them). A module that fails to import is reported on stderr
and left out: one broken package does not stop the harness, and a task
using what it would have added is refused naming the type.
"""

from __future__ import annotations

import functools
import logging
from importlib.metadata import EntryPoint, distributions

AGENTS_GROUP = "coder_eval_dagster.agents"
CRITERIA_GROUP = "coder_eval_dagster.criteria"
PRICES_GROUP = "coder_eval_dagster.prices"

log = logging.getLogger(__name__)


@functools.cache
def _every_entry_point() -> tuple[EntryPoint, ...]:
    """Every entry point of the installed distributions (in path order): their metadata read once, for all groups."""
    return tuple(entry for distribution in distributions() for entry in distribution.entry_points)


def installed(group: str) -> tuple[EntryPoint, ...]:
    """The group's entry points, by name (the first of a duplicated name wins)."""
    found: dict[str, EntryPoint] = {}
    for entry in _every_entry_point():
        if entry.group == group:
            found.setdefault(entry.name, entry)
    return tuple(found[name] for name in sorted(found))


def import_modules(group: str) -> None:
    """Import every module the group names (their import registers what they add)."""
    for entry in installed(group):
        try:
            entry.load()
        except Exception as exc:  # a broken package is left out, never the harness stopped
            log.warning(
                "coder-eval: left out %s = %s (%s): %s: %s", entry.name, entry.value, group, type(exc).__name__, exc
            )
