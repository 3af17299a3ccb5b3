"""Reading a run folder's ``snapshot.pickle`` without running what a pickle may name.

A plain ``pickle.loads`` calls any function the file names: a run folder
handed around (a CI artifact, a colleague's run) whose snapshot was replaced
ran its own code on ``report --rebuild``, ``rescore`` and ``--resume``. A
snapshot holds only records (pydantic models, dataclasses, enums) of
coder-eval's own modules and of the installed packages' criteria modules
registered in this process, and paths; nothing else is looked up, and no
module is imported that is not already.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import pickle
from typing import Any

from pydantic import BaseModel

PACKAGE = __name__.split(".")[0] + "."
PATHS = frozenset({"Path", "PosixPath", "PurePath", "PurePosixPath"})


class _RecordsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "pathlib" and name in PATHS:
            return super().find_class(module, name)
        if module.startswith(PACKAGE) or module in _criteria_modules():
            found = super().find_class(module, name)
            if _a_record(found):
                return found
        raise pickle.UnpicklingError(f"it names {module}.{name}, which no snapshot holds")


def _criteria_modules() -> set[str]:
    """The modules of the criterion models registered now (an installed package's criteria: imported already)."""
    from .models.criterion import MODELS

    return {model.__module__ for model in MODELS.values()}


def _a_record(found: object) -> bool:
    """A class whose construction runs no code of the file's choosing: a model, a dataclass or an enum of ours."""
    return isinstance(found, type) and (issubclass(found, BaseModel | enum.Enum) or dataclasses.is_dataclass(found))


def loads(data: bytes) -> object:
    """``pickle.loads`` of a snapshot: UnpicklingError when the file names anything but coder-eval's records."""
    return _RecordsOnly(io.BytesIO(data)).load()
