"""An id the partition key escapes (three dots in a row: `a...b` is the key `a..%2Eb`) kept as written in the
instance, as DESIGN.md asks: the UI showed only the escaped key."""

from __future__ import annotations

import dagster as dg
import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_register_keeps_an_escaped_id_as_written_in_its_materialization(system_cli: SystemCli) -> None:
    task = task_file(system_cli.folder / "tasks", "a...b", agent={"type": "none"})
    registered = system_cli("register", task, env={})
    assert registered.code == 0, registered.output
    with dg.DagsterInstance.from_config(str(system_cli.home)) as instance:
        assert list(instance.get_dynamic_partitions("task")) == ["a..%2Eb"]
        (record,) = instance.fetch_materializations(dg.AssetKey("resolved_tasks"), limit=5).records
        materialization = record.asset_materialization
        assert materialization is not None and materialization.partition == "a..%2Eb|default"
        assert materialization.metadata["task_id"] == dg.TextMetadataValue("a...b")
        assert "variant_id" not in materialization.metadata  # `default` is its own key
