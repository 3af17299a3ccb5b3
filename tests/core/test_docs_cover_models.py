"""CE030: every model field is documented in its own section of docs/task-format.md."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import coder_eval_dagster.core.criteria as criteria_pkg
import coder_eval_dagster.core.models as models_pkg
from coder_eval_dagster.core.criteria import REGISTRY, CriterionBase
from coder_eval_dagster.core.models.base import StrictModel

DOC = Path(__file__).parent.parent.parent / "docs" / "task-format.md"

SECTIONS = {
    "Task": "## Task file",
    "Reference": "### `reference`",
    "AgentConfig": "## `agent`",
    "Plugin": "## `agent`",
    "SandboxConfig": "## `sandbox`",
    "PythonEnv": "### `python`",
    "DockerConfig": "### `docker`",
    "NodeEnv": "### `node`",
    "RecordedCli": "### `record_cli`",
    "CliResponse": "### `record_cli`",
    "CliMatch": "### `record_cli`",
    "RepoSource": "### `template_sources`",
    "TemplateDirSource": "### `template_sources`",
    "StarterFilesSource": "### `template_sources`",
    "StarterFile": "### `template_sources`",
    "SandboxLimits": "### `limits`",
    "NetworkPolicy": "### `network`",
    "RunLimits": "## `run_limits`",
    "HookCommand": "## `pre_run` and `post_run`",
    "Dataset": "## `dataset`",
    "Simulation": "## `simulation`",
    "CriterionBase": "## `success_criteria`",
    "StopEarly": "## `success_criteria`",
    "RegexSpec": "### `file_check`",
    "Overlay": "## Experiment files",
    "Assertion": "### `json_check`",
    "FlagPredicate": "### `cli_called`",
    "ArgvPattern": "### `cli_called`",
    "JudgeBase": "### `llm_judge`",
    "Experiment": "## Experiment files",
    "ExperimentDefaults": "## Experiment files",
    "Variant": "## Experiment files",
    "PrefixMutation": "## Experiment files",
    "SuffixMutation": "## Experiment files",
    "ReplaceMutation": "## Experiment files",
    "TemplateMutation": "## Experiment files",
    "Trajectory": "## Replay trajectories",
    "TrajectoryTurn": "## Replay trajectories",
    "TurnUsage": "## Replay trajectories",
    "ToolCall": "## Replay trajectories",
    "Sequential": "## Experiment files",
    "Budget": "## Experiment files",
    "PriceFile": "## Price files",
    "ModelPrice": "## Price files",
    **{model.__name__: f"### `{kind}`" for kind, model in ((k, t.model) for k, t in REGISTRY.items())},
}
# Bases that only add fields documented with the criteria that use them.
MIXINS = {"LiveObservable", "Classification", "RejectsMovedLimits"}


def _all_models() -> dict[str, type[StrictModel]]:
    for package in (models_pkg, criteria_pkg):
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")
    found: dict[str, type[StrictModel]] = {}
    pending = list(StrictModel.__subclasses__())
    while pending:
        model = pending.pop()
        if model.__module__.startswith("coder_eval_dagster."):
            found[model.__name__] = model
        pending.extend(model.__subclasses__())
    return found


def _section(heading: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(f"\n{heading}\n")
    following = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE)
    end_match = following.search(text, start + len(heading) + 2)
    return text[start : end_match.start() if end_match else len(text)]


def test_every_model_has_a_section() -> None:
    models = _all_models()
    assert set(models) - MIXINS <= set(SECTIONS), (
        f"map these models to a doc section: {set(models) - MIXINS - set(SECTIONS)}"
    )


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_model_fields_are_documented(name: str) -> None:
    model = _all_models()[name]
    section = _section(SECTIONS[name])
    own = set(model.model_fields)
    if issubclass(model, CriterionBase):  # the common fields have their own section
        own -= {"type", *CriterionBase.model_fields}
    missing = sorted(f for f in own if f"`{f}`" not in section)
    assert not missing, f"{name}: fields missing from '{SECTIONS[name]}' in docs/task-format.md: {missing}"


def test_the_annotated_task_of_the_docs_is_valid() -> None:
    import yaml

    from coder_eval_dagster.core.models.task import Task

    text = DOC.read_text(encoding="utf-8")
    block = text.split("## A complete task, annotated", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    Task.model_validate(yaml.safe_load(block))


def test_schema_command_prints_the_models_json_schema() -> None:
    import json

    from coder_eval_dagster.core.models.task import Task

    from ..support.helpers import run_cli

    result = run_cli("schema")
    assert result.code == 0
    schema = json.loads(result.out)
    assert schema["properties"].keys() == Task.model_json_schema()["properties"].keys()
    assert "file_exists" in json.dumps(schema) and schema["additionalProperties"] is False


RUNNING = Path(__file__).parent.parent.parent / "docs" / "running.md"


def test_every_run_option_is_in_the_usage_of_docs_running() -> None:
    """The CLI's options are generated from RunSpec and RunOptions: the usage block at the top of
    docs/running.md names each of their flags."""
    from coder_eval_dagster.cli_options import flags_of
    from coder_eval_dagster.core.run_spec import RunOptions, RunSpec

    usage = RUNNING.read_text(encoding="utf-8").split("## ", 1)[0]
    missing = [flag for model in (RunSpec, RunOptions) for flag in flags_of(model) if flag not in usage]
    assert missing == []
