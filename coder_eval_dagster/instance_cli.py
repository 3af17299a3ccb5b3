"""`coder-eval instance init [HOME]`: coder-eval's dagster.yaml in a Dagster home before its services start;
`coder-eval instance unpack [HOME]`: the home's event bodies as text, for Dagster's own SQLite storage.

The coder-eval commands write it into a home that has none on first use, but
`dagster-daemon run` and `dagster-webserver` only read one: started first on
an empty home, they run on Dagster's stock defaults (docs/operations.md).
The repository's top-level dagster.yaml is the same file for the CLI's
default home, ``.dagster`` (a test keeps it equal to ``storage.INSTANCE_YAML``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypeVar

REPOSITORY_HOME = ".dagster"  # the home the top-level dagster.yaml is written for (relative to the repository)


def _home(args: argparse.Namespace) -> Path:
    """The HOME argument, else $DAGSTER_HOME, else ./.dagster."""
    from .launch import local_home

    return args.home.resolve() if args.home else local_home()


STORAGES = ("run_storage", "event_log_storage", "schedule_storage")


def storage_elsewhere(home: Path) -> Path | None:
    """A storage folder ``home``'s dagster.yaml names outside ``home``, if any (relative paths are Dagster's: from
    the current folder). Dagster's config cannot name a folder under the home (``{env: DAGSTER_HOME}`` is the home
    itself), so the file coder-eval writes holds absolute paths: a home copied or moved uses the original's."""
    import yaml

    config = yaml.safe_load((home / "dagster.yaml").read_text(encoding="utf-8"))
    if not isinstance(config, dict):
        return None
    sections = [_mapping(_mapping(config.get(name)).get("config")) for name in STORAGES]
    sections.append(_mapping(_mapping(config.get("storage")).get("sqlite")))
    bases = [section.get("base_dir") for section in sections]
    folders = [Path(base).resolve() for base in bases if isinstance(base, str)]
    return next((folder for folder in folders if not folder.is_relative_to(home.resolve())), None)


def _mapping(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def warn_storage_elsewhere(home: Path) -> None:
    """One line when the instance the commands open is not the home's own (``storage_elsewhere``)."""
    elsewhere = storage_elsewhere(home)
    if elsewhere is not None:
        print(
            f"warning: {home / 'dagster.yaml'} stores the instance in {elsewhere}, outside {home} (a copied or "
            "moved home?): the commands use that instance; move the file aside, then `coder-eval instance init` "
            "writes its own",
            file=sys.stderr,
        )


def cmd_instance_init(args: argparse.Namespace) -> int:
    from .launch import write_instance_defaults

    home = _home(args)
    written = write_instance_defaults(home)
    print(f"{'wrote' if written else 'kept, already there'}: {home / 'dagster.yaml'}")
    return 0


def cmd_instance_unpack(args: argparse.Namespace) -> int:
    from .event_bodies import unpack_home

    home = _home(args)
    print(f"unpacked {unpack_home(home)} event bodies in {home}: Dagster's own SQLite event storage reads them now")
    return 0


Parser = TypeVar("Parser", bound=argparse.ArgumentParser)  # the CLI's own parser class


def add_commands(subparsers: argparse._SubParsersAction[Parser]) -> None:
    instance = subparsers.add_parser("instance", help="the Dagster instance coder-eval and the services share")
    commands = instance.add_subparsers(dest="instance_command", required=True)
    init = commands.add_parser(
        "init", help="write coder-eval's dagster.yaml (and empty databases) into HOME unless it has a dagster.yaml"
    )
    init.add_argument("home", nargs="?", type=Path, help="the Dagster home (default: $DAGSTER_HOME, else ./.dagster)")
    init.set_defaults(handler=cmd_instance_init)
    unpack = commands.add_parser(
        "unpack", help="rewrite HOME's packed event bodies as text, before pointing it at Dagster's own SQLite storage"
    )
    unpack.add_argument("home", nargs="?", type=Path, help="the Dagster home (default: $DAGSTER_HOME, else ./.dagster)")
    unpack.set_defaults(handler=cmd_instance_unpack)
