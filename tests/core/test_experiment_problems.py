"""A problem in what an experiment's variant lays over a task is the experiment file's, named there."""

from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.mark.parametrize("block", ["variants:\n  - variant_id: b\n   ", "defaults:\n  "])
def test_a_repo_after_another_source_of_an_experiment_is_refused_by_validate_of_the_file_alone(
    tmp_path: Path, block: str
) -> None:
    """It refused every run ('after 0 sources', not counting its own list) while validate said OK."""
    sources = "template_sources: [{type: repo, url: a.git}, {type: repo, url: b.git}]"
    text = f"experiment_id: e\n{block} {sources}\n" + ("variants: [{variant_id: b}]\n" if "defaults" in block else "")
    experiment = write(tmp_path / "e.yaml", text)
    checked = run_cli("validate", experiment)
    where = "variants.0" if "variants" in block else "defaults"
    assert checked.code == 1, checked.out
    assert f"{where}.template_sources.1: a repo source must be first in the list" in checked.err, checked.err


def test_a_variants_missing_plugin_folder_is_warned_about_in_the_experiment(tmp_path: Path) -> None:
    task = write_task(tmp_path / "t", {**agentless_task(), "agent": {"type": "claude-code"}, "initial_prompt": "p"})
    experiment = write(
        tmp_path / "e/skills.yaml",
        """\
        experiment_id: skills
        variants:
          - variant_id: base
          - variant_id: with-skill
            agent: {plugins: [{type: local, path: ../nowhere}]}
        """,
    )
    done = run_cli("validate", task, "-e", experiment)
    assert done.code == 0, done.err
    assert done.err.startswith(f"{experiment}:5: variants.1.agent.plugins.0.path: warning: plugin folder not found: ")


def test_a_variants_simulation_value_of_the_wrong_type_is_the_experiments_error(tmp_path: Path) -> None:
    experiment = write(
        tmp_path / "e/sim.yaml",
        "experiment_id: sim\nvariants:\n  - variant_id: base\n    simulation: {enabled: maybe, max_turns: 0}\n",
    )
    done = run_cli("validate", experiment)
    assert done.code == 1
    assert f"{experiment}:4: variants.0.simulation.enabled: Input should be a valid boolean" in done.err


@pytest.mark.parametrize("near", ["${row.}", "${rows.v}", "${ row.v }", "${row.v"])
def test_a_placeholder_written_wrong_is_an_error_not_text(tmp_path: Path, near: str) -> None:
    data = agentless_task(
        dataset={"rows": [{"id": "a", "v": "x"}]},
        success_criteria=[{"type": "file_exists", "path": f"out{near}.txt", "description": "d"}],
    )
    done = run_cli("validate", write_task(tmp_path, data))
    assert done.code == 1 and f"success_criteria.0.path: {near}" in done.err and "is not a placeholder" in done.err


def test_a_shell_variable_named_row_is_left_alone(tmp_path: Path) -> None:
    data = agentless_task(pre_run=[{"command": "row=1; rows=2; echo ${row} ${rows} > out.txt"}])
    assert run_cli("validate", write_task(tmp_path, data)).code == 0


def test_type_given_twice_on_the_command_line_is_refused(tmp_path: Path) -> None:
    task = write_task(tmp_path, agentless_task())
    done = run_cli("run", task, "--type", "nonexistent", "-D", "agent.type=none", "--runs-dir", tmp_path / "runs")
    assert done.code == 2 and "agent.type: also given by its own option (--type); give it once" in done.err


def test_every_missing_file_of_a_task_is_named_at_once(tmp_path: Path) -> None:
    data = agentless_task(
        reference={"file": "nope.py"},
        sandbox={"python": None, "template_sources": [{"type": "template_dir", "path": "nope_dir"}]},
        dataset={"paths": ["nope.jsonl"]},
    )
    done = run_cli("validate", write_task(tmp_path, data))
    assert done.code == 1
    for field in ("reference.file", "sandbox.template_sources.0.path", "dataset.paths.0"):
        assert f": {field}: " in done.err, done.err


@pytest.mark.parametrize("at", ["variant", "defaults"])
def test_mutations_of_a_task_without_a_prompt_are_refused_where_they_are_written(tmp_path: Path, at: str) -> None:
    """They would do nothing, and the A/B would compare one task with itself (coder_eval refuses it too)."""
    task = write_task(tmp_path / "t", agentless_task())
    mutations = "prompt_mutations: [{type: suffix, content: SUF}]"
    body = (
        f"experiment_id: mut\nvariants:\n  - variant_id: m1\n    {mutations}\n"
        if at == "variant"
        else f"experiment_id: mut\ndefaults:\n  {mutations}\nvariants:\n  - variant_id: m1\n"
    )
    experiment = write(tmp_path / "e/mut.yaml", body)
    done = run_cli("run", task, "-e", experiment, "--runs-dir", tmp_path / "runs")
    field = "variants.0.prompt_mutations" if at == "variant" else "defaults.prompt_mutations"
    line = 4 if at == "variant" else 3
    assert done.code == 2 and done.err.startswith(f"{experiment}:{line}: {field}: task "), done.err
    assert "has no initial_prompt to mutate" in done.err and not (tmp_path / "runs").exists()
