"""`coder-eval deploy build-image`: the code image a Dagster deployment runs (docs/deploy.md)."""

from __future__ import annotations

import argparse
from typing import TypeVar

from .code_image import DEFAULT_TAG, build_code_image
from .core.sandbox.image import DEBIAN_LOCAL
from .sandbox_cli import image_build_handler

cmd_deploy_build_image = image_build_handler("deploy build-image", lambda a: build_code_image(a.tag, a.base, a.force))


Parser = TypeVar("Parser", bound=argparse.ArgumentParser)  # the CLI's own parser class


def add_commands(subparsers: argparse._SubParsersAction[Parser]) -> None:
    deploy = subparsers.add_parser("deploy", help="the code image of a Dagster deployment")
    commands = deploy.add_subparsers(dest="deploy_command", required=True)
    building = commands.add_parser(
        "build-image", help="build the code image offline (skipped when the project is unchanged)"
    )
    building.add_argument(
        "--base",
        default=DEBIAN_LOCAL,
        help=f"base image with python3.11 and python3-venv (default {DEBIAN_LOCAL}: made offline with debootstrap "
        "from the host's Debian mirror)",
    )
    building.add_argument("--tag", default=DEFAULT_TAG, help=f"image name (default {DEFAULT_TAG})")
    building.add_argument("--force", action="store_true", help="build even when the inputs are unchanged")
    building.set_defaults(handler=cmd_deploy_build_image)
