"""`coder-eval compare` and `coder-eval history`: the argparse wiring over core/compare."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from . import exit_codes
from .cli_options import MAX_DAYS, given, given_path
from .core.files import real_path
from .core.layout import COMPARISON_PAGE, HISTORY_PAGE, comparison_against, is_special_file

FORMATS = ("table", "md", "json", "html")


Parser = TypeVar("Parser", bound=argparse.ArgumentParser)  # the CLI's own parser class


def add_commands(subparsers: argparse._SubParsersAction[Parser]) -> None:
    """Add `compare` and `history` to the `coder-eval` parser."""
    compare = subparsers.add_parser(
        "compare", help="paired statistics: every variant against a baseline, or two runs row by row"
    )
    compare.add_argument("run_dir", type=given_path, help="a run folder")
    compare.add_argument(
        "other_run_dir", type=given_path, nargs="?", help="a later run folder to compare with the first"
    )
    compare.add_argument(
        "--baseline",
        type=given,
        metavar="VARIANT",
        help="one run: the variant the others are compared with (default: the experiment's first); "
        "two runs: compare this variant only (default: every variant both ran; one run's own are named as left out)",
    )
    _output_arguments(compare)
    compare.set_defaults(handler=cmd_compare)
    history = subparsers.add_parser("history", help="pass rate per day, failing criteria and flaky rows across runs")
    history.add_argument("runs_dir", type=given_path, help="the runs folder (with its tables/)")
    history.add_argument("--days", type=_positive, metavar="N", help="only the last N days (today included)")
    history.add_argument("--task", type=given, metavar="GLOB", help="only row-tasks whose task_id matches GLOB")
    _output_arguments(history)
    history.set_defaults(handler=cmd_history)


def _positive(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"a whole number of days from 1 to {MAX_DAYS} (got {text!r})")
    return int(text)


def _output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    parser.add_argument("-o", "--output", type=given_path, metavar="FILE", help="write to FILE (html: PNGs beside it)")


def _guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A comparison that cannot be made is a one-line usage error, never a traceback."""

    def run(args: argparse.Namespace) -> int:
        from .core.compare.rows import CompareError

        try:
            return command(args)
        except CompareError as exc:
            print(f"coder-eval {args.command}: {exc}", file=sys.stderr)
            return exit_codes.USAGE

    return run


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
    else:
        from .core.layout import write_output

        write_output(output, text)


@_guarded
def cmd_compare(args: argparse.Namespace) -> int:
    from .core.compare.analysis import compare_runs, compare_variants
    from .core.compare.comparison_files import write_comparison_page
    from .core.compare.render import render_json, render_markdown, render_table
    from .core.compare.rows import read_run_rows

    for run_dir in (args.run_dir, args.other_run_dir):
        _refuse_unfinished(run_dir)
    page = _html_page(args.output) or _default_page(args.run_dir, args.other_run_dir) if args.format == "html" else None
    first = read_run_rows(args.run_dir)
    if args.other_run_dir is None:
        comparison = compare_variants(first, args.baseline)
    else:
        comparison = compare_runs(first, read_run_rows(args.other_run_dir), args.baseline)
    if page is not None:
        print(write_comparison_page(comparison, page)[0])
        return exit_codes.OK
    folder = real_path(args.output).parent if args.output else None  # where its relative links start
    renderers = {
        "table": lambda: render_table(comparison),
        "md": lambda: render_markdown(comparison, folder),
        "json": lambda: render_json(comparison),
    }
    _emit(renderers[args.format](), args.output)
    return exit_codes.OK


def _html_page(output: Path | None) -> Path | None:
    """-o FILE of an HTML page, which writes its figures beside it: a file, not a device or a pipe."""
    from .core.compare.rows import CompareError

    if output is not None and (is_special_file(output) or output.is_dir()):
        raise CompareError(f"{output}: an HTML page writes its figures (PNG files) beside it; give a file")
    return output


def _refuse_unfinished(run_dir: Path | None) -> None:
    """A run cut short (killed, interrupted) before its summary, as `report` refuses it: its comparison would read
    as the run's result over the evaluations that happened to finish."""
    from .cli_run import rescore_cut_short, unfinished_problem
    from .core.compare.rows import CompareError
    from .core.layout import RUN_FILE

    if run_dir is None or not run_dir.is_dir():
        return
    why = rescore_cut_short(run_dir) if (run_dir / RUN_FILE).is_file() else unfinished_problem(run_dir)
    if why:
        raise CompareError(why)


def _default_page(run_dir: Path, other_run_dir: Path | None) -> Path:
    """Without -o, the page goes into the (later) run's folder, when that folder is still there: written into a
    pruned run's place, it would make a folder that looks like a run and that no prune removes."""
    from .core.compare.rows import CompareError

    folder = run_dir if other_run_dir is None else other_run_dir
    if not folder.is_dir():
        raise CompareError(f"{folder} is not there (pruned?) to hold the page: give -o FILE")
    return folder / (COMPARISON_PAGE if other_run_dir is None else comparison_against(run_dir.resolve().name))


@_guarded
def cmd_history(args: argparse.Namespace) -> int:
    import json

    from .core.compare.comparison_files import write_page
    from .core.compare.figures import pass_rate_over_time_figure
    from .core.compare.history import history, history_blocks, pass_rate_series
    from .core.compare.render import html_of, markdown_of, text_of

    result = history(args.runs_dir, args.days, args.task)
    if args.format == "html":
        page = _html_page(args.output) or args.runs_dir / HISTORY_PAGE
        drawings = [pass_rate_over_time_figure(pass_rate_series(result))]
        print(write_page(page, html_of(history_blocks(result), drawings, real_path(page).parent), drawings)[0])
        return exit_codes.OK
    renderers = {
        "table": lambda: text_of(history_blocks(result)),
        "md": lambda: markdown_of(history_blocks(result)),
        "json": lambda: json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n",
    }
    _emit(renderers[args.format](), args.output)
    return exit_codes.OK
