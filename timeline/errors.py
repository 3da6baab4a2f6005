"""Errors the CLI turns into one-line messages and exit codes (see timeline.exitcodes)."""

from __future__ import annotations


class TimelineError(Exception):
    """Something stopped the work; the message is one line naming the file involved."""


class UsageError(TimelineError):
    """The user asked for something impossible: a missing path, an unknown zone."""
