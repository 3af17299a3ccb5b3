"""`coder-eval report RUN_DIR [--rebuild] [-f md|html|junit] [-o FILE]`: a run's reports again, as coder_eval's verb.

``-f md`` (the default) renders run.md's text from run.json and prints it
(``-o``: writes it there instead), leaving the run folder as it is; ``-f html`` renders every task.html from its
task.json, and the run viewer (index.html) over them; ``-f junit`` writes the JUnit file (``<RUN_DIR>/junit.xml`` or
``-o``). ``--rebuild`` rewrites run.json, run.md, experiment.json and the
variant and suite files from the run's task.json files, keeping the run's
window and width (its end, with no run.json, the last evaluation's).

A run folder coder_eval wrote reads too: its run.json and task.json files
(``models/``), its suite gates from its suite.json files; ``--rebuild``
rewrites its run.json and run.md only, as coder_eval's own does (its
suite.json files cannot be recomputed from the task.json files alone).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from . import exit_codes
from .cli_options import given_path
from .core.layout import (
    JUNIT_FILE,
    REPORT_FILE,
    RESULT_FILE,
    RUN_FILE,
    RUN_MD,
    RUN_VIEWER,
    SUITE_FILE,
    experiment_named,
    load_result,
    load_summary,
    read_record,
    run_results,
    write_atomically,
    write_output,
)
from .core.models.report import RunSummary, SuiteRollup, TaskRow, last_end
from .core.models.results import instant
from .core.problems import InvalidInput

FORMATS = ("md", "html", "junit")


def add_commands(subparsers: Any) -> None:
    report = subparsers.add_parser("report", help="render a run's reports again (--rebuild: run.json from task.json)")
    report.add_argument("run_dir", type=given_path, metavar="RUN_DIR")
    report.add_argument("-f", "--format", choices=FORMATS, default=None, help="md (default), html or junit")
    report.add_argument(
        "-o",
        "--output",
        type=given_path,
        metavar="FILE",
        help="write the md or junit report here (html: the report of a run of one evaluation)",
    )
    report.add_argument(
        "--rebuild", action="store_true", help="rewrite run.json and the other report files from the task.json files"
    )
    report.set_defaults(handler=cmd_report)
    aggregate = subparsers.add_parser(
        "aggregate", help="coder_eval's later spelling of report RUN_DIR --rebuild: run.json from the task.json files"
    )
    aggregate.add_argument("run_dir", type=given_path, metavar="RUN_DIR")
    aggregate.add_argument(
        "-o", "--output", type=given_path, metavar="DIR", help="the run folder itself (the files are the run's)"
    )
    aggregate.set_defaults(handler=cmd_aggregate)


def _fail(message: str, verb: str = "report") -> int:
    print(f"coder-eval {verb}: {message}", file=sys.stderr)
    return exit_codes.USAGE


def cmd_report(args: argparse.Namespace) -> int:
    run_dir: Path = args.run_dir
    if not run_dir.is_dir():
        return _fail(f"{run_dir}: no such run folder")
    from .core.compare.rows import not_one_run

    if args.format == "html" and args.output is not None and (run_dir / RESULT_FILE).is_file():
        return render_one_html(run_dir, args.output)  # an evaluation's folder: its report, as coder_eval writes it
    if why := not_one_run(run_dir):  # a runs folder's runs read as one, or run.json written into a variant's folder
        return _fail(why)
    if args.rebuild:
        if args.format or args.output:
            return _fail("--rebuild rewrites the run's files: it takes no -f or -o")
        return rebuild(run_dir)
    if args.format == "html":
        return render_html(run_dir) if args.output is None else render_one_html(run_dir, args.output)
    if not (run_dir / RUN_FILE).is_file():
        return _fail(_no_summary(run_dir))
    if args.format == "junit":
        return render_junit(run_dir, args.output or run_dir / JUNIT_FILE)
    return render_md(run_dir, args.output)


def cmd_aggregate(args: argparse.Namespace) -> int:
    """coder_eval's ``aggregate RUN [-o DIR]`` (after 0.12.16): ``report RUN --rebuild``, with its checks (a runs
    folder is no run), whose files stay in the run folder."""
    run_dir: Path = args.run_dir
    if args.output is not None and args.output.resolve() != run_dir.resolve():
        return _fail("run.json is written into the run folder itself: -o takes that folder only", "aggregate")
    return cmd_report(argparse.Namespace(run_dir=run_dir, format=None, output=None, rebuild=True))


def _no_summary(run_dir: Path) -> str:
    """A run folder without run.json: ``--rebuild`` writes it when every evaluation finished, else the run is to be
    finished first (a rebuild then refuses)."""
    from .cli_run import unfinished_problem

    why = unfinished_problem(run_dir)
    if why:
        return f"no {RUN_FILE}: {why}"
    if not run_results(run_dir):  # a launched run that failed before its first evaluation (a step refused)
        return f"{run_dir}: no {RUN_FILE}, and no evaluation of the run finished: nothing to report"
    return f"{run_dir}: no {RUN_FILE} (coder-eval report {run_dir} --rebuild writes it from the task.json files)"


def rebuild(run_dir: Path) -> int:
    from .cli_run import incomplete, rescore_cut_short, unfinished
    from .core.layout import TABLES_DIR, is_run_folder
    from .core.run_lock import in_use
    from .core.runs import load_run, summarize

    if not is_run_folder(run_dir):  # no plan: a folder coder_eval wrote
        return rebuild_from_results(run_dir)
    cut_short = rescore_cut_short(run_dir)
    if cut_short:
        return _fail(cut_short)
    run = load_run(run_dir)
    missing = unfinished(run)
    if missing and in_use(run_dir):  # its resume would be refused: it is going
        return _fail(f"{run_dir} is still being run by another process ({len(missing)} evaluation(s) to go)")
    if missing:  # a verdict over the evaluations that happened to finish would pass a run that never ended
        return _fail(incomplete(run, missing))
    results = run_results(run_dir)
    if not results:
        return _fail(f"no finalized task.json files found under {run_dir}")
    earlier = _earlier_summary(run_dir)
    summary = summarize(  # the run's table rows too: a run stopped before its summary had none
        run,
        run_dir.parent / TABLES_DIR,
        earlier.max_parallel if earlier else 1,
        written=results.get,
        end_time=earlier.end_time if earlier else last_end(results.values()),
    )
    _aggregated(run_dir, summary.report)
    return exit_codes.OK


def _earlier_summary(run_dir: Path) -> RunSummary | None:
    """The run.json a rebuild replaces: rebuilding is the way to mend a damaged one, so its values are kept only
    when they can be read."""
    try:
        return load_summary(run_dir) if (run_dir / RUN_FILE).is_file() else None
    except InvalidInput:
        return None


def _aggregated(run_dir: Path, report: RunSummary) -> None:
    print(
        f"[OK] Aggregated {report.tasks_run} task(s) ({report.tasks_succeeded} ok / {report.tasks_failed} fail / "
        f"{report.tasks_error} err) → {run_dir / RUN_FILE}"
    )


def rebuild_from_results(run_dir: Path) -> int:
    """run.json and run.md of a run folder coder_eval wrote, from its task.json files: its earlier run.json's window,
    width and skipped tasks kept (else the evaluations' first start and last end), judged with its suite gates."""
    from .core.reports.files import environment_info, write_json
    from .core.reports.run_summary import render_run_md
    from .core.version import framework_version

    results = list(run_results(run_dir).values())
    if not results:
        return _fail(f"no finalized task.json files found under {run_dir}")
    earlier = _earlier_summary(run_dir)
    rows = [TaskRow.of(r) for r in sorted(results, key=lambda r: (r.variant_id, r.task_id, r.replicate))]
    report = RunSummary(
        run_id=run_dir.resolve().name,
        start_time=earlier.start_time if earlier else min((r.started_at for r in results), key=instant),
        end_time=earlier.end_time if earlier else last_end(results),
        skipped_tasks=earlier.skipped_tasks if earlier else [],
        max_parallel=earlier.max_parallel if earlier else 1,
        task_results=rows,
        framework_version=framework_version(),
        environment_info=environment_info(),
        experiment=earlier.experiment if earlier else experiment_named(run_dir),
        variants=list(dict.fromkeys([*(earlier.variants if earlier else []), *(row.variant_id for row in rows)])),
        passed=all(result.success for result in results),
    ).judged_with(suite_gates(run_dir))
    write_atomically(run_dir / RUN_MD, render_run_md(report, _viewer_of(run_dir)))
    write_json(run_dir / RUN_FILE, report)
    _aggregated(run_dir, report)
    return exit_codes.OK


def suite_gates(run_dir: Path) -> list[dict[str, Any]]:
    """The suite thresholds of the run's ``<variant>/<suite_id>/suite.json`` files, as run.json ``suite`` entries."""
    paths = sorted(run_dir.glob(f"*/*/{SUITE_FILE}"))
    return [entry for path in paths for entry in read_record(path, SuiteRollup).gates()]


def read_summary(run_dir: Path) -> RunSummary:
    """The run's run.json; coder_eval's records no suite gates: those of its suite.json files are taken in."""
    summary = load_summary(run_dir)
    return summary if summary.suite else summary.judged_with(suite_gates(run_dir))


def _viewer_of(run_dir: Path) -> str | None:
    """The run viewer's link, relative to the run folder as every link of run.md, when the run has one (a folder
    coder_eval wrote has none)."""
    return RUN_VIEWER if (run_dir / RUN_VIEWER).is_file() else None


def render_md(run_dir: Path, output: Path | None) -> int:
    from .core.reports.run_summary import render_run_md

    # the run folder is only read: it may be another user's, or an artifact
    text = render_run_md(read_summary(run_dir), _viewer_of(run_dir))
    if output is None:
        sys.stdout.write(text)
    else:
        write_output(output, text)
        print(f"[OK] Markdown report written to {output}")
    return exit_codes.OK


def render_html(run_dir: Path) -> int:
    """Every task.html, then the run viewer over them (its variants in run.json's order, when there is one)."""
    from .core.reports.run_viewer import write_run_viewer
    from .core.reports.task_html import render_task_html

    found = run_results(run_dir)
    if not found:
        return _fail(f"no task.json files found under {run_dir}")
    for path, result in found.items():
        write_atomically(path.parent / REPORT_FILE, render_task_html(result, path.parent))
    results = list(found.values())
    summary = read_summary(run_dir) if (run_dir / RUN_FILE).is_file() else None  # coder_eval's: its suite gates in
    variants = list(dict.fromkeys([*(summary.variants if summary else []), *(result.variant_id for result in results)]))
    viewer = write_run_viewer(run_dir, results, variants, summary)
    print(f"[OK] Rendered {len(results)} {REPORT_FILE} file(s) under {run_dir}, and the run viewer {viewer}")
    return exit_codes.OK


def render_one_html(run_dir: Path, output: Path) -> int:
    """The one evaluation's report at ``output`` (``run_dir`` an evaluation's folder, or a run of one), as coder_eval
    writes ``-f html -o FILE`` when exactly one task is found; each task.html stays where it is."""
    from .core.reports.task_html import render_task_html

    one = run_dir / RESULT_FILE
    found = {one: load_result(one)} if one.is_file() else run_results(run_dir)
    if len(found) != 1:
        return _fail(f"-f html -o FILE writes the report of a run of one evaluation; {run_dir} has {len(found)}")
    (path, result) = next(iter(found.items()))
    output.parent.mkdir(parents=True, exist_ok=True)
    write_output(output, render_task_html(result, path.parent))
    print(f"[OK] Wrote {output}")
    return exit_codes.OK


def render_junit(run_dir: Path, output: Path) -> int:
    from .core.reports.junit import write_junit

    write_junit(read_summary(run_dir), output)
    print(f"[OK] JUnit report written to {output}")
    return exit_codes.OK
