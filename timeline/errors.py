"""Errors the CLI turns into one-line messages and exit codes (see timeline.exitcodes)."""

from __future__ import annotations

import errno

from timeline.exitcodes import ExitCode


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, stopping a command as Ctrl-C does (caught where Ctrl-C is).

    A subclass, never a bare KeyboardInterrupt: CPython remembers a bare one that left code run by
    exec() of a string (dataclasses and namedtuple make their methods so) even once it is caught,
    and ``python -m`` then ends the process by SIGINT whatever status it exits with (the check is
    ``== PyExc_KeyboardInterrupt`` in Python/pythonrun.c, run_eval_code_obj; the kill in
    Modules/main.c, Py_RunMain; https://github.com/python/cpython/pull/11862)."""


class TimelineError(Exception):
    """Something stopped the work; the message is one line naming the file involved.
    ``exit_code``: the status the CLI exits with (one per kind of mistake)."""

    exit_code = ExitCode.ERROR


class NoLogsError(TimelineError):
    """No log to read under the paths given (an empty folder, a glob that matched nothing)."""


class UsageError(TimelineError):
    """The user asked for something impossible: a missing path, an unknown zone.

    ``option`` is the Python name of the parameter at fault (``"log_tz"``), ``value`` the value
    given. With an option, ``detail`` is the message without its subject and ``str()`` starts with
    the parameter's name (``log_tz 'x': empty pattern before '='``); the CLI puts the flag there
    instead. The library names no flag.
    """

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, *, option: str | None = None, value: str | None = None):
        super().__init__(message)
        self.detail = message
        self.option = option
        self.value = value

    def __str__(self) -> str:
        return self.subject_as(self.option)

    def subject_as(self, subject: str | None) -> str:
        """The message with ``subject`` (a parameter name, or the CLI's flag) in front of the detail."""
        return f"{subject} {self.detail}" if subject else self.detail

    def __reduce__(self):  # keep option and value through pickling (worker processes)
        return _usage_error, (type(self), self.detail, self.option, self.value)


def _usage_error(cls: type[UsageError], message: str, option: str | None, value: str | None) -> UsageError:
    return cls(message, option=option, value=value)


# A path the user named that cannot be written, whatever the data: a mistake on the command line.
# The rest (ENOSPC, EDQUOT, EFBIG, EIO...) is the machine failing on the way.
PATH_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EEXIST,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENAMETOOLONG,
        errno.ELOOP,
    }
)


class OutputError(UsageError):
    """A file the user asked for could not be written; nothing half-written was left.

    ``errno`` says which kind: a path that cannot take the file (``PATH_ERRNOS``: exit status
    ``USAGE``) or a failure on the way (a full disk: ``ERROR``).
    """

    def __init__(self, message: str, error_number: int | None, *, option: str | None = None):
        super().__init__(message, option=option)
        self.errno = error_number
        self.exit_code = ExitCode.USAGE if error_number in PATH_ERRNOS else ExitCode.ERROR

    def __reduce__(self):
        return _output_error, (self.detail, self.errno, self.option)


def _output_error(message: str, error_number: int | None, option: str | None) -> OutputError:
    return OutputError(message, error_number, option=option)
