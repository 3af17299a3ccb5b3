"""`coder-eval sandbox build`: the image the docker driver runs evaluations in."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

from .core.sandbox.engine import EngineError, MissingExtraError, default_image
from .core.sandbox.image import DEBIAN_LOCAL, DEFAULT_BASE, build


def image_build_handler(command: str, build_image: Callable[[argparse.Namespace], object]) -> Callable[..., int]:
    """A CLI handler that builds an image; an engine or build failure is one line, exit 1.

    A missing docker extra is one line too, exit 2: the installation is wrong, not the engine.
    """

    def handle(args: argparse.Namespace) -> int:
        try:
            build_image(args)
        except MissingExtraError as exc:
            print(f"coder-eval {command}: {exc}", file=sys.stderr)
            return 2
        except EngineError as exc:
            print(f"coder-eval {command}: {exc}", file=sys.stderr)
            return 1
        return 0

    return handle


cmd_sandbox_build = image_build_handler("sandbox build", lambda a: build(a.tag or default_image(), a.base, a.force))


Parser = TypeVar("Parser", bound=argparse.ArgumentParser)  # the CLI's own parser class


def add_commands(subparsers: argparse._SubParsersAction[Parser]) -> None:
    sandbox = subparsers.add_parser("sandbox", help="the docker driver's sandbox image")
    commands = sandbox.add_subparsers(dest="sandbox_command", required=True)
    building = commands.add_parser("build", help="build the sandbox image (skipped when its inputs are unchanged)")
    building.add_argument(
        "--base",
        default=DEFAULT_BASE,
        help=f"base image (default {DEFAULT_BASE}); {DEBIAN_LOCAL}: made offline with debootstrap from the host's "
        "Debian mirror",
    )
    building.add_argument("--tag", help="image name (default: CODER_EVAL_DOCKER_IMAGE or coder-eval-sandbox:<version>)")
    building.add_argument("--force", action="store_true", help="build even when the inputs are unchanged")
    building.set_defaults(handler=cmd_sandbox_build)
