"""What installed packages add to coder-eval: agent types, criteria and price sources, through entry points.

A package declares them in its metadata (``pyproject.toml``)::

    [project.entry-points."coder_eval_dagster.agents"]
    my-agent = "my_package.agent"        # agent type `my-agent`: a module (or class) with `async def run`

    [project.entry-points."coder_eval_dagster.criteria"]
    my-checks = "my_package.checks"      # a module whose import registers criteria with `@checks`

    [project.entry-points."coder_eval_dagster.prices"]
    my-prices = "my_package.prices"      # a module whose import registers a price source

Within a group a name is used once: when two packages declare the same
name, the first in path order (``sys.path``: ``PYTHONPATH`` before the venv)
is used and the other left out, with a warning on stderr naming both. A
package found twice on the path counts once, its first copy (as Python
imports it).

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
import re
from collections.abc import Iterator
from importlib.metadata import Distribution, EntryPoint, distributions

AGENTS_GROUP = "coder_eval_dagster.agents"
CRITERIA_GROUP = "coder_eval_dagster.criteria"
PRICES_GROUP = "coder_eval_dagster.prices"

log = logging.getLogger(__name__)


@functools.cache
def _every_entry_point() -> tuple[EntryPoint, ...]:
    """Every entry point of the installed distributions (in path order): their metadata read once, for all groups."""
    return tuple(entry for distribution in _first_copies() for entry in distribution.entry_points)


def _first_copies() -> Iterator[Distribution]:
    """The installed distributions, each once (an editable install's leftover metadata, a package also installed
    into a folder on PYTHONPATH): a second copy's names are no clash with the first's."""
    seen: set[str] = set()
    for distribution in distributions():
        name = distribution.name  # None where a metadata folder names none (a broken install): no copy of another
        if not name:
            yield distribution
            continue
        key = re.sub(r"[-_.]+", "-", name).lower()  # the normalized name (PEP 503)
        if key not in seen:
            seen.add(key)
            yield distribution


@functools.cache
def installed(group: str) -> tuple[EntryPoint, ...]:
    """The group's entry points, by name: the first of a duplicated name is used, the others warned of once."""
    found: dict[str, EntryPoint] = {}
    for entry in _every_entry_point():
        if entry.group != group:
            continue
        used = found.setdefault(entry.name, entry)
        if used is not entry:
            log.warning("coder-eval: left out %s (%s): %s has the name and is used", _named(entry), group, _named(used))
    return tuple(found[name] for name in sorted(found))


def _named(entry: EntryPoint) -> str:
    """The entry point as its package declares it, and the package."""
    package = f" of {entry.dist.name} {entry.dist.version}" if entry.dist is not None else ""
    return f"{entry.name} = {entry.value}{package}"


def import_modules(group: str) -> None:
    """Import every module the group names (their import registers what they add)."""
    for entry in installed(group):
        try:
            entry.load()
        except Exception as exc:  # a broken package is left out, never the harness stopped
            log.warning(
                "coder-eval: left out %s = %s (%s): %s: %s", entry.name, entry.value, group, type(exc).__name__, exc
            )
