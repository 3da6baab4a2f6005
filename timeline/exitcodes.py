"""Every exit status the CLI can return, in one place: the enum, and the table ``--help``, the
README and docs/cli.md show (``exit_code_table``), so the three cannot drift."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    REGRESSION = 3
    UNDECIDED = 4
    INTERRUPTED = 130  # 128 + SIGINT, the shell's convention

    @property
    def meaning(self) -> str:
        return MEANINGS[self]


MEANINGS = {
    ExitCode.OK: "done (warnings, if any, went to stderr)",
    ExitCode.ERROR: "the work failed on the way: a disk full, an I/O error, a checkout git cannot read",
    ExitCode.USAGE: "a mistake on the command line: a path that is missing, of the wrong kind (a folder "
    "for a file) or not writable, an unknown zone or format, a bad option",
    ExitCode.REGRESSION: "--fail-on-regression, and a shift has the verdict 'regression'",
    ExitCode.UNDECIDED: "bisect could not name a commit (the levels were not apart, or skips left a range)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C, SIGTERM, SIGHUP): nothing half-written left behind",
}


def exit_code_table() -> list[tuple[int, str]]:
    """``(status, meaning)`` for every exit status, in order."""
    return [(int(code), code.meaning) for code in ExitCode]
