"""The run viewer (<run_dir>/index.html) and task.html's transcript, in a real headless Chromium.

A synthetic run of 10,000 evaluations (two variants, 5,000 dataset rows,
tests/support/synthetic_runs.py) is opened from file://: its first screen
within 2 s, a page under 5 MB and no 10,000-row document; filters, search and
sorting change the rows and the counts as a reader expects; a link opens
the right task.html and Back restores the view; the pairs view puts the
flipped rows first, flipped as `coder-eval compare` counts them; the
address's #fragment is read whatever it holds, and followed when it changes.
A run whose criteria's descriptions carry each row's question stays under
4 MB and searchable; a partial cost shows as the floor it is. Then a run made
by the installed CLI: its viewer is linked from everywhere a reader looks,
and its task.html shows what each tool returned and what the agent said.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from coder_eval_dagster.core.compare.analysis import Arm, paired_flips
from coder_eval_dagster.core.compare.rows import RunRows, result_records
from coder_eval_dagster.core.models.results import EvaluationResult, TokenUsage, TurnRecord
from coder_eval_dagster.core.reports.run_viewer import write_run_viewer

from ..support.browser import ARTIFACTS, Chromium
from ..support.synthetic_runs import evaluation_result, questioned_results, viewer_results, write_viewer_run
from .conftest import SystemCli, replay_task_file

pytestmark = pytest.mark.slow
EVALUATIONS = 10_000
FIRST_SCREEN_S = 4.0  # (0.3-0.8 s; 1.4 s cold on a loaded machine; a page rendering every row: far more)
MAX_PAGE_BYTES = 5_000_000
MAX_QUESTIONED_BYTES = 4_000_000  # each row's criteria carry its question: 5.6 MB when the page carried them whole
ROWS_SHOWN = "document.querySelectorAll('#grid tbody tr').length"
SHOWN = "Number(document.getElementById('shown').dataset.count)"


@pytest.fixture(scope="module")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[EvaluationResult]]:
    results = viewer_results(EVALUATIONS)
    return write_viewer_run(tmp_path_factory.mktemp("viewer"), results), results


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    with Chromium() as chromium:
        chromium.call("Page.enable")
        yield chromium


def open_page(browser: Chromium, url: str) -> float:
    """Load ``url`` afresh (not a same-page jump to a new #fragment); seconds until its rows are on screen."""
    browser.call("Page.navigate", url="about:blank")
    browser.wait_for("location.href === 'about:blank'", timeout=10, every=0.02)
    browser.call("Page.navigate", url=url)
    # performance.now() counts from the navigation's start: read as soon as the rows are there
    return browser.wait_for(f"{ROWS_SHOWN} > 0 && performance.now()", timeout=30, every=0.02) / 1000


def choose(browser: Chromium, select: str, value: str) -> None:
    """Pick ``value`` in the ``select`` drop-down, as a reader does (its change event)."""
    found = browser.evaluate(
        f"(() => {{ const s = document.getElementById({json.dumps(select)}); s.value = {json.dumps(value)};"
        " s.dispatchEvent(new Event('change')); return s.value; })()"
    )
    assert found == value, f"{select} has no option {value!r}"


def type_search(browser: Chromium, text: str) -> None:
    """Type into the search box with the keyboard (the page waits for a pause in typing)."""
    before = browser.evaluate(SHOWN)
    browser.evaluate("(() => { const q = document.getElementById('q'); q.focus(); q.select(); })()")
    browser.call("Input.insertText", text=text)
    browser.wait_for(f"document.getElementById('q').value === {json.dumps(text)} && {SHOWN} !== {before}", 10, 0.05)


def click_on(browser: Chromium, selector: str) -> None:
    """A real mouse click on the first element matching ``selector`` (scrolled into view)."""
    where = browser.evaluate(
        f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
        " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
        " return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()"
    )
    assert where, f"nothing matches {selector}"
    browser.click(where["x"], where["y"])


def column(browser: Chromium, index: int) -> list[str]:
    """The text of one column over the rows on screen (0: variant, 1: task, 4: status, 5: score)."""
    return browser.evaluate(f"[...document.querySelectorAll('#grid tbody tr')].map(r => r.cells[{index}].innerText)")


def status_counts(browser: Chromium) -> dict[str, int]:
    spans = "[...document.querySelectorAll('#counts [data-status]')]"
    return dict(browser.evaluate(f"{spans}.map(s => [s.dataset.status, Number(s.dataset.count)])"))


def test_first_screen_within_2_s_from_a_page_under_5_mb(big_run: tuple[Path, Any], browser: Chromium) -> None:
    run_dir, results = big_run
    page = run_dir / "index.html"
    seconds = open_page(browser, page.as_uri())
    rows_in_document = browser.evaluate("document.querySelectorAll('tr').length")
    figures = {"evaluations": len(results), "first_screen_s": round(seconds, 3), "page_bytes": page.stat().st_size}
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "run-viewer-figures.json").write_text(json.dumps(figures, indent=2))
    browser.screenshot(ARTIFACTS / "run-viewer-10000.png")
    assert seconds < FIRST_SCREEN_S, figures
    assert figures["page_bytes"] < MAX_PAGE_BYTES, figures
    assert browser.evaluate(ROWS_SHOWN) == 100 and rows_in_document <= 101  # one page, never 10,000 rows
    assert browser.evaluate(SHOWN) == len(results)
    assert status_counts(browser) == dict(Counter(r.final_status for r in results))


