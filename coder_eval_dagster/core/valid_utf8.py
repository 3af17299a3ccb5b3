"""Text from the file system made valid UTF-8 before a run writes it.

Python decodes a file name that is not UTF-8 (``os.listdir``, a glob) with
surrogate escapes: a name starting with byte 0xff reads as ``'\\udcffevil.txt'``.
Criteria put such names into their details and errors, and no JSON or HTML
writer takes them. One pass over the evaluation's result, before it is
written, shows each such byte as a ``\\xff`` escape: the evidence stays
readable and every writer after it gets valid text.

The pass walks every field of every model (~30 us a result); ``valid_json``
takes it only when the JSON writer has met such a string.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def valid_utf8(value: T) -> T:
    """``value`` with every string in it encodable as UTF-8; the very same object when nothing needed it."""
    return _valid(value)  # type: ignore[no-any-return]  # _valid keeps each value's type, which Any cannot say


def valid_json(model: M, indent: int | None = None) -> tuple[M, str]:
    """``model`` made valid UTF-8 (the same object when it was) and its JSON."""
    try:
        return model, model.model_dump_json(indent=indent)
    except PydanticSerializationError as error:
        if "UnicodeEncodeError" not in str(error):
            raise
    model = valid_utf8(model)
    return model, model.model_dump_json(indent=indent)


def _valid(value: Any) -> Any:
    if isinstance(value, str):
        return _valid_text(value)
    if isinstance(value, BaseModel):
        changed = {name: new for name, old in value if (new := _valid(old)) is not old}
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, list):
        items = [_valid(item) for item in value]
        return items if any(new is not old for new, old in zip(items, value, strict=True)) else value
    if isinstance(value, dict):
        pairs = [(_valid(key), _valid(item)) for key, item in value.items()]
        same = all(k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)
    return value


def _valid_text(text: str) -> str:
    """Surrogate-escaped bytes as ``\\xNN``; any other lone surrogate as ``\\udNNN``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte was escaped to (a JSON string's lone \ud800)
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
