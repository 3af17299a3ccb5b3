"""Simulated A/B outcomes for the sequential tests: paired rows of varying difficulty, and batch numbers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def paired_successes(
    rng: np.random.Generator, shape: tuple[int, ...], rate_a: float, rate_b: float, spread: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Each arm's 0/1 outcome per row: rows of varying difficulty (logit sd ``spread``), each arm drawn on its own.

    A trailing axis of replicates may be given in ``shape``; a row's difficulty is shared by its replicates.
    """
    difficulty = rng.normal(0.0, spread, size=shape[:2])
    difficulty = difficulty.reshape(difficulty.shape + (1,) * (len(shape) - 2))
    a = rng.random(shape) < _logistic(_logit(rate_a) + difficulty)
    b = rng.random(shape) < _logistic(_logit(rate_b) + difficulty)
    return a.astype(float), b.astype(float)


def paired_outcomes(
    rng: np.random.Generator, shape: tuple[int, int], rate_a: float, rate_b: float, spread: float = 1.0
) -> np.ndarray:
    """Paired differences in {-1, 0, 1} (b - a), one replicate per arm.

    The mean difference is rate_b - rate_a exactly when ``spread`` is 0 (and 0 when the rates are equal).
    """
    a, b = paired_successes(rng, shape, rate_a, rate_b, spread)
    return b - a


def batch_numbers(rows: int, batch_rows: int) -> np.ndarray:
    return np.arange(rows) // batch_rows + 1


def add_batches(runs: Path, batch_of: dict[str, int]) -> None:
    """The run's task_results file with its ``batch`` column filled, as a sequential run records it."""
    (path,) = (runs / "tables" / "task_results").rglob("*.parquet")
    table = pq.read_table(path)
    batches = pa.array([batch_of[task] for task in table.column("task_id").to_pylist()], pa.int32())
    pq.write_table(table.set_column(table.schema.get_field_index("batch"), "batch", batches), path)
