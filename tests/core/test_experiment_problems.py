"""A problem in what an experiment's variant lays over a task is the experiment file's, named there."""

from __future__ import annotations

from pathlib import Path

from ..support.helpers import agentless_task, run_cli, write, write_task


def test_a_variants_template_folder_that_is_missing_is_named_in_the_experiment(tmp_path: Path) -> None:
    task = write_task(tmp_path / "t", agentless_task())
    experiment = write(
        tmp_path / "e/ab.yaml",
        """\
        experiment_id: ab
        variants:
          - variant_id: base
          - variant_id: hinted
            template_sources: [{type: template_dir, path: nodir}]
        """,
    )
    done = run_cli("run", task, "-e", experiment, "--runs-dir", tmp_path / "runs")
    assert done.code == 2
    assert done.err.strip() == (
        f"{experiment}:5: variants.1.template_sources.0.path: folder not found: {tmp_path / 'e/nodir'} "
        "(relative to the experiment file)"
    )


def test_a_variants_simulation_value_of_the_wrong_type_is_the_experiments_error(tmp_path: Path) -> None:
    experiment = write(
        tmp_path / "e/sim.yaml",
        "experiment_id: sim\nvariants:\n  - variant_id: base\n    simulation: {enabled: maybe, max_turns: 0}\n",
    )
    done = run_cli("validate", experiment)
    assert done.code == 1
    assert f"{experiment}:4: variants.0.simulation: enabled: Input should be a valid boolean" in done.err
