"""The command line's options, generated from the models that declare them (``RunSpec``, ``RunOptions``).

A field with a ``cli`` extra (``core.run_spec.cli``) becomes an argument:
its flags, its description as help, the model's default, and a type checked
at parse time from its annotation and spelling (a whole number within its
bounds, one of its choices, a list given by repeating the flag or
comma-separated, a switch for a bool), so that a bad value is one argparse
line, exit 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo


def add_model_arguments(
    parser: argparse.ArgumentParser, model: type[BaseModel], only: Iterable[str] | None = None
) -> None:
    """Every field of ``model`` that has flags (or only those named), as ``parser`` arguments."""
    wanted = set(only) if only is not None else None
    for name, info in model.model_fields.items():
        spelling = _spelling(info)
        if spelling is None or (wanted is not None and name not in wanted):
            continue
        flags = spelling["flags"]
        if not flags[0].startswith("-"):
            parser.add_argument(
                name, nargs="*", type=given, default=_default(info), metavar=spelling["metavar"], help=info.description
            )
            continue
        parser.add_argument(*flags, dest=name, help=info.description, **_argument(info, spelling))


def model_values(model: type[BaseModel], args: argparse.Namespace) -> dict[str, Any]:
    """The parsed values of ``model``'s fields present in ``args`` (to build the model from)."""
    return {name: getattr(args, name) for name in model.model_fields if hasattr(args, name)}


def flags_of(model: type[BaseModel], name: str | None = None) -> list[str]:
    """The flags of field ``name``, or of every field of the model (the docs list them all)."""
    if name is None:
        fields = list(model.model_fields.values())
    else:
        fields = [model.model_fields[name]] if name in model.model_fields else []
    return [flag for info in fields for flag in (_spelling(info) or {"flags": []})["flags"] if flag.startswith("-")]


def _spelling(info: FieldInfo) -> dict[str, Any] | None:
    extra = info.json_schema_extra
    found = extra.get("cli") if isinstance(extra, dict) else None
    return found if isinstance(found, dict) else None


def _default(info: FieldInfo) -> Any:
    return info.get_default(call_default_factory=True)


def _argument(info: FieldInfo, spelling: dict[str, Any]) -> dict[str, Any]:
    """``add_argument``'s keywords for a flagged field."""
    annotation = _without_none(info.annotation)
    keywords: dict[str, Any] = {"default": _default(info)}
    if spelling["metavar"]:
        keywords["metavar"] = spelling["metavar"]
    if annotation is bool:
        return {"action": "store_true", "default": False}
    if typing.get_origin(annotation) is list:
        if spelling["repeatable"]:
            return {**keywords, "action": "append"}
        return {**keywords, "type": _comma_list}
    if spelling.get("choices"):
        if spelling.get("refused"):
            keywords["type"] = _not_refused(spelling["refused"])
        return {**keywords, "choices": spelling["choices"]}
    if annotation is int:
        return {**keywords, "type": _whole_number(_lower_bound(info), _upper_bound(info), spelling.get("beyond"))}
    if annotation is str:
        keywords["type"] = given
    return keywords


def given(text: str) -> str:
    """A value that is there: an empty one (``--runs-dir "$OUT"`` with ``OUT`` unset) is refused, where it would
    be taken as the current folder, or as not given."""
    if not text:
        raise argparse.ArgumentTypeError("empty value (an unset variable?)")
    return text


def given_path(text: str) -> Path:
    """A path option's value: ``given``, as a ``Path`` (``Path('')`` is the current folder)."""
    return Path(given(text))


def folder_problem(path: Path) -> str | None:
    """Why ``path`` is no folder to work on (None: it is one): a mistyped one would be worked on as empty."""
    if path.is_dir():
        return None
    return "is not a folder" if path.exists() else "no such folder"


