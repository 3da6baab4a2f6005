"""CPython's cycle collector held off while a part builds millions of objects it keeps.

Reading a 100,000-entry reflog, or 100,000 stored runs, makes millions of tuples, strings and
records, nearly all kept, none in a cycle; the collections their allocation sets off walk every
one of them again and again (more than the reading itself costs: a third of the time of reading
100,000 runs, benchmarks/history_speed.py). A leaf: it imports nothing of timeline.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["uncollected"]


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
