"""The cyclic garbage collector while a `coder-eval` process starts (why: program.py's docstring).

Apart from program.py so that the commands, which know when their heavy
imports are done, can say so without importing the program that runs them.
"""

from __future__ import annotations

import gc


def pause_collection() -> None:
    """Off while Dagster and its storage load (about 200,000 long-lived objects)."""
    gc.disable()


def imports_done() -> None:
    """The heavy imports are in: collect cycles again, but never walk what start-up loaded."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