def _without_none(annotation: Any) -> Any:
    """``X | None`` -> ``X``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kept = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return kept[0] if len(kept) == 1 else annotation
    return annotation


def _lower_bound(info: FieldInfo) -> int | None:
    return next((int(item.ge) for item in info.metadata if getattr(item, "ge", None) is not None), None)


# A count with no bound of its own is at most what Python takes as a size (an `islice` stop, a range's length):
# over it, the run failed at its start with an internal error.
LARGEST_COUNT = sys.maxsize


def _upper_bound(info: FieldInfo) -> int:
    return next((int(item.le) for item in info.metadata if getattr(item, "le", None) is not None), LARGEST_COUNT)


# Days back from now (prune --keep-days, history --days): ~270 years, before any run; a cutoff further back would be
# a date before year 1 (Python) or an interval over DuckDB's 32 bits of days.
MAX_DAYS = 100_000


def _whole_number(minimum: int | None, maximum: int | None = None, beyond: str | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            why = f" ({beyond})" if beyond else ""
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {value}{why}")
        return value

    return parse


def _not_refused(refused: dict[str, str]) -> Callable[[str], str]:
    """A choice another tool takes and this one does not: refused with its reason, not a bare 'invalid choice'."""

    def parse(text: str) -> str:
        if text.lower() in refused:
            raise argparse.ArgumentTypeError(f"{text!r}: {refused[text.lower()]}")
        return text

    return parse


def _comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


# ----------------------------------------------------------------------------- coder_eval's process options


def logging_arguments(parser: argparse.ArgumentParser, log_file: bool = False) -> None:
    """coder_eval's ``-v/--verbose`` (and ``--log-file FILE``): see ``configure_logging``."""
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log records at DEBUG level on stderr (coder_eval's -v)"
    )
    if log_file:
        parser.add_argument("--log-file", type=given_path, metavar="FILE", help="log records also to FILE (appended)")


LOGGER = "coder_eval_dagster"
LOG_FORMAT = "%(asctime)s [%(levelname)s] %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    """A log line with every known secret value masked: `-v` and `--log-file` show records (an API error's body,
    a crash's traceback) that may quote a key."""

    def format(self, record: logging.LogRecord) -> str:
        from .core.secrets import redact

        return redact(super().format(record))


class DatabaseRetries(logging.Filter):
    """dagster-postgres retries a refused connection for about 12 s, warning four lines on the root logger each
    time: the first said on one line, the rest dropped (the run then ends with one line saying why)."""

    RETRYING = "Retrying failed database connection"

    def __init__(self) -> None:
        super().__init__()
        self.said = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(self.RETRYING):
            return True
        if self.said:
            return False
        self.said = True
        first = next((line for line in record.getMessage().splitlines() if line.strip()), "")
        record.msg, record.args = f"{first}; retrying for a few seconds", ()
        return True


class RedactedLastResort(logging.StreamHandler[typing.TextIO]):
    """Python's last resort (a warning of a logger with no handler, on the stderr of the moment, the message alone),
    its secrets masked: without ``-v`` the package's warnings (a model's 401 quoting the key) reached the terminal
    through ``logging.lastResort``, which no formatter of ours touched."""

    def __init__(self) -> None:
        super().__init__()
        self.setLevel(logging.WARNING)
        self.setFormatter(RedactingFormatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.setStream(sys.stderr)  # as the last resort writes: where stderr is now, not where it was at start
        super().emit(record)


def configure_logging(verbose: bool, log_file: Path | None) -> None:
    """As coder_eval's ``setup_logging``: the package's log records at DEBUG with ``-v`` (else INFO), on stderr
    and, with ``--log-file``, in that file too. Without either flag only warnings reach stderr, redacted."""
    logging.lastResort = RedactedLastResort()
    if not verbose and log_file is None:
        return
    logger = logging.getLogger(LOGGER)
    level = logging.DEBUG if verbose else logging.INFO
    logger.setLevel(level)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(level if verbose else logging.WARNING)  # --log-file alone: the console as without it
    console.setFormatter(RedactingFormatter(LOG_FORMAT if verbose else "%(message)s", "%H:%M:%S"))
    logger.addHandler(console)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        to_file = logging.FileHandler(log_file, encoding="utf-8")
        to_file.setLevel(level)
        to_file.setFormatter(RedactingFormatter(LOG_FORMAT, "%Y-%m-%d %H:%M:%S"))
        logger.addHandler(to_file)
    logger.propagate = False
    logger.debug("logging configured: level=%s, file=%s", logging.getLevelName(level), log_file)


class _Refused(argparse.Action):
    """An option of coder_eval's that is not supported here: one line saying why, and what to use instead."""

    def __init__(self, option_strings: list[str], dest: str, why: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.why = why

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parser.error(f"argument {'/'.join(self.option_strings)}: not supported: {self.why}")


def refuse(parser: argparse.ArgumentParser, *flags: str, why: str) -> None:
    """coder_eval's ``flags`` (with or without a value), refused in one line by ``why``; hidden from --help."""
    parser.add_argument(*flags, action=_Refused, why=why, nargs="?", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


class UsageError(Exception):
    """An option's value the model refused, or a command given wrongly: one line, exit 2."""
