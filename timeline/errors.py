"""Errors the CLI turns into one-line messages and exit codes (see timeline.exitcodes)."""

from __future__ import annotations


class TimelineError(Exception):
    """Something stopped the work; the message is one line naming the file involved."""


class UsageError(TimelineError):
    """The user asked for something impossible: a missing path, an unknown zone.

    ``option`` is the Python name of the parameter at fault (``"log_tz"``), ``value`` the value
    given. With an option, ``detail`` is the message without its subject and ``str()`` starts with
    the parameter's name (``log_tz 'x': empty pattern before '='``); the CLI puts the flag there
    instead. The library names no flag.
    """

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
