"""Bounded inputs from the sandbox: output capped while streaming, files read with a cap, replay calls timed."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest

from coder_eval_dagster.core.agents import replay
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.sandbox.containment import release
from coder_eval_dagster.core.sandbox.process import OUTPUT_CAP_BYTES, read_capped
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

from ..support.helpers import criterion, evaluate_replay, omitted


def _sandbox(tmp_path: Path) -> TempdirSandbox:
    box = TempdirSandbox(tmp_path / "run" / "sandbox", SandboxConfig.model_validate({"python": None}))
    box.create(tmp_path)
    return box


def test_a_200_mb_flood_is_capped_while_streaming_with_nothing_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    box = _sandbox(tmp_path)
    done = box.run("echo first; head -c 200000000 /dev/zero | tr '\\0' x; echo; echo last", timeout=120)
    assert done.ok
    assert done.stdout.startswith("first\n") and done.stdout.endswith("last\n")
    assert f"[... {omitted(200_000_000 + 12)} bytes omitted" in done.stdout
    assert len(done.stdout) <= 100 * 1024
    assert list(scratch.iterdir()) == []  # the stream never went to a temporary file
    release(box.root.parent)


def test_a_replayed_bash_call_without_limits_gets_the_default_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay, "DEFAULT_CALL_TIMEOUT_S", 1.0)
    started = time.monotonic()
    result = evaluate_replay(
        tmp_path,
        [{"calls": [{"tool": "Bash", "command": "sleep 20"}]}],
        success_criteria=[criterion("file_exists", path=".")],
    )
    (call,) = result.trajectory[0].calls
    assert call.status == "error" and "timed out after 1 s" in (call.output or "")
    assert time.monotonic() - started < 10


SPARSE = 2**42  # 4 TiB: ext4 (pytest's tmp_path) holds at most 16 TiB in a file; tmpfs took the petabyte


def test_a_sparse_petabyte_is_read_at_its_head_and_tail_at_once(tmp_path: Path) -> None:
    """A process left in the container made a command's capture file a sparse petabyte: reading it through took the
    run a day and a half, past its task_timeout and SIGTERM."""
    out = tmp_path / "x.out"
    with open(out, "wb") as capture:
        capture.write(b"start\n")
        capture.truncate(SPARSE)
        capture.seek(SPARSE - 4)
        capture.write(b"end\n")
    started = time.monotonic()
    text = read_capped(out)
    assert time.monotonic() - started < 1
    assert text.startswith("start\n") and text.endswith("end\n")
    assert f"[... {omitted(SPARSE)} bytes omitted" in text


def test_output_within_the_cap_is_read_whole(tmp_path: Path) -> None:
    out = tmp_path / "x.out"
    out.write_bytes(b"a" * OUTPUT_CAP_BYTES)
    assert read_capped(out) == "a" * OUTPUT_CAP_BYTES
    assert read_capped(tmp_path / "none.out") == ""
