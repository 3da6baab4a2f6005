"""Every exit status the CLI can return, in one place."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # done; warnings may have been reported
    ERROR = 1  # an error stopped the work
    USAGE = 2  # bad usage: a missing path, an unknown zone, a bad option
    REGRESSION = 3  # --fail-on-regression: a shift has the verdict "regression"
    UNDECIDED = 4  # bisect could not name a commit: the levels were not apart, or skips left a range
    INTERRUPTED = 130  # Ctrl-C or SIGTERM stopped it (128 + SIGINT, the shell's convention); nothing left behind
