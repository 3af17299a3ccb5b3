"""`-v` and `--log-file` show the package's log records: a record that quotes a secret is masked."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from coder_eval_dagster.cli_options import LOGGER, configure_logging


def test_a_log_record_quoting_a_key_is_masked_on_stderr_and_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "sk-ant-log-0123456789abcdef0123"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    logger = logging.getLogger(LOGGER)
    try:
        configure_logging(verbose=True, log_file=tmp_path / "run.log")
        logger.warning("the API said: invalid x-api-key %s", key)
        written = (tmp_path / "run.log").read_text()
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
        logger.propagate, logger.level = True, logging.NOTSET
    shown = capsys.readouterr().err
    assert "invalid x-api-key ***" in written and "invalid x-api-key ***" in shown
    assert key not in written and key not in shown
