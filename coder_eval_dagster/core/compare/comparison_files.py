"""Files a comparison leaves behind: the HTML page with its PNGs, the run's own comparison, the runs index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..files import real_path
from ..layout import COMPARISON_PAGE, write_atomically, write_output
from ..models.results import EvaluationResult
from .analysis import Comparison, compare_variants
from .figures import Drawing, comparison_figures, save_pngs
from .render import render_html
from .rows import RunRows, result_records

Writer = Callable[[Path, str], None]


def write_page(path: Path, text: str, drawings: list[Drawing], write: Writer = write_output) -> list[Path]:
    """The page and each figure as ``<page stem>.<figure>.png`` beside it (beside the file a link names);
    ``write``: how the page is written (the user's file, or the run's own)."""
    real = real_path(path)
    pngs = save_pngs(drawings, real.parent, f"{real.stem}.")
    write(path, text)
    return [path, *pngs.values()]


def write_comparison_page(comparison: Comparison, path: Path, write: Writer = write_output) -> list[Path]:
    drawings = comparison_figures(comparison.arms, comparison.pairs)
    return write_page(path, render_html(comparison, drawings, real_path(path).parent), drawings, write)


def write_run_comparison(run_dir: Path, results: list[EvaluationResult], variants: list[str]) -> dict[str, str] | None:
    """A run of several variants: its comparison page and figures; what run.json records of them."""
    if len(variants) < 2:
        return None
    comparison = compare_variants(RunRows(run_dir, run_dir.name, variants, result_records(results)))
    write_comparison_page(comparison, run_dir / COMPARISON_PAGE, write_atomically)  # never through a link
    return {"page": COMPARISON_PAGE, "figure": f"{Path(COMPARISON_PAGE).stem}.success_rate.png"}
