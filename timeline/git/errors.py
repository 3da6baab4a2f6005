"""The exceptions the git package raises to its callers."""

from __future__ import annotations

from timeline.errors import TimelineError, UsageError

__all__ = ["GitError", "NoRepositoryError"]


class GitError(TimelineError):
    """Not a usable repository. The message is one clear line naming the path."""


class NoRepositoryError(GitError, UsageError):
    """The path given for the repository is missing or in no checkout: a mistake on the command
    line, with the status of a missing log path (``option``: the parameter, ``repo``)."""
