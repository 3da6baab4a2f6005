"""timeline.render.safe: untrusted text shown, never obeyed."""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from datetime import datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeline.columns import SampleRows
from timeline.model import CodeEvent, CommitInfo, Diagnostic, Timeline
from timeline.render.safe import _UNSAFE, displayable, visible


def test_control_characters_are_written_as_their_escapes():
    assert visible("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert visible("tab\there\nnew\rret\x00\x7f") == "tab\\x09here\\x0anew\\x0dret\\x00\\x7f"
    assert visible("csi \x9b31m") == "csi \\x9b31m"  # the 8-bit CSI some terminals obey


def test_bidi_controls_are_written_out():
    assert visible("\u202eexe.txt") == "\\u202eexe.txt"
    assert visible("a\u2066b\u2069") == "a\\u2066b\\u2069"


def test_a_non_utf8_file_name_shows_its_bytes():
    assert visible(os.fsdecode(b"node\xff\xfe.log")) == "node\\xff\\xfe.log"
    assert visible("\ud800") == "\\ud800"  # a lone surrogate that is not a byte's escape


def test_plain_text_is_returned_as_it_is():
    text = "Fix PCG MoE Error · 94.1 tok/s → ok"
    assert visible(text) is text


@given(st.text())
def test_what_is_shown_never_acts_and_is_stable(text):
    shown = visible(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF for c in shown)
    assert visible(shown) == shown
    shown.encode("utf-8")  # never raises


def test_displayable_escapes_every_string_and_shares_what_is_clean():
    clean = CommitInfo("a" * 40, "clean subject")
    dirty = CommitInfo("b" * 40, "bad \x1b[31m", paths=("x\x1b.py",))
    event = CodeEvent("e1", datetime(2026, 1, 1, tzinfo=timezone.utc), 0, "pull", "msg", "0", "1", True)
    event.commits = [clean, dirty]
    shown = displayable({"event": event, "warning": Diagnostic("f\x1b.log", 3, "bad")})
    assert shown["event"].commits[0] is clean
    assert shown["event"].commits[1].subject == "bad \\x1b[31m"
    assert shown["event"].commits[1].paths == ("x\\x1b.py",)
    assert str(shown["warning"]) == "f\\x1b.log:3: bad"
    assert event.commits[1].subject == "bad \x1b[31m"  # the original is left as it was


def test_a_record_listed_by_many_events_is_escaped_everywhere_once():
    dirty = CommitInfo("b" * 40, "bad \x1b[31m")
    events = []
    for number in range(3):
        event = CodeEvent(f"e{number}", datetime(2026, 1, 1, tzinfo=timezone.utc), 0, "pull", "m", "0", "1", True)
        event.commits = [dirty]
        event.commits_removed = [dirty] if number == 2 else []
        events.append(event)
    shown = displayable(events)
    copies = [c for e in shown for c in (*e.commits, *e.commits_removed)]
    assert [c.subject for c in copies] == ["bad \\x1b[31m"] * 4
    assert all(c is copies[0] for c in copies)  # one escaped copy, shared as the original was
    assert dirty.subject == "bad \x1b[31m"


# --- every string of a timeline, wherever the model declares one --------------------------------

_UNSAFE_TEXT = st.text(max_size=8).map(lambda t: t + "\x1b[2J\u202e\x9b")
_PLAIN = {int: 3, float: 1.5, bool: True, type(None): None, datetime: datetime(2026, 1, 1, tzinfo=timezone.utc)}


@st.composite
def _filled(draw, hint):
    """A value of the declared type ``hint`` (the model's annotations) with control characters
    in every string it holds: the text in each ``str``, ``Any`` and ``Literal`` place."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is str or hint is typing.Any or origin is typing.Literal:
        return draw(_UNSAFE_TEXT)
    if hint in _PLAIN:
        return _PLAIN[hint]
    if hint is timedelta:
        return timedelta(hours=2)
    if origin in (typing.Union, types.UnionType):
        # a run's samples (numbers and times in columns, never in a view) left None
        arms = [arm for arm in args if arm is not type(None) and SampleRows not in typing.get_args(arm)]
        return draw(_filled(arms[0])) if arms else None
    if origin is list:
        return [draw(_filled(args[0]))]
    if origin is tuple:
        return tuple(draw(_filled(arm)) for arm in (args[:1] if args[-1] is Ellipsis else args))
    if origin is dict:
        return {draw(_filled(args[0])): draw(_filled(args[1]))}
    assert dataclasses.is_dataclass(hint), hint
    hints = typing.get_type_hints(hint)
    return hint(**{f.name: draw(_filled(hints[f.name])) for f in dataclasses.fields(hint) if f.init})


def _strings(value):
    """Every string in ``value``, every field of every record looked at."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
    elif dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            yield from _strings(getattr(value, field.name))


@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(_filled(Timeline))
def test_no_string_of_a_timeline_keeps_a_control_character(timeline):
    assert any(_UNSAFE.search(s) for s in _strings(timeline))  # the test's own check: there is something to escape
    leftover = [s for s in _strings(displayable(timeline)) if _UNSAFE.search(s)]
    assert leftover == []


def test_text_where_a_number_is_declared_is_escaped_too():
    # Python does not enforce a field's declared type: a document read back (timeline.load) from
    # someone else's file may hold text where a line number is declared, and a view shows it
    warning = Diagnostic("x.log", "\x1b[2J", "\x1b]0;pwned\x07")  # type: ignore[arg-type]
    shown = displayable(warning)
    assert (shown.message, shown.line) == ("\\x1b]0;pwned\\x07", "\\x1b[2J")