def test_filters_and_search_change_the_rows_and_the_counts(big_run: tuple[Path, Any], browser: Chromium) -> None:
    run_dir, results = big_run
    open_page(browser, (run_dir / "index.html").as_uri())

    choose(browser, "status", "!")  # not passed
    failing = [r for r in results if not r.success]
    assert browser.evaluate(SHOWN) == len(failing)
    assert "SUCCESS" not in column(browser, 4)
    assert status_counts(browser) == dict(Counter(r.final_status for r in failing))

    choose(browser, "variant", "with-hint")
    hinted = [r for r in failing if r.variant_id == "with-hint"]
    assert browser.evaluate(SHOWN) == len(hinted) and set(column(browser, 0)) == {"with-hint"}
    success_option = "[...document.getElementById('status').options].find(o => o.value === 'SUCCESS').text"
    hinted_successes = sum(r.success for r in results if r.variant_id == "with-hint")
    assert browser.evaluate(success_option) == f"SUCCESS ({hinted_successes})"  # the other filters' counts

    choose(browser, "tag", "slow")
    assert browser.evaluate(SHOWN) == sum("slow" in r.tags for r in hinted)

    choose(browser, "tag", "")
    choose(browser, "variant", "")
    choose(browser, "status", "")
    type_search(browser, "pip install exited 1")  # an error's words: every ERROR row, nothing else
    assert browser.evaluate(SHOWN) == sum(r.final_status == "ERROR" for r in results)
    assert set(column(browser, 4)) == {"ERROR"}

    type_search(browser, "suite4: the judge approves")  # a criterion's description
    assert browser.evaluate(SHOWN) == sum(r.base_task_id == "suite4" and bool(r.criteria) for r in results)

    type_search(browser, "SUITE3/ROW01233")  # a task id, any case
    assert sorted(column(browser, 0)) == ["baseline", "with-hint"] and set(column(browser, 1)) == {"suite3/row01233"}


def test_a_column_sorts_both_ways(big_run: tuple[Path, Any], browser: Chromium) -> None:
    run_dir, results = big_run
    open_page(browser, (run_dir / "index.html").as_uri())
    click_on(browser, "#grid thead button[data-key='secs']")
    browser.wait_for("!!document.querySelector('th[aria-sort=ascending]')", 10, 0.05)
    assert float(column(browser, 8)[0]) == min(r.duration_s for r in results)
    click_on(browser, "#grid thead button[data-key='secs']")
    browser.wait_for("!!document.querySelector('th[aria-sort=descending]')", 10, 0.05)
    shown = [float(value) for value in column(browser, 8)]
    assert shown[0] == max(r.duration_s for r in results) and shown == sorted(shown, reverse=True)


def test_a_link_opens_its_task_report_and_back_restores_the_view(big_run: tuple[Path, Any], browser: Chromium) -> None:
    run_dir, results = big_run
    open_page(browser, (run_dir / "index.html").as_uri())
    choose(browser, "status", "TIMEOUT")
    choose(browser, "variant", "baseline")
    expected = sorted((r for r in results if r.final_status == "TIMEOUT" and r.variant_id == "baseline"),
                      key=lambda r: r.task_id)  # fmt: skip
    first = expected[0]
    click_on(browser, "#grid tbody tr a")
    title = browser.wait_for("document.title.includes('[') && document.title", 10, 0.05)
    assert title == f"{first.task_id} [baseline] #00"
    assert browser.evaluate("location.href").endswith(f"/baseline/{first.task_id}/00/task.html")
    assert "TIMEOUT" in browser.evaluate("document.body.innerText")

    # the Back button: after this evaluation has answered (navigating inside it may cut the answer off)
    browser.evaluate("setTimeout(() => history.back(), 0)")
    browser.wait_for(f"location.pathname.endsWith('index.html') && {ROWS_SHOWN} > 0", 10, 0.05)
    assert browser.evaluate(SHOWN) == len(expected)
    assert browser.evaluate("document.getElementById('status').value") == "TIMEOUT"


