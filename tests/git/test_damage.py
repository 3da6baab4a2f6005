"""Hand-damaged reflogs in real repositories: entries are kept, problems become diagnostics
with line numbers, nothing is fatal, and dangerous files are refused."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest

from timeline.git import read_history

ZERO = "0" * 40


def setup_repo(bench):
    repo = bench.init()
    c1 = bench.commit("c1")
    c2 = bench.commit("c2")
    log = repo / ".git" / "logs" / "HEAD"
    return repo, log, c1, c2


def line(old, new, ts=1_700_009_000, tz="+0000", msg: bytes | None = b"commit: x") -> bytes:
    head = f"{old} {new} Ann Tester <ann@example.com> {ts} {tz}".encode()
    return head if msg is None else head + b"\t" + msg


def diag_map(h):
    return {(d.line, d.message.split(":")[0].split(" (")[0]) for d in h.diagnostics}


def test_garbage_glued_missing_lf_ts0_sha256_and_latin1(bench):
    repo, log, c1, c2 = setup_repo(bench)
    sha256 = "ab" * 32
    data = log.read_bytes()
    data += b"this is garbage\n"  # line 3
    data += line(c2, c1, msg=b"reset: moving to HEAD~1")  # line 4 ...
    data += line(c1, c2, ts=1_700_009_100, msg=b"reset: moving to main") + b"\n"  # ... glued on
    data += line(c2, c2, ts=0, msg=b"checkout: moving from main to main") + b"\n"  # line 5
    data += line(sha256, sha256, msg=b"commit: from a sha-256 repo") + b"\n"  # line 6
    data += line(c2, c2, msg=b"checkout: moving from caf\xe9 to main") + b"\n"  # line 7 latin-1
    data += line(c2, c1, ts=1_700_009_200, msg=b"reset: moving to HEAD~1")  # line 8, no LF
    log.write_bytes(data)

    h = read_history(repo)
    src = str(log)
    assert all(d.source == src for d in h.diagnostics)
    got = {(d.line, d.message) for d in h.diagnostics}

    def has(lineno, text):
        return any(n == lineno and text in m for n, m in got)

    assert has(3, "unparseable reflog line skipped") and has(3, "'this is garbage'")
    assert has(4, "entry glued onto the previous one")
    assert has(5, "timestamp 0")
    assert has(6, "object id length does not match")
    assert has(7, "not valid UTF-8")
    assert has(8, "no trailing newline")

    msgs = [(e.line, e.message) for e in h.events]
    assert msgs == [
        (1, "commit (initial): c1"),
        (2, "commit: c2"),
        (4, "reset: moving to HEAD~1"),
        (4, "reset: moving to main"),
        (5, "checkout: moving from main to main"),
        (6, "commit: from a sha-256 repo"),
        (7, "checkout: moving from caf\ufffd to main"),
        (8, "reset: moving to HEAD~1"),
    ]
    glued_back, glued_fwd = h.events[2], h.events[3]
    assert [c.subject for c in glued_back.commits_removed] == ["c2"]
    assert [c.subject for c in glued_fwd.commits] == ["c2"]
    assert h.events[4].ts == 0 and h.events[4].time.year == 1970
    assert h.events[5].commits == [] and h.events[5].commits_removed == []
    assert [e.id for e in h.events] == [f"e{i}" for i in range(1, 9)]


def test_no_message_line_and_crlf_and_minus_0000(bench):
    repo, log, c1, c2 = setup_repo(bench)
    with open(log, "ab") as fh:
        fh.write(line(c2, c1, msg=None) + b"\n")  # update-ref without -m
        fh.write(line(c1, c2, tz="-0000", msg=b"reset: moving to main") + b"\r\n")
    h = read_history(repo)
    assert [(e.kind, e.message) for e in h.events[2:]] == [("other", ""), ("reset", "reset: moving to main")]
    assert h.events[3].time.utcoffset().total_seconds() == 0
    assert [(d.line, "CRLF" in d.message) for d in h.diagnostics] == [(4, True)]


def test_missing_object_is_a_diagnostic_not_fatal(bench):
    repo, log, c1, c2 = setup_repo(bench)
    ghost = "dead" * 10
    with open(log, "ab") as fh:
        fh.write(line(c2, ghost, msg=b"reset: moving to somewhere") + b"\n")
        fh.write(line(ghost, c1, msg=b"reset: moving back") + b"\n")
    h = read_history(repo)
    assert len(h.events) == 4
    assert h.events[2].commits == [] and h.events[3].commits == []
    missing = [d for d in h.diagnostics if "not in the object store" in d.message]
    assert [d.line for d in missing] == [3, 4]
    assert ghost[:12] in missing[0].message
    # HEAD (c2) differs from the last entry's new (c1): reported too
    assert any("HEAD now resolves to" in d.message for d in h.diagnostics)
    assert [c.subject for c in h.events[1].commits] == ["c2"]  # the rest still works


def test_many_events_with_missing_objects_are_said_in_a_few_lines(bench):
    """An old checkout whose early moves were gc'd: a warning for the first ones, one for the rest."""
    repo, log, c1, c2 = setup_repo(bench)
    with open(log, "ab") as fh:
        previous = c2
        for i in range(40):
            ghost = f"{i:04x}" * 10
            fh.write(line(previous, ghost, msg=b"reset: moving to somewhere") + b"\n")
            previous = ghost
    h = read_history(repo)
    unlisted = [d for d in h.diagnostics if "not listed" in d.message]
    assert [d.line for d in unlisted] == [4, 5, 6, 7, 8]
    assert "more events whose commits are not listed (lines 8-" in unlisted[-1].message
    assert [c.subject for c in h.events[1].commits] == ["c2"]


