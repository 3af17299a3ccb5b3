"""`coder-eval export RUN_DIR --format atif [--out DIR]`: each evaluation's trajectory in an interchange format."""

from __future__ import annotations

import argparse
import sys
from typing import TypeVar

from . import exit_codes
from .cli_options import given_path

FORMATS = ("atif",)  # Harbor's Agent Trajectory Interchange Format (core/atif.py)


def cmd_export(args: argparse.Namespace) -> int:
    from .core.layout import ATIF_FILE, is_run_folder
    from .core.run_export import export_atif

    if not is_run_folder(args.run_dir):
        print(f"coder-eval export: {args.run_dir} is not a run folder (no run_plan.json)", file=sys.stderr)
        return exit_codes.USAGE
    export = export_atif(args.run_dir, args.out)
    where = args.out or args.run_dir
    agentless = f"; {export.without_agent} evaluation(s) without agent turns have none" if export.without_agent else ""
    print(f"wrote {len(export.written)} ATIF trajectories ({ATIF_FILE}) under {where}{agentless}")
    return exit_codes.OK


Parser = TypeVar("Parser", bound=argparse.ArgumentParser)  # the CLI's own parser class


def add_commands(subparsers: argparse._SubParsersAction[Parser]) -> None:
    export = subparsers.add_parser("export", help="write each evaluation's trajectory in an interchange format")
    export.add_argument("run_dir", type=given_path, help="a run folder")
    export.add_argument("--format", choices=FORMATS, required=True, help="atif: Harbor's ATIF-v1.7 JSON")
    export.add_argument(
        "--out",
        type=given_path,
        metavar="DIR",
        help="write under DIR as <variant>/<task_id>/<NN>/trajectory.atif.json (default: in the run folder, "
        "beside each task.json)",
    )
    export.set_defaults(handler=cmd_export)