def compare_flips(results: list[EvaluationResult]) -> list[str]:
    """The rows `coder-eval compare` calls flipped between the two variants: its regressions and improvements."""
    variants = list(dict.fromkeys(r.variant_id for r in results))
    run = RunRows(Path(), "viewer", variants, result_records(results))
    flips = paired_flips(*(Arm(run, variant, variant) for variant in variants))
    return sorted(flips.regressions + flips.improvements)


def show_pairs(browser: Chromium, viewer: Path) -> None:
    open_page(browser, viewer.as_uri())
    click_on(browser, "#tab-pairs")
    browser.wait_for("!!document.getElementById('flipped')", 10, 0.05)


def test_pairs_put_the_flipped_rows_first(big_run: tuple[Path, Any], browser: Chromium) -> None:
    run_dir, results = big_run
    show_pairs(browser, run_dir / "index.html")
    flipped = compare_flips(results)  # an ERROR has no verdict: a row ERROR in one variant is not flipped
    assert browser.evaluate(SHOWN) == len({r.task_id for r in results})
    assert browser.evaluate("Number(document.getElementById('flipped').dataset.count)") == len(flipped)
    assert column(browser, 0) == flipped[:100]
    mark = browser.evaluate("document.querySelector('#grid tbody tr td:nth-child(3) a').getAttribute('href')")
    assert mark == f"with-hint/{flipped[0]}/00/task.html"


# Each row's replicates under variants a and b: S SUCCESS, F FAILURE, E ERROR; flipped as compare counts it.
REPLICATES = {
    "t/r1": ("SSS", "SSF", False),  # the shares differ, both pass by a majority
    "t/r2": ("SFF", "SSF", True),
    "t/r3": ("EEE", "SSS", False),  # a has no verdict: every replicate an ERROR
    "t/r4": ("SSE", "FFS", True),  # a passes 2 of its 2 verdicts
    "t/r5": ("SF", "SS", True),  # half is not a majority
    "t/r6": ("FFF", "FFE", False),
}
STATUSES = {"S": "SUCCESS", "F": "FAILURE", "E": "ERROR"}


def test_pairs_flip_by_the_majority_of_replicates_as_compare_does(tmp_path: Path, browser: Chromium) -> None:
    """The pairs view counted a row flipped when the variants' shares of passing replicates differed (24 flipped
    where compare found 19); compare's verdict is more than half of the non-ERROR replicates passing."""
    results = [
        evaluation_result(variant, task, STATUSES[letter], replicate=replicate)
        for task, (*marks, _) in REPLICATES.items()
        for variant, letters in zip("ab", marks, strict=True)
        for replicate, letter in enumerate(letters)
    ]
    flipped = sorted(task for task, (*_, flips) in REPLICATES.items() if flips)
    assert compare_flips(results) == flipped
    show_pairs(browser, write_viewer_run(tmp_path, results) / "index.html")
    assert browser.evaluate("Number(document.getElementById('flipped').dataset.count)") == len(flipped)
    assert column(browser, 0) == flipped + sorted(set(REPLICATES) - set(flipped))
    r4 = flipped.index("t/r4")
    assert (column(browser, 1)[r4], column(browser, 2)[r4]) == ("\u2713\u2713! 2/2", "\u2717\u2717\u2713 1/3")
    titles = browser.evaluate(
        f"[...document.querySelectorAll('#grid tbody tr')[{r4}].cells[1].children].map(a => a.title)"
    )
    assert titles == ["a #00: SUCCESS", "a #01: SUCCESS", "a #02: ERROR"]  # as the folders and task.html number them


