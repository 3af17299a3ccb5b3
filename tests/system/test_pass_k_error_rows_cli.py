"""``coder-eval compare --format json``: pass@k's ``rows_left_out`` counts a row whose replicates all ended in ERROR,
as analysts.md says (it has fewer than k, none)."""

from __future__ import annotations

import json

import pytest

from ..core.test_pass_k_all_error_rows import write_outcomes
from .conftest import SystemCli

pytestmark = pytest.mark.slow


def test_compare_counts_all_error_rows_as_left_out(system_cli: SystemCli) -> None:
    outcome = system_cli("compare", write_outcomes(system_cli.runs), "--format", "json", env={})
    assert outcome.code == 0, outcome.output
    (arm,) = json.loads(outcome.out)["arms"]
    assert [(f["k"], f["rows"], f["rows_left_out"]) for f in arm["pass_k"]] == [(1, 3, 2), (2, 2, 3)]
