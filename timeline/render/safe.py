"""Values from untrusted sources, made safe to show.

Every string in a timeline came from someone else's files: log lines and ``server_args``,
reflog messages, commit subjects, file names. Shown as they are, an escape sequence in any of
them (``ESC [2J``, an OSC 8 link, an 8-bit CSI ``\\x9b``) is obeyed by the terminal, and a
Trojan-Source bidi override reorders what the reader sees (CVE-2021-42574). So every view
(table, warnings, markdown, CSV, HTML) shows ``displayable(timeline)``: each control
character, bidi control and lone surrogate written out as its escape (``\\x1b``,
``\\u202e``), and a byte of a non-UTF-8 file name (Python's surrogate escape, PEP 383) as the
byte (``\\xff``). The JSON keeps the values as they are: its own escapes are exact.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from datetime import date, datetime, time, timedelta
from operator import is_not
from typing import Any, TypeVar

__all__ = ["displayable", "visible"]

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE_BYTES = range(0xDC80, 0xDD00)  # os.fsdecode's escape of the bytes 0x80-0xff

T = TypeVar("T")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code in _SURROGATE_BYTES:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every character that would act rather than show written as its escape."""
    return text if _UNSAFE.search(text) is None else _UNSAFE.sub(_escape, text)


def displayable(value: T) -> T:
    """A copy of ``value`` (a ``Timeline``, or any part of one) with ``visible`` applied to every
    string in it, dict keys included; parts with nothing to escape are shared, not copied."""
    return _Shown().shown(value)


class _Shown:
    """One ``displayable`` walk. A record, list or dict reached twice is looked at once: the events
    of a checkout moved back and forth share each commit's one ``CommitInfo`` (a 100,000-entry
    reflog: 3.5 million listings of 21,000 commits, 17 s walked one by one), and the runs of a
    store reading share their server arguments (timeline.store.reading). A string met again is
    looked up, not searched again (the same log name, zone and commit on every run)."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[Any, Any]] = {}  # id -> (the value, kept alive; its result)
        self.texts: dict[str, str] = {}

    def text(self, value: str) -> str:
        shown = self.texts.get(value)
        if shown is None:
            shown = self.texts[value] = visible(value)
        # an escape is longer than what it escapes: the same length is the same text, and the
        # value itself is given back (the parts with nothing to escape are shared)
        return value if len(shown) == len(value) else shown

    def shown(self, value: Any) -> Any:
        kind: type = type(value)
        if kind is str:
            return self.text(value)
        if kind in _NO_TEXT:
            return value
        if kind in _CONTAINERS and not value:
            return value
        known = self.seen.get(id(value))
        if known is not None:
            return known[1]
        if kind is list or kind is tuple:
            result = self._sequence(value)
        elif kind is dict:
            result = self._dict(value)
        else:
            plan = _plan(kind)
            if plan is not None:
                result = self._record(value, plan)
            elif isinstance(value, str):  # a str subclass (markdown's Markdown): its text
                return visible(value)
            elif isinstance(value, (list, tuple)):  # a NamedTuple
                result = self._sequence(value)
            elif isinstance(value, dict):
                result = self._dict(value)
            else:
                return value  # numbers, datetimes, samples (numbers and timestamps in columns)
        self.seen[id(value)] = (value, result)
        return result

    def _sequence(self, value: list[Any] | tuple[Any, ...]) -> Any:
        try:  # a list of text (a shift side's 250 run ids, a commit's paths): one search of it all
            if _UNSAFE.search("".join(value)) is None:
                return value
        except TypeError:  # not all of it text
            pass
        items = list(map(self.shown, value))
        if not any(map(is_not, items, value)):
            return value
        return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)

    def _dict(self, value: dict[Any, Any]) -> dict[Any, Any]:
        keys = list(map(self.shown, value))
        items = list(map(self.shown, value.values()))
        if not any(map(is_not, keys, value)) and not any(map(is_not, items, value.values())):
            return value
        return dict(zip(keys, items, strict=True))

    def _record(self, value: Any, names: tuple[str, ...]) -> Any:
        changes = {}
        for name in names:
            old = getattr(value, name)
            kind = type(old)
            if kind in _NO_TEXT:  # by its value, not its declared type: a loaded document's may differ
                continue
            new = self.text(old) if kind is str else self.shown(old)
            if new is not old:
                changes[name] = new
        return dataclasses.replace(value, **changes) if changes else value


# Types that hold no text: a value of one is shown as it is (a run's metrics: 12 numbers and one
# unit each).
_NO_TEXT = frozenset({int, float, bool, type(None), datetime, date, time, timedelta})
_CONTAINERS = frozenset({list, tuple, dict})


@functools.cache
def _plan(cls: type) -> tuple[str, ...] | None:
    """The fields of the dataclass ``cls`` (None: ``cls`` is no dataclass)."""
    if not dataclasses.is_dataclass(cls):
        return None
    return tuple(field.name for field in dataclasses.fields(cls) if field.init)
