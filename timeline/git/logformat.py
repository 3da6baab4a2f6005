"""Reading ``git log`` output: the commit records of ``--format=<mark><fields> --name-only -z``.

Each record starts with a per-call random marker (``record_mark``; a subject cannot forge a
record boundary it cannot guess), then fixed-format fields separated by ``%x1f``, then the
touched paths, each NUL-terminated: https://git-scm.com/docs/git-log#_pretty_formats,
https://git-scm.com/docs/git-log#Documentation/git-log.txt--z.
"""

from __future__ import annotations

import os
from datetime import datetime

from timeline.git.runner import valid_sha
from timeline.model import CommitInfo

__all__ = [
    "LOG_OPTIONS",
    "LOG_FIELDS",
    "WALK_FIELDS",
    "READ_BYTES",
    "record_mark",
    "records",
    "walk_record",
    "parse_log",
]

# Fields of one commit: its side (``--left-right``) and id, fixed-format fields first.
LOG_FIELDS = "%m%H%x1f%aI%x1f%cI%x1f%ae%x1f%an%x1f%s"
# The walk's: each commit's parents and committer timestamp too (what git's walk orders by).
WALK_FIELDS = "%H%x1f%P%x1f%ct%x1f%aI%x1f%cI%x1f%ae%x1f%an%x1f%s"
LOG_OPTIONS = (
    "--no-textconv",
    "--no-ext-diff",
    "--no-renames",
    "--no-color",
    "--no-show-signature",
    "--no-notes",
    "--diff-merges=first-parent",
    "--name-only",
    "-z",
)
READ_BYTES = 1 << 16


def record_mark() -> tuple[str, bytes]:
    """A new random record marker: its ``--format`` text and the bytes git prints for it."""
    marker = os.urandom(8).hex()
    return f"%x1e{marker}", ("\x1e" + marker).encode()


def _date(raw: bytes) -> datetime | None:
    try:
        return datetime.fromisoformat(raw.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None


def records(stream, mark: bytes):
    """The records of a ``git log -z`` stream, each the bytes after its ``mark``, as they come
    (a record is whole when the next mark or the end arrives). Reads a block at a time; a
    record longer than a block (a commit touching 100,000s of paths) is searched once."""
    buf = bytearray()
    start = -1  # where the current record's mark is in buf (-1: none yet)
    scanned = 0  # buf is searched for marks up to here
    size = len(mark)
    while True:
        block = stream.read1(READ_BYTES)
        if not block:
            break
        buf += block
        while True:
            at = buf.find(mark, max(scanned, start + size if start >= 0 else 0))
            if at < 0:
                scanned = max(0, len(buf) - size + 1)
                break
            if start >= 0:
                yield bytes(buf[start + size : at])
            start = at
            scanned = at + size
        if start > 0:  # drop what is done with
            del buf[:start]
            scanned -= start
            start = 0
    if start >= 0:
        yield bytes(buf[start + size :])


def walk_record(record: bytes, shallow: frozenset[str]) -> tuple[CommitInfo, tuple[str, ...], int] | None:
    """One record of the walk's ``git log`` (``WALK_FIELDS``) -> ``(CommitInfo, parents,
    committer timestamp)``; None when it does not read as one."""
    head, _, rest = record.partition(b"\0")
    fields = head.split(b"\x1f", 7)
    if len(fields) != 8:
        return None
    sha, parents, date, author_date, committer_date, email, name, subject = fields
    sha_text = sha.decode("ascii", "replace")
    parent_ids = tuple(parents.decode("ascii", "replace").split())
    if not valid_sha(sha_text) or not all(valid_sha(p) for p in parent_ids):
        return None
    try:
        timestamp = int(date)
    except ValueError:
        return None
    info = _commit_info(sha_text, rest, author_date, committer_date, email, name, subject, shallow)
    return info, parent_ids, timestamp


def _commit_info(
    sha: str,
    rest: bytes,
    author_date: bytes,
    committer_date: bytes,
    email: bytes,
    name: bytes,
    subject: bytes,
    shallow: frozenset[str],
) -> CommitInfo:
    """A ``CommitInfo`` from a ``git log -z --name-only`` record's fields; ``rest`` = what
    follows the format line (LF, then the touched paths, each NUL-terminated). A commit listed
    in ``shallow`` (a shallow-clone boundary: its parents are not here) gets ``paths=None``:
    git would compare it with an empty tree and list every file."""
    if rest.startswith(b"\n"):
        rest = rest[1:]
    paths: tuple[str, ...] | None = tuple(p.decode("utf-8", "replace") for p in rest.split(b"\0") if p)
    if sha in shallow:
        paths = None
    return CommitInfo(
        sha=sha,
        subject=subject.decode("utf-8", "replace"),
        author=name.decode("utf-8", "replace"),
        author_email=email.decode("utf-8", "replace"),
        author_date=_date(author_date),
        committer_date=_date(committer_date),
        paths=paths,
    )


def parse_log(out: bytes, marker: bytes, shallow: frozenset[str] = frozenset()):
    """``git log -z --name-only --format=<marker>%m%H...`` output -> ``(mark, CommitInfo)``
    (see ``_commit_info``)."""
    for record in out.split(marker)[1:]:
        head, _, rest = record.partition(b"\0")
        fields = head.split(b"\x1f", 5)
        if len(fields) != 6:
            continue
        mark_sha, author_date, committer_date, email, name, subject = fields
        mark, sha = mark_sha[:1].decode("ascii", "replace"), mark_sha[1:].decode("ascii", "replace")
        if not valid_sha(sha):
            continue
        yield mark, _commit_info(sha, rest, author_date, committer_date, email, name, subject, shallow)
