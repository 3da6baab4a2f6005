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
    """One ``displayable`` walk. A record reached twice is looked at once: the events of a
    checkout moved back and forth share each commit's one ``CommitInfo`` (a 100,000-entry
    reflog: 3.5 million listings of 21,000 commits, 17 s walked one by one)."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[Any, Any]] = {}  # id -> (the record, kept alive; its result)

    def shown(self, value: Any) -> Any:
        if isinstance(value, str):
            return visible(value)
        known = self.seen.get(id(value))
        if known is not None:
            return known[1]
        if isinstance(value, (list, tuple)):
            items = [self.shown(item) for item in value]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
        if isinstance(value, dict):
            pairs = [(self.shown(key), self.shown(item)) for key, item in value.items()]
            if all(k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(pairs, value.items(), strict=True)):
                return value
            return dict(pairs)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {}
            for name in _init_fields(type(value)):
                old = getattr(value, name)
                new = self.shown(old)
                if new is not old:
                    changes[name] = new
            result = dataclasses.replace(value, **changes) if changes else value
            self.seen[id(value)] = (value, result)
            return result
        return value  # numbers, datetimes, samples (numbers and timestamps in columns)


@functools.cache
def _init_fields(cls: type) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(cls) if field.init)
