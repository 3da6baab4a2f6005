"""The store's error: one line, naming the store (its URL without the password) or the log."""

from __future__ import annotations

from timeline.errors import TimelineError


class StoreError(TimelineError):
    """The store could not be read or written: a server that does not answer, a file that is
    not a timeline store, a store made by a newer timeline, a log that cannot be read again.
    (A URL that names no store is a ``UsageError`` of the option ``store``.)"""
