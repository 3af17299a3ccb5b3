"""Judge verdict reuse: a judge shown byte-identical input to a stored verdict's gives that verdict again, uncalled.

Iterating on one rubric with ``rescore`` would otherwise pay every judge of
every row again, though most of them would be shown exactly what they saw
before. So each verdict keeps, in its evidence, a hash of everything its
call was made of (``input_hash``: the request with its model, system prompt,
rendered prompt and settings, and the bytes of every file the judge names);
an ``agent_judge`` also keeps ``sandbox_hash``, the content of the sandbox
copy it inspected, since it reads files the prompt never shows.

A rescore (and a ``--retry-errors``) passes the evaluation's earlier
verdicts to the checks through the check context (``CheckContext.verdicts``);
a judge whose hashes equal those of the verdict stored at its index (same
type, no error) returns that verdict, marked ``reused: true``, and calls
nothing. Its ``judge_usage`` stays the original call's; the spend of the
scoring (``token_usage``, ``judge_cost_usd``, the run's spend) counts it as
nothing, since nothing was paid for it this time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..files import open_regular, opened_regular
from ..trees import walk
from .outcome import Outcome

if TYPE_CHECKING:
    from ..check_context import CheckContext
    from ..models.results import CriterionResult
    from .judge_base import JudgeBase

INPUT_HASH = "input_hash"
SANDBOX_HASH = "sandbox_hash"
REUSED = "reused"
HASH_PREFIX = "sha256:"
CHUNK = 1 << 20


@dataclass(frozen=True)
class VerdictKey:
    """What a judge call is made of, as hashes: equal keys mean a byte-identical call, whose verdict may be reused."""

    input_hash: str
    sandbox_hash: str | None = None  # agent_judge: the content of the sandbox copy it inspects
    missing_files: tuple[str, ...] = ()  # the ``files`` entries that named no file (not part of the match)

    @classmethod
    def of(
        cls, call: Mapping[str, Any], files: Mapping[str, str | None], sandbox_hash: str | None = None
    ) -> VerdictKey:
        """The key of a call and the hashes of the files it names (None: no such file)."""
        missing = tuple(entry for entry, found in files.items() if found is None)
        return cls(input_hash(call, files), sandbox_hash, missing)

    def evidence(self) -> dict[str, str]:
        """The hashes as the verdict's evidence keeps them (a later scoring compares against these)."""
        kept = {INPUT_HASH: self.input_hash}
        return kept | ({SANDBOX_HASH: self.sandbox_hash} if self.sandbox_hash is not None else {})

    def matches(self, details: Mapping[str, Any]) -> bool:
        """Whether a stored verdict's evidence has these very hashes (one stored before reuse existed has none)."""
        return details.get(INPUT_HASH) == self.input_hash and details.get(SANDBOX_HASH) == self.sandbox_hash


def digest(value: object) -> str:
    """``sha256:<hex>`` of a JSON-able value written canonically (sorted keys, no spacing), so equal values hash
    equal whatever the order their dicts were built in."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return HASH_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_hash(opened: Callable[[], int]) -> str | None:
    """The bytes of the file ``opened`` opens (as :func:`~..files.open_beneath` does: once, never waiting, never
    through a link it refuses) as ``sha256:<hex>``, streamed; None when there is no regular file there."""
    try:
        fd = opened_regular(opened, "")
    except FileNotFoundError:
        return None
    sha = hashlib.sha256()
    try:
        while chunk := os.read(fd, CHUNK):
            sha.update(chunk)
    finally:
        os.close(fd)
    return HASH_PREFIX + sha.hexdigest()


def input_hash(call: Mapping[str, Any], files: Mapping[str, str | None]) -> str:
    """The hash of one judge call: its request (``call``) and the hash of each file it names.

    The files count by their bytes, not by the text the prompt shows of them:
    a change past ``max_file_chars`` or in bytes that decode alike still
    makes a new call.
    """
    return digest({"call": dict(call), "files": dict(files)})


def tree_hash(folder: Path) -> str:
    """The content of a folder as ``sha256:<hex>``: every entry's relative path and kind, a file's bytes, a link's
    target (never followed), in a fixed order."""
    sha = hashlib.sha256()
    for current, dirs, files in walk(folder):
        here = Path(current)
        dirs.sort()
        for name in sorted([*dirs, *files]):
            path = here / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink():
                entry = f"L {relative} -> {os.readlink(path)}"
            elif path.is_dir():
                entry = f"D {relative}"
            else:
                entry = f"F {relative} {file_hash(functools.partial(open_regular, path, follow=False))}"
            sha.update(entry.encode("utf-8", "surrogateescape") + b"\0")
    return HASH_PREFIX + sha.hexdigest()


def stored_verdicts(criteria: Sequence[CriterionResult]) -> dict[int, CriterionResult]:
    """The verdicts of an earlier scoring a later one may reuse, by criterion index: judges' verdicts that carry a
    hash and no error (a failed call, or a verdict that could not be scored, is asked again)."""
    return {c.index: c for c in criteria if c.error is None and INPUT_HASH in c.details}


def reused(criterion: JudgeBase, ctx: CheckContext, key: VerdictKey) -> Outcome | None:
    """The stored verdict at this criterion's index when its call would be byte-identical, marked reused; else None.

    Only the score and its evidence are taken: whether it passes is decided
    again, so a changed ``pass_threshold`` (or weight) applies without a call.
    """
    stored = ctx.verdicts.get(ctx.index)
    if stored is None or stored.type != criterion.type or not key.matches(stored.details):
        return None
    return Outcome(stored.score, {**stored.details, REUSED: True})
