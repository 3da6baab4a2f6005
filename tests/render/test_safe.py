"""timeline.render.safe: untrusted text shown, never obeyed."""

from __future__ import annotations

import os
from datetime import datetime, timezone

from hypothesis import given
from hypothesis import strategies as st

from timeline.model import CodeEvent, CommitInfo, Diagnostic
from timeline.render.safe import displayable, visible


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
