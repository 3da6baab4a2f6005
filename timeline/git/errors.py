"""The one exception the git package raises to its callers."""

from __future__ import annotations

from timeline.errors import TimelineError

__all__ = ["GitError"]


class GitError(TimelineError):
    """Not a usable repository. The message is one clear line naming the path."""
