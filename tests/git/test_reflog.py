"""The tolerant bytes parser on its own (no repository)."""

from __future__ import annotations

import gc
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from timeline.git.reflog import parse_reflog, tz_offset

A = "a" * 40
B = "b" * 40
C = "c" * 40
S256 = "d" * 64
SRC = "logs/HEAD"


def raw(
    old=A, new=B, ts=1_700_000_000, tz="+0000", msg: bytes | None = b"commit: x", ident=b"Ann Tester <ann@example.com>"
) -> bytes:
    head = f"{old} {new} ".encode() + ident + f" {ts} {tz}".encode()
    return head if msg is None else head + b"\t" + msg


def parse(data: bytes):
    return parse_reflog(data, SRC)


def test_the_entries_read_join_the_oldest_objects_at_once():
    # a 100,000-entry reflog's entries, left young, were walked by a young collection and again by
    # a middle one as soon as the collector came back on
    thresholds = gc.get_threshold()
    gc.set_threshold(1_000_000)  # no collection of its own while the test looks
    try:
        entries = parse(b"\n".join(raw(ts=1_700_000_000 + n) for n in range(1000)) + b"\n").entries
        assert len(entries) == 1000 and gc.isenabled()
        young = {id(o) for o in gc.get_objects(0)} | {id(o) for o in gc.get_objects(1)}
        assert not young & {id(entry) for entry in entries}
    finally:
        gc.set_threshold(*thresholds)


def test_well_formed_lines():
    p = parse(raw() + b"\n" + raw(B, C, msg=b"pull --rebase origin main (pick): x") + b"\n")
    assert p.diagnostics == [] and p.lines == 2
    e1, e2 = p.entries
    assert (e1.old, e1.new, e1.name, e1.email, e1.ts, e1.tz, e1.message, e1.line) == (
        A,
        B,
        "Ann Tester",
        "ann@example.com",
        1_700_000_000,
        "+0000",
        "commit: x",
        1,
    )
    assert e2.line == 2 and e2.message.endswith("(pick): x")


def test_no_tab_means_no_message():
    p = parse(raw(msg=None) + b"\n")
    assert p.diagnostics == []
    assert p.entries[0].message is None and p.entries[0].display_message == ""


def test_empty_message_after_tab_and_odd_identities():
    p = parse(
        raw(msg=b"") + b"\n" + raw(ident=b"x <>") + b"\n" + raw(ident="Jürgen 山田 <j ü@例え.jp>".encode()) + b"\n"
    )
    assert p.diagnostics == []
    assert p.entries[0].message == ""
    assert (p.entries[1].name, p.entries[1].email) == ("x", "")
    assert (p.entries[2].name, p.entries[2].email) == ("Jürgen 山田", "j ü@例え.jp")


def test_timezones():
    assert tz_offset("+0530") == timedelta(hours=5, minutes=30)
    assert tz_offset("-0330") == -timedelta(hours=3, minutes=30)
    assert tz_offset("-0000") == timedelta(0)
    assert tz_offset("+1345") == timedelta(hours=13, minutes=45)
    e = parse(raw(tz="+0545") + b"\n").entries[0]
    assert e.when().utcoffset() == timedelta(hours=5, minutes=45)
    assert int(e.when().timestamp()) == 1_700_000_000


def test_sha256_line():
    p = parse(raw(S256, S256) + b"\n")
    assert p.diagnostics == [] and p.entries[0].old == S256


def test_mixed_lengths_flagged():
    p = parse(raw(A, S256) + b"\n")
    assert len(p.entries) == 1 and "different lengths" in p.diagnostics[0].message


def test_garbage_and_empty_lines_are_reported_with_line_numbers():
    p = parse(raw() + b"\n\nthis is garbage\n" + raw(B, C) + b"\n")
    assert [e.line for e in p.entries] == [1, 4]
    assert [(d.line, d.message.split(":")[0]) for d in p.diagnostics] == [
        (2, "empty line skipped"),
        (3, "unparseable reflog line skipped (git skips it too)"),
    ]


def test_glued_entry_in_message_and_after_message_less_line():
    glued = raw(msg=b"commit: c3") + raw(B, C, msg=b"commit: c4") + b"\n"
    p = parse(glued)
    assert [(e.old, e.new, e.message, e.line, e.glued) for e in p.entries] == [
        (A, B, "commit: c3", 1, False),
        (B, C, "commit: c4", 1, True),
    ]
    assert [d.line for d in p.diagnostics] == [1]

    glued = raw(msg=None) + raw(B, C, ts=1_700_000_100, msg=b"commit: c4") + b"\n"
    p = parse(glued)
    assert [(e.old, e.message, e.ts, e.name) for e in p.entries] == [
        (A, None, 1_700_000_000, "Ann Tester"),
        (B, "commit: c4", 1_700_000_100, "Ann Tester"),
    ]
    assert "glued" in p.diagnostics[0].message


def test_glued_after_a_message_ending_in_a_full_sha():
    """``checkout: moving from main to <sha>`` + the next entry = an 80-hex run: the boundary
    is found from the file's id length, not the first 64-hex window."""
    first = raw(A, B, msg=f"checkout: moving from main to {C}".encode())
    p = parse(first + raw(B, C, msg=b"commit: next") + b"\n")
    assert [(e.old, e.new, e.message) for e in p.entries] == [
        (A, B, f"checkout: moving from main to {C}"),
        (B, C, "commit: next"),
    ]

    s1, s2 = "1" * 64, "2" * 64
    first = raw(s1, s2, msg=f"checkout: moving from main to {s1}".encode())
    p = parse(first + raw(s2, s1, msg=b"commit: next") + b"\n")
    assert [(e.old, e.message) for e in p.entries] == [
        (s1, f"checkout: moving from main to {s1}"),
        (s2, "commit: next"),
    ]