def test_a_partial_cost_shows_as_the_floor_it_is(tmp_path: Path, browser: Chromium) -> None:
    """A row whose cost is partly unknown showed `0.0320` where its task.html says `≥ $0.0320 (part unknown)`."""
    priced = TurnRecord(index=1, input_tokens=100, output_tokens=10, cost_usd=0.032, cost_source="reported")
    unpriced = TurnRecord(index=2, input_tokens=100, output_tokens=10, cost_source="unknown")
    costs = {"t/whole": [priced], "t/partial": [priced, unpriced], "t/unpriced": [unpriced]}
    results = [
        evaluation_result("a", task, "SUCCESS", trajectory=turns, total_token_usage=TokenUsage.of_turns(turns))
        for task, turns in costs.items()
    ]
    run_dir = write_viewer_run(tmp_path, results)
    assert "\u2265 $0.0320 (part unknown)" in (run_dir / "a/t/partial/00/task.html").read_text()
    open_page(browser, (run_dir / "index.html").as_uri())
    cells = "[r.cells[1].innerText, r.cells[11].innerText, r.cells[11].title]"  # task, cost, its hover
    shown = browser.evaluate(f"[...document.querySelectorAll('#grid tbody tr')].map(r => {cells})")
    floor = "at least this much: part of the cost is unknown (task.html says whose)"
    assert shown == [["t/partial", "\u2265 0.0320", floor], ["t/unpriced", "unknown", ""], ["t/whole", "0.0320", ""]]


PAGE = "document.getElementById('page').textContent"
BUTTONS_OFF = "['prev', 'next'].map(id => document.getElementById(id).disabled)"


def test_the_fragment_is_read_within_bounds_and_followed(big_run: tuple[Path, Any], browser: Chromium) -> None:
    """`#status=ERROR&page=-3` showed `rows -299–-200 of 24 · page -2 of 1` with both buttons on; a #fragment
    changed in an open tab did nothing. The fragment's page counts from 1, as the page says."""
    run_dir, results = big_run
    viewer = (run_dir / "index.html").as_uri()
    errors = sum(r.final_status == "ERROR" for r in results)
    timeouts = sum(r.final_status == "TIMEOUT" for r in results)
    pages = -(-errors // 100)
    assert pages > 1 and timeouts > 100

    open_page(browser, f"{viewer}#status=ERROR&page=-3")
    assert browser.evaluate(PAGE) == f"rows 1–100 of {errors} · page 1 of {pages}"
    assert browser.evaluate(BUTTONS_OFF) == [True, False]
    assert browser.evaluate("location.hash") == "#status=ERROR"  # the view as shown

    open_page(browser, f"{viewer}#status=ERROR&page=999&sort=nothing")
    assert browser.evaluate(PAGE) == f"rows {(pages - 1) * 100 + 1}–{errors} of {errors} · page {pages} of {pages}"
    assert browser.evaluate(BUTTONS_OFF) == [False, True]

    open_page(browser, f"{viewer}#status=ERROR&page=2")
    assert browser.evaluate(PAGE).endswith(f"page 2 of {pages}")

    browser.evaluate("location.hash = '#status=TIMEOUT&page=2'")  # edited in the open tab
    browser.wait_for(f"{SHOWN} === {timeouts}", 10, 0.05)
    assert browser.evaluate("document.getElementById('status').value") == "TIMEOUT"
    assert browser.evaluate(PAGE).startswith("rows 101–")
    browser.evaluate("location.hash = ''")
    browser.wait_for(f"{SHOWN} === {len(results)}", 10, 0.05)
    assert browser.evaluate(PAGE).startswith("rows 1–100 ")


@pytest.fixture(scope="module")
def questioned_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[EvaluationResult]]:
    results = questioned_results(EVALUATIONS)
    run_dir = tmp_path_factory.mktemp("questioned")
    return write_run_viewer(run_dir, results, ["default"]), results


def test_descriptions_carrying_each_row_s_question_stay_under_4_mb_and_searchable(
    questioned_run: tuple[Path, list[EvaluationResult]], browser: Chromium
) -> None:
    viewer, results = questioned_run
    seconds = open_page(browser, viewer.as_uri())
    size = viewer.stat().st_size
    assert seconds < FIRST_SCREEN_S and size <= MAX_QUESTIONED_BYTES, (seconds, size)
    failed = next(r for r in results[1:] if not r.success)
    question = failed.criteria[2].description.removeprefix("stays on topic for ").removesuffix(", and says so")
    type_search(browser, question)
    assert browser.evaluate(SHOWN) == 1 and column(browser, 1) == [failed.task_id]
    assert column(browser, 6) == [f"run_command \u201c{failed.criteria[0].description}\u201d"]


# ----------------------------------------------------------------------------- a run made by the installed CLI

LONG_OUTPUT = "x" * 5000


