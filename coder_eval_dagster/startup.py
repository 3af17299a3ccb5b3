"""The cyclic garbage collector while a `coder-eval` process starts (why: program.py's docstring).

Apart from program.py so that the commands, which know when their heavy
imports are done, can say so without importing the program that runs them.
"""

from __future__ import annotations

import gc

# The run frees nearly everything it allocates by reference counting, and at the default threshold
# (700) the collector ran ~600 young and 4 full collections in a 1,000-row run (0.22 s of 6 s); at
# this one it runs a few young ones (0.05 s; docs/performance.md).
YOUNG_COLLECTION_THRESHOLD = 50_000


def pause_collection() -> None:
    """Off while Dagster and its storage load (about 200,000 long-lived objects)."""
    gc.disable()


def imports_done() -> None:
    """The heavy imports are in: collect cycles again, rarely, and never walk what start-up loaded."""
    if not gc.isenabled():
        gc.freeze()
        gc.set_threshold(YOUNG_COLLECTION_THRESHOLD)
        gc.enable()