def test_thousands_of_glued_entries_on_one_line_and_overlong_lines():
    blob = b"".join(raw(A, B, ts=1_700_000_000 + i, msg=b"commit: x") for i in range(5000)) + b"\n"
    p = parse(blob)
    assert len(p.entries) == 5000 and p.entries[-1].ts == 1_700_004_999
    assert all(e.message == "commit: x" for e in p.entries)

    p = parse(raw(msg=b"x" * (1024 * 1024 + 1)) + b"\n" + raw(B, C) + b"\n")
    assert [e.line for e in p.entries] == [2]
    assert "longer than" in p.diagnostics[0].message


def test_false_alarm_inside_a_message_is_not_a_split():
    msg = f"commit: revert {A} {B} mess".encode()
    p = parse(raw(msg=msg) + b"\n")
    assert [e.message for e in p.entries] == [msg.decode()] and p.diagnostics == []


def test_torn_prefix_before_an_entry():
    p = parse(b"aaaa5" + raw(B, C) + b"\n")
    assert [e.old for e in p.entries] == [B]
    assert [d.message.split(":")[0] for d in p.diagnostics] == [
        "garbage before an entry dropped",
        "entry glued onto the previous one (that line lost its newline); recovered",
    ]


def test_unterminated_last_line_kept_with_warning():
    p = parse(raw() + b"\n" + raw(B, C))
    assert [e.line for e in p.entries] == [1, 2]
    assert not p.entries[1].terminated
    assert [(d.line, "no trailing newline" in d.message) for d in p.diagnostics] == [(2, True)]

    p = parse(raw() + b"\n" + b"aaaa bbb")  # a torn, unparseable tail
    assert len(p.entries) == 1 and len(p.diagnostics) == 2


def test_ts_zero_latin1_and_crlf():
    p = parse(raw(ts=0) + b"\r\n" + raw(msg=b"commit: caf\xe9") + b"\r\n")
    assert [e.ts for e in p.entries] == [0, 1_700_000_000]
    assert p.entries[1].display_message == "commit: caf\ufffd"
    assert p.entries[1].message.encode("utf-8", "surrogateescape") == b"commit: caf\xe9"
    msgs = [(d.line, d.message.split(" ")[0]) for d in p.diagnostics]
    assert msgs == [(1, "CRLF"), (1, "timestamp"), (2, "message")]


def test_empty_file():
    p = parse(b"")
    assert p.entries == [] and [d.message for d in p.diagnostics] == ["reflog is empty (expired by gc?)"]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_never_raises_on_arbitrary_bytes(data):
    p = parse(data)
    for e in p.entries:
        assert e.line >= 1
        e.display_message  # noqa: B018 - must not raise


_msg = st.text(st.characters(blacklist_characters="\n\t\r", blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([A, B, C]),
            st.sampled_from([A, B, C]),
            st.integers(1, 4_000_000_000),
            st.sampled_from(["+0000", "-0330", "+1345"]),
            _msg,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_generated_valid_logs_round_trip(rows):
    data = b"".join(raw(o, n, ts, tz, m.encode()) + b"\n" for o, n, ts, tz, m in rows)
    p = parse(data)
    assert [(e.old, e.new, e.ts, e.tz, e.message) for e in p.entries] == [(o, n, ts, tz, m) for o, n, ts, tz, m in rows]
    assert [e.line for e in p.entries] == list(range(1, len(rows) + 1))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([A, B, C]), st.booleans(), st.text(alphabet="abcdef0123456789ghij :()+-~", max_size=30)
        ),
        min_size=2,
        max_size=6,
    ),
    st.data(),
)
def test_lost_newlines_are_recovered(rows, data):
    """Drop some newlines (an unterminated line that git later appended to): every entry is
    still recovered, in order, with its message intact."""
    pieces = [
        raw(o, o, 1_700_000_000 + i, "+0000", m.encode() if has_msg else None) for i, (o, has_msg, m) in enumerate(rows)
    ]
    keep = [data.draw(st.booleans()) for _ in pieces]
    blob = b"".join(p + (b"\n" if k else b"") for p, k in zip(pieces, keep, strict=False))
    p = parse(blob)
    assert [(e.old, e.ts) for e in p.entries] == [(o, 1_700_000_000 + i) for i, (o, _, _) in enumerate(rows)]
    expected = [m if has else None for _, has, m in rows]
    assert [e.message for e in p.entries] == expected


_ident_text = st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=25)
_msg_bytes = st.binary(max_size=60).filter(lambda b: b"\n" not in b and b"\r" not in b)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([A, B, C]),
            st.sampled_from([A, B, C]),
            _ident_text,
            st.integers(0, 10**12),
            st.sampled_from(["+0000", "-0330", "+1500", "-0000"]),
            st.one_of(st.none(), _msg_bytes),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_fast_path_agrees_with_the_careful_path(rows):
    """Whatever a line holds, the fast path gives exactly what the careful regex path gives."""
    from timeline.git.reflog import _LINE, _entry

    lines = [raw(o, n, ts, tz, msg, ident=ident.encode("utf-8")) for o, n, ident, ts, tz, msg in rows]
    p = parse(b"\n".join(lines) + b"\n")
    if any("glued" in d.message or "garbage" in d.message for d in p.diagnostics):
        return  # a message that happens to hold an entry
    expected = []
    for no, line in enumerate(lines, 1):
        m = _LINE.match(line)
        if m is not None:
            expected.append(_entry(m, m["msg"], no, False, True))
    assert p.entries == expected
