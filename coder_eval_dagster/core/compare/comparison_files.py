"""Files a comparison leaves behind: the HTML page with its PNGs, the run's own comparison, the runs index."""

from __future__ import annotations

from pathlib import Path

from ..layout import COMPARISON_PAGE, write_output
from ..models.results import EvaluationResult
from .analysis import Comparison, compare_variants
from .figures import Drawing, comparison_figures, save_pngs
from .render import render_html
from .rows import RunRows, result_records


def write_page(path: Path, text: str, drawings: list[Drawing]) -> list[Path]:
    """The page and each figure as ``<page stem>.<figure>.png`` beside it."""
    pngs = save_pngs(drawings, path.parent, f"{path.stem}.")
    write_output(path, text)
    return [path, *pngs.values()]


def write_comparison_page(comparison: Comparison, path: Path) -> list[Path]:
    drawings = comparison_figures(comparison.arms, comparison.pairs)
    return write_page(path, render_html(comparison, drawings, path.parent), drawings)


def write_run_comparison(run_dir: Path, results: list[EvaluationResult], variants: list[str]) -> dict[str, str] | None:
    """A run of several variants: its comparison page and figures; what run.json records of them."""
    if len(variants) < 2:
        return None
    comparison = compare_variants(RunRows(run_dir, run_dir.name, variants, result_records(results)))
    write_comparison_page(comparison, run_dir / COMPARISON_PAGE)
    return {"page": COMPARISON_PAGE, "figure": f"{Path(COMPARISON_PAGE).stem}.success_rate.png"}
