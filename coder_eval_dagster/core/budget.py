"""A run-wide spending limit (``--max-usd``, an experiment's ``budget:``): once reached, no new evaluation starts.

The spend is kept in a ledger file in the run folder, so every process that
works on the run (the CLI's steps, the chunks of a Dagster backfill, a
``--resume``) counts against the same budget: each appends what its
evaluations reported (the agent and the simulated user when the sandbox phase
ends, the judges when scoring ends) and reads what the others appended. An
evaluation that finds the budget spent when it would start is recorded there
as not run. Appends are single ``write`` calls under an exclusive lock.
"""

from __future__ import annotations

import fcntl
import json
import threading
from pathlib import Path

from .layout import SPEND_LEDGER

NOT_RUN_BUDGET = "budget"


def evaluation_key(variant_id: str, task_id: str, replicate: int) -> str:
    return f"{variant_id}/{task_id}/{replicate}"


class RunBudget:
    """The run's spend so far against its limit (``max_usd`` None: no limit, the spend is still counted)."""

    def __init__(self, folder: Path, max_usd: float | None):
        self.path = folder / SPEND_LEDGER
        self.max_usd = max_usd
        self._spent = 0.0
        self._skipped: set[str] = set()
        self._offset = 0
        self._lock = threading.Lock()

    def add(self, key: str, usd: float | None) -> None:
        """Count what an evaluation reported (nothing for an unknown cost: a budget binds on what is known)."""
        if usd:
            self._append({"key": key, "usd": round(usd, 8)})

    def skip(self, key: str) -> None:
        """Record that an evaluation did not start because the budget was spent."""
        self._append({"key": key, "not_run": NOT_RUN_BUDGET})

    def spent(self) -> float:
        with self._lock:
            self._read_new()
            return self._spent

    def exhausted(self) -> bool:
        return self.max_usd is not None and self.spent() >= self.max_usd

    def skipped(self, key: str) -> bool:
        with self._lock:
            self._read_new()
            return key in self._skipped

    def _append(self, entry: dict[str, object]) -> None:
        line = (json.dumps(entry) + "\n").encode()
        with self._lock, self.path.open("ab") as ledger:
            fcntl.flock(ledger, fcntl.LOCK_EX)
            ledger.write(line)

    def _read_new(self) -> None:
        """Take in what any process appended since the last read (whole lines only)."""
        if not self.path.is_file():
            return
        with self.path.open("rb") as ledger:
            ledger.seek(self._offset)
            data = ledger.read()
        complete = data[: data.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            entry = json.loads(line)
            if "usd" in entry:
                self._spent += float(entry["usd"])
            if entry.get("not_run"):
                self._skipped.add(str(entry["key"]))