def test_a_cli_run_links_its_viewer_and_its_transcripts_read_well(system_cli: SystemCli, browser: Chromium) -> None:
    turns = [
        {
            "usage": {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.01},
            "calls": [
                {"tool": "Bash", "command": "echo 'hello from the sandbox' > out.txt && cat out.txt"},
                {"tool": "Bash", "command": f"printf '{LONG_OUTPUT}'"},
            ],
            "text": "First I write out.txt and look at it.",
        },
        {"calls": [{"tool": "Read", "path": "out.txt"}], "text": "The file says hello: done."},
    ]
    task = replay_task_file(
        system_cli.folder / "tasks",
        "transcript",
        turns,
        success_criteria=[{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}],
    )
    done, run = system_cli.run(task, env={})
    assert done.code == 0, done.output
    viewer = run.path / "index.html"
    assert f"viewer: {viewer}" in done.out
    assert "[run viewer](index.html)" in (run.path / "run.md").read_text()
    assert f'href="{run.path.name}/index.html"' in (system_cli.runs / "index.html").read_text()
    suite = dg.DagsterInstance.from_config(str(system_cli.home)).get_latest_materialization_event(
        dg.AssetKey("suite_metrics")
    )
    assert suite is not None and suite.asset_materialization is not None
    assert suite.asset_materialization.metadata["viewer"].value == str(viewer)  # the Dagster run's metadata

    open_page(browser, viewer.as_uri())
    click_on(browser, "#grid tbody tr a")
    browser.wait_for("document.title.startsWith('transcript')", 10, 0.05)
    text = browser.evaluate("document.body.innerText")
    browser.screenshot(ARTIFACTS / "task-transcript.png")
    for seen in (
        "Turn 1",
        "First I write out.txt and look at it.",  # the agent's words
        "echo 'hello from the sandbox' > out.txt && cat out.txt",  # a call's input
        "hello from the sandbox",  # what it returned
        "at the agent's 2,000-character cap",  # a result the agent cut
        "Turn 2",
        "The file says hello: done.",
        "1,200 in",  # tokens per turn
    ):
        assert seen in text, f"task.html does not show {seen!r}"


def test_a_long_transcript_s_folded_calls_each_say_what_they_ran(system_cli: SystemCli, browser: Chromium) -> None:
    """Past OPEN_CALLS a transcript's calls start folded, one line each: that line read "Bash success · 10 ms" for
    every call, so a reader had to open each to find which command ran."""
    turns = [{"calls": [{"tool": "Bash", "command": f"echo step {n}  \n  # two lines"}]} for n in range(45)]
    wants = [{"type": "command_executed", "command_pattern": "echo step 44", "description": "the last step ran"}]
    task = replay_task_file(system_cli.folder / "tasks", "many_calls", turns, success_criteria=wants)
    done, run = system_cli.run(task, env={})
    assert done.code == 0, done.output
    browser.call("Page.navigate", url=(run.evaluation("many_calls") / "task.html").as_uri())
    browser.wait_for("document.title.startsWith('many_calls')", 10, 0.05)
    assert browser.evaluate("document.querySelectorAll('details.call[open]').length") == 0  # folded
    text = browser.evaluate("document.body.innerText")
    for n in (0, 44):
        assert f"echo step {n} # two lines" in text, f"a folded call does not say it ran echo step {n}"


def shown_statuses(browser: Chromium, viewer: Path) -> list[str]:
    open_page(browser, viewer.as_uri())
    return column(browser, 4)


def test_rescore_and_report_write_the_viewer_again(system_cli: SystemCli, browser: Chromium) -> None:
    """The viewer shows the rows as they are now: a rescore's verdicts, and `report` rewrites it."""
    turns = [{"calls": [{"tool": "Write", "path": "a.txt", "content": "a"}], "text": "Wrote a.txt."}]
    criterion = {"type": "file_exists", "path": "b.txt", "description": "b.txt exists"}
    task = replay_task_file(system_cli.folder / "tasks", "rescored", turns, success_criteria=[criterion])
    done, run = system_cli.run(task, env={})
    assert done.code == 1, done.output
    viewer = run.path / "index.html"
    assert shown_statuses(browser, viewer) == ["FAILURE"]

    criterion["path"] = "a.txt"  # the rubric fixed: rescoring is how it iterates
    replay_task_file(system_cli.folder / "tasks", "rescored", turns, success_criteria=[criterion])
    rescored = system_cli("rescore", run.path, env={})
    assert rescored.code == 0, rescored.output
    assert shown_statuses(browser, viewer) == ["SUCCESS"]

    for args in (["-f", "html"], ["--rebuild"]):
        viewer.unlink()
        again = system_cli("report", run.path, *args, env={})
        assert again.code == 0 and viewer.is_file(), (args, again.output)
        assert shown_statuses(browser, viewer) == ["SUCCESS"], args
