"""The store: runs, code events and machines kept across builds, in SQLite or PostgreSQL.

``timeline ingest`` writes a build into it; ``timeline history`` reads everything back::

    store = open_store(None, os.environ)  # --store URL > TIMELINE_STORE > the user's SQLite file
    result = store.ingest(timeline, machine_of(timeline, "gpu-node-3", host), keep_samples=False)
    for history in store.read(machine="gpu-node-3"):
        history.runs  # typed timeline.model.Run, as build made them

The schema is made, or migrated from an older timeline's, when the store is opened
(timeline.store.database); a store made by a newer timeline is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from timeline.model import Timeline
from timeline.store.database import STORE_VARIABLE, Database, default_path, store_url
from timeline.store.errors import StoreError
from timeline.store.machine import Machine, machine_of
from timeline.store.reading import StoredHistory

if TYPE_CHECKING:
    from timeline.store.writing import IngestResult

__all__ = [
    "open_store",
    "Store",
    "Machine",
    "machine_of",
    "IngestResult",
    "StoredHistory",
    "StoreError",
    "STORE_VARIABLE",
    "default_path",
]


def __getattr__(name: str) -> Any:
    """``IngestResult``, imported when first named: the writing and keying of runs are an
    ingest's, and ``timeline history`` starts without them (0.05-0.1 s of imports)."""
    if name == "IngestResult":
        from timeline.store.writing import IngestResult

        return IngestResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Store:
    """An open store (``open_store``). ``close()`` when done, or use it as a context manager."""

    def __init__(self, database: Database, now: Callable[[], datetime] = _utc_now) -> None:
        self._database = database
        self._now = now

    @property
    def url(self) -> str:
        """The store's URL, password hidden."""
        return self._database.shown

    def ingest(self, timeline: Timeline, machine: Machine, keep_samples: bool = False) -> IngestResult:
        """Store ``timeline``'s runs (with their samples when ``keep_samples`` and the build kept
        them), code events and commits, as ``machine``'s: one transaction; what the store already
        has is counted as known. Reads each run's log again to key it (timeline.store.keys)."""
        from timeline.store import writing
        from timeline.store.keys import run_keys

        keys = run_keys(timeline.runs)
        now = self._now()
        return self._database.write(
            lambda connection: writing.ingest(connection, timeline, machine, keys, keep_samples, now)
        )

    def machines(self) -> list[Machine]:
        """Every machine in the store, by name."""
        from timeline.store import reading

        with self._database.reading() as connection:
            return reading.machines(connection)

    def read(
        self, machine: str | None = None, since: datetime | None = None, *, with_samples: bool = True
    ) -> list[StoredHistory]:
        """Each machine's stored runs and events (``StoredHistory``), the machines by name
        (``machine``: that one only), from ``since`` on (a naive time is UTC; runs without a start
        are then left out). ``with_samples=False`` skips the stats lines of runs ingested with
        them (faster)."""
        from timeline.store import reading

        return reading.read(self._database, machine, since, with_samples)

    def close(self) -> None:
        self._database.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(
    url: str | None, environ: Mapping[str, str] = os.environ, *, now: Callable[[], datetime] = _utc_now
) -> Store:
    """The store at ``url`` (else ``TIMELINE_STORE`` in ``environ``, else the SQLite file in the
    user's data folder), its schema made or migrated. Raises UsageError (option ``store``) for a
    URL that names no store, StoreError when it cannot be reached or was made by a newer timeline."""
    database = Database(store_url(url, environ))
    try:
        database.migrate()
    except BaseException:
        database.engine.dispose()
        raise
    return Store(database, now)
