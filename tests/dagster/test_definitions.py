"""The code location loads (as `dagster dev` and `dg check defs` load it), and partition keys are UI-safe."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coder_eval_dagster.defs.partitions import decode_id, encode_id, ids_of, partition_key

ROOT = Path(__file__).parent.parent.parent


def test_definitions_load_and_validate() -> None:
    from coder_eval_dagster.definitions import defs

    dg.Definitions.validate_loadable(defs)
    keys = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {
        "task_definitions",
        "resolved_tasks",
        "sandbox_runs",
        "criteria_scores",
        "suite_metrics",
        "variant_comparison",
    }
    assert defs.resolve_job_def("evaluate") is not None


def test_dg_check_defs() -> None:
    dg_cli = Path(sys.executable).parent / "dg"
    done = subprocess.run([str(dg_cli), "check", "defs"], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All definitions loaded successfully" in done.stdout + done.stderr


@settings(deadline=None)  # (a loaded machine's pause is no failure of the encoding)
@given(st.text(min_size=1, max_size=40))
def test_key_encoding_round_trips_and_is_ui_safe(identifier: str) -> None:
    key = encode_id(identifier)
    assert decode_id(key) == identifier
    assert "..." not in key and "|" not in key and "," not in key and key.isprintable() and key.isascii()
    if re.fullmatch(r"[A-Za-z0-9_./-]*", identifier) and "..." not in identifier:
        assert key == identifier  # readable: the id itself


def test_partition_key_ids() -> None:
    key = partition_key("shop/row.1", "with-hint")
    assert str(key) == "shop/row.1|with-hint"
    assert ids_of(str(key)) == ("shop/row.1", "with-hint") == ids_of(key)


def test_the_code_location_takes_tasks_as_the_cli_does_beside_an_experiment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The UI and the file sensor added `./tasks` to an experiment's own `tasks:`, where `coder-eval run -e` and
    `register -e` take only the experiment's (every task under tasks/ was run, and paid for, by the sensor)."""
    from coder_eval_dagster.defs.resources import default_settings

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CODER_EVAL_TASK_PATHS", raising=False)
    (tmp_path / "own.yaml").write_text("experiment_id: own\ntasks: [one.yaml]\nvariants: [{variant_id: a}]\n")
    (tmp_path / "open.yaml").write_text("experiment_id: open\nvariants: [{variant_id: a}]\n")
    expected = {"own.yaml": [], "open.yaml": ["tasks"]}
    for experiment, paths in expected.items():
        monkeypatch.setenv("CODER_EVAL_EXPERIMENT", experiment)
        assert default_settings().spec.task_paths == paths
    monkeypatch.setenv("CODER_EVAL_TASK_PATHS", "mine")  # named: as given
    assert default_settings().spec.task_paths == ["mine"]
