"""CPython's cycle collector held off while a part builds millions of objects it keeps, and a
command's answer of millions of objects held to the end of the process rather than freed.

Reading a 100,000-entry reflog, or 100,000 stored runs, makes millions of tuples, strings and
records, nearly all kept, none in a cycle; the collections their allocation sets off walk every
one of them again and again (more than the reading itself costs: a third of the time of reading
100,000 runs, benchmarks/history_speed.py). So do the imports of the command line, a command's
modules and numpy: their objects live as long as the process (15-20 ms of collections in a
build's start-up, 3 ms held off). A leaf: it imports nothing of timeline.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["uncollected", "holding_to_exit", "hold_to_exit", "exit_unfreed"]

# What ``hold_to_exit`` holds; None unless the console entry point asked for it (a library
# caller's or a test's answers are freed as usual, not kept for the life of the process).
_held: list[object] | None = None


@contextmanager
def uncollected() -> Iterator[None]:
    """The cycle collector off while the block runs. Once it is over, every young object (what
    was made) is put with the oldest at once (``gc.freeze`` then ``gc.unfreeze``), not walked by
    a young collection then and by a middle one soon after (a second of 100,000 runs' objects, a
    third of one of a 100,000-entry reflog's, paid by the outputs). The few cycles left as
    garbage (about a thousand objects for 18 runs) are then freed by the next full collection,
    not the next young one. Not when the process froze objects of its own (a server before it
    forks): those would be let go too. Nested, only the outermost one does it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def holding_to_exit() -> None:
    """From now on ``hold_to_exit`` holds what it is given, for ``exit_unfreed``: only the
    console entry point, which ends the process once its one command is over, calls this."""
    global _held
    _held = []


def hold_to_exit(answer: object) -> None:
    """Hold a command's answer, its outputs written, to the end of the process (when
    ``holding_to_exit`` was called), for ``exit_unfreed`` to end it without freeing it object by
    object: 100,000 stored runs and their values are a million objects."""
    if _held is not None:
        _held.append(answer)


def exit_unfreed(code: object) -> None:
    """End the process now with the exit status ``code`` (``SystemExit.code``) when an answer
    is held: the standard streams flushed and the ``atexit`` functions run, as at a normal exit,
    but no object freed (``os._exit``). Returns, for the usual exit, when nothing is held, the
    code is a message, or a stream cannot be flushed (a closed pipe: the usual exit says so as
    it always did)."""
    if not _held or not (code is None or isinstance(code, int)):
        return
    try:
        _flush()
    except (OSError, ValueError):
        return
    # what interpreter shutdown runs first, before it frees the modules and what they hold
    atexit._run_exitfuncs()
    try:
        _flush()  # what those functions wrote
    except (OSError, ValueError):
        code = 120  # the status of an interpreter that could not flush its streams at exit
    os._exit(code or 0)


def _flush() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