def test_empty_reflog_file_falls_back_to_the_branch_log(bench):
    repo, log, _, c2 = setup_repo(bench)
    log.write_bytes(b"")
    h = read_history(repo)
    branch_log = str(repo / ".git" / "logs" / "refs" / "heads" / "main")
    assert h.head == c2 and h.head_log == branch_log
    assert [(e.kind, e.message, e.ref, e.source) for e in h.events] == [
        ("commit", "commit (initial): c1", "refs/heads/main", branch_log),
        ("commit", "commit: c2", "refs/heads/main", branch_log),
    ]
    assert [(d.line, d.message.split(":")[0]) for d in h.diagnostics] == [
        (None, "reflog is empty (expired by gc?)"),
        (None, "HEAD's reflog is empty"),
    ]
    assert "using the log of refs/heads/main instead" in h.diagnostics[1].message
    assert h.coverage.reason == "branch-log"


def test_empty_head_and_branch_logs_give_approximate_events(bench):
    repo, log, _, c2 = setup_repo(bench)
    log.write_bytes(b"")
    (repo / ".git" / "logs" / "refs" / "heads" / "main").write_bytes(b"")
    h = read_history(repo)
    assert h.approximate and [e.approximate for e in h.events] == [True]
    assert h.events[0].new == c2


def test_chain_gap_is_reported(bench):
    repo, log, c1, c2 = setup_repo(bench)
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(lines[1] + lines[1])  # c1 -> c2 twice: the second does not chain
    h = read_history(repo)
    assert any(d.line == 2 and "chain gap" in d.message for d in h.diagnostics)


def test_symlinked_log_is_rejected(bench, tmp_path):
    repo, log, _, _ = setup_repo(bench)
    outside = tmp_path / "outside-log"
    outside.write_bytes(log.read_bytes())
    log.unlink()
    log.symlink_to(outside)
    h = read_history(repo)
    assert [d.message for d in h.diagnostics][:1] == ["reflog is a symbolic link; refused"]
    assert h.diagnostics[0].source == str(log)
    # the refused HEAD log is not read; the branch log (checked on its own) stands in for it
    assert "HEAD's reflog is unreadable" in h.diagnostics[1].message and len(h.diagnostics) == 2
    assert [e.ref for e in h.events] == ["refs/heads/main"] * 2
    assert not h.approximate


def test_symlinked_logs_directory_is_rejected(bench, tmp_path):
    repo, log, _, _ = setup_repo(bench)
    outside = tmp_path / "outside-logs"
    os.rename(repo / ".git" / "logs", outside)
    (repo / ".git" / "logs").symlink_to(outside)
    h = read_history(repo)
    assert h.events == [] and not h.approximate  # refused logs are not "no reflog"
    assert len(h.diagnostics) == 2
    assert all("leads outside the git directory" in d.message for d in h.diagnostics)


def test_fifo_log_is_rejected_without_blocking(bench):
    repo, log, _, _ = setup_repo(bench)
    log.unlink()
    os.mkfifo(log)
    start = time.monotonic()
    h = read_history(repo)
    assert time.monotonic() - start < 5
    assert [d.message for d in h.diagnostics][:1] == ["reflog is not a regular file; refused"]
    assert [e.ref for e in h.events] == ["refs/heads/main"] * 2  # branch log fallback


def test_symlinked_head_ref_is_refused(bench, tmp_path):
    repo, log, _, _ = setup_repo(bench)
    ref = repo / ".git" / "refs" / "heads" / "main"
    target = tmp_path / "elsewhere"
    target.write_text(ref.read_text())
    ref.unlink()
    ref.symlink_to(target)
    h = read_history(repo)
    assert h.head is None
    assert any("symbolic link" in d.message for d in h.diagnostics)
    assert len(h.events) == 2  # the reflog itself is still read


@pytest.mark.parametrize("content", [b"ref: ../../../etc/passwd\n", b"ref: refs/heads/../../x\n"])
def test_head_pointing_outside_is_refused(bench, content):
    repo, _, _, _ = setup_repo(bench)
    (repo / ".git" / "HEAD").write_bytes(content)
    h = read_history(repo)
    assert h.head is None and any("invalid ref" in d.message for d in h.diagnostics)


def test_absurd_timestamp_and_offset(bench):
    repo, log, c1, c2 = setup_repo(bench)
    with open(log, "ab") as fh:
        fh.write(line(c2, c2, ts=10**20, msg=b"checkout: a") + b"\n")  # line 3
        fh.write(line(c2, c2, tz="+9999", msg=b"checkout: b") + b"\n")  # line 4
        fh.write(line(c2, c2, tz="+0575", msg=b"checkout: c") + b"\n")  # line 5
    h = read_history(repo)
    assert [(e.line, e.message) for e in h.events[2:]] == [(4, "checkout: b"), (5, "checkout: c")]
    assert h.events[2].time.utcoffset() == timedelta(0)
    assert h.events[3].time.utcoffset() == timedelta(hours=6, minutes=15)  # 5 h 75 min, as written
    assert [(d.line, d.message) for d in h.diagnostics] == [
        (3, "timestamp 100000000000000000000 is out of range; entry skipped"),
        (4, "UTC offset +9999 is out of range; time shown in UTC"),
    ]
