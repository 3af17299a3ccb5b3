"""`coder-eval instance init [HOME]`: coder-eval's dagster.yaml in a Dagster home before its services start;
`coder-eval instance unpack [HOME]`: the home's event bodies as text, for Dagster's own SQLite storage.

The coder-eval commands write it into a home that has none on first use, but
`dagster-daemon run` and `dagster-webserver` only read one: started first on
an empty home, they run on Dagster's stock defaults (docs/operations.md).
The repository's top-level dagster.yaml is the same file for the CLI's
default home, ``.dagster`` (``places.DEFAULT_DAGSTER_HOME``; a test keeps it
equal to ``storage.INSTANCE_YAML``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypeVar

from . import exit_codes
from .cli_options import folder_problem, given_path


def _home(args: argparse.Namespace) -> Path:
    """The HOME argument, else $DAGSTER_HOME, else ./.dagster."""
    from .launch import local_home

    return args.home.resolve() if args.home else local_home()


def cmd_instance_init(args: argparse.Namespace) -> int:
    from .launch import write_instance_defaults

    home = _home(args)
    if home.exists() and not home.is_dir():
        print(f"coder-eval instance init: {home} is not a folder (a Dagster home is one)", file=sys.stderr)
        return exit_codes.USAGE
    written = write_instance_defaults(home)
    print(f"{'wrote' if written else 'kept, already there'}: {home / 'dagster.yaml'}")
    return 0


def cmd_instance_unpack(args: argparse.Namespace) -> int:
    from .event_bodies import unpack_home

    home = _home(args)
    if what := folder_problem(home):
        print(f"coder-eval instance unpack: {home}: {what} (the Dagster home to unpack)", file=sys.stderr)
        return exit_codes.USAGE
    print(f"unpacked {unpack_home(home)} event bodies in {home}: Dagster's own SQLite event storage reads them now")
    return 0


Parser = TypeVar("Parser", bound=argparse.ArgumentParser)  # the CLI's own parser class


def add_commands(subparsers: argparse._SubParsersAction[Parser]) -> None:
    instance = subparsers.add_parser("instance", help="the Dagster instance coder-eval and the services share")
    commands = instance.add_subparsers(dest="instance_command", required=True)
    init = commands.add_parser(
        "init", help="write coder-eval's dagster.yaml (and empty databases) into HOME unless it has a dagster.yaml"
    )
    init.add_argument(
        "home", nargs="?", type=given_path, help="the Dagster home (default: $DAGSTER_HOME, else ./.dagster)"
    )
    init.set_defaults(handler=cmd_instance_init)
    unpack = commands.add_parser(
        "unpack", help="rewrite HOME's packed event bodies as text, before pointing it at Dagster's own SQLite storage"
    )
    unpack.add_argument(
        "home", nargs="?", type=given_path, help="the Dagster home (default: $DAGSTER_HOME, else ./.dagster)"
    )
    unpack.set_defaults(handler=cmd_instance_unpack)
