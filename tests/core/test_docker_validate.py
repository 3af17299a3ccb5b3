"""`validate` warns about sandbox limits their driver does not enforce (no engine needed)."""

from __future__ import annotations

from pathlib import Path

from ..support.helpers import run_cli, task_with, write_task


def _validate(tmp_path: Path, sandbox: dict) -> tuple[int, str]:
    path = write_task(tmp_path, task_with(agent={"type": "none"}, initial_prompt=None, sandbox=sandbox))
    done = run_cli("validate", path)
    return done.code, done.err


def test_limits_under_tempdir_are_a_warning_naming_file_line_and_field(tmp_path: Path) -> None:
    code, err = _validate(tmp_path, {"python": None, "limits": {"timeout": 5, "max_memory_mb": 128, "max_pids": 64}})
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 2 and all(line.startswith(f"warning: {tmp_path / 'task.yaml'}:") for line in lines)
    assert "sandbox.limits.max_memory_mb" in lines[0] and "driver: docker" in lines[0]
    assert "sandbox.limits.max_pids" in lines[1]


def test_limits_under_docker_bind_and_only_max_disk_mb_is_warned(tmp_path: Path) -> None:
    code, err = _validate(
        tmp_path,
        {"driver": "docker", "python": None, "limits": {"max_memory_mb": 128, "max_cpus": 1, "max_disk_mb": 10}},
    )
    assert code == 0 and err.count("warning:") == 1 and "max_disk_mb is not enforced" in err


def test_image_and_network_are_checked(tmp_path: Path) -> None:
    code, err = _validate(tmp_path, {"driver": "docker", "python": None, "network": "overlay"})
    assert code == 1 and "sandbox.network" in err


def test_max_disk_mb_is_said_to_bind_under_neither_driver(tmp_path: Path) -> None:
    """The guide: "Reserved; not enforced by either driver". Under tempdir the warning told to use driver: docker."""
    code, err = _validate(tmp_path, {"driver": "tempdir", "python": None, "limits": {"max_disk_mb": 10}})
    assert code == 0 and "max_disk_mb is not enforced by either driver" in err and "use driver" not in err
