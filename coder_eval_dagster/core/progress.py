"""A tiny in-process event hook: the CLI's progress bar listens, nothing else needs to."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

Listener = Callable[[str, dict[str, Any]], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


def subscribe(listener: Listener) -> None:
    with _lock:
        _listeners.append(listener)


def unsubscribe(listener: Listener) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def emit(event: str, **info: Any) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(event, info)
