"""``read_history``: every way a checkout's HEAD moved, as ``CodeEvent``s, with the commits each
move brought in or took away, read safely from an untrusted repository.

Pipeline (reference sections 3 and 7):

1. locate the git dirs (files only); detect the ref storage (files or reftable);
2. read the HEAD log of *that* worktree (tolerant parser; reftable: ``git reflog`` in a shadow);
   when it is empty or missing, fall back to the current branch's log, as ``git reflog``
   does, with a warning;
3. group entries (rebase / pull --rebase bursts collapse, branch-rename pairs merge, a linked
   worktree's creation lines merge) -> one ``CodeEvent`` per group, in FILE ORDER (never
   sorted by time);
4. merge in the current branch's moves that HEAD's log lacks (another worktree, ``update-ref``
   or a push moved the branch: HEAD moved, files did not): ``ref`` = the branch,
   ``files_may_differ`` = True. They are placed where HEAD's own chain has the gap they fill;
5. read ``logs/refs/remotes/**`` and ``logs/refs/stash`` as CONTEXT (``GitHistory.context``):
   fetches and stashes never move HEAD, so they are not in ``events``;
6. no reflog at all: one APPROXIMATE event from file modification times (``HEAD``, the
   branch's loose ref or ``packed-refs``, ``ORIG_HEAD``), ``approximate`` = True, with a
   warning; never mixed with reflog events;
7. list commits (sha, subject, author, dates, touched paths) through a shadow repository;
8. say where coverage starts (``GitHistory.coverage``).

A collapsed group (burst or rename pair) has ``old`` = its first entry's old, ``new`` = its
last entry's new, ``message``/``line`` of its FIRST entry, and ``time``/``ts`` of its LAST
entry (the moment the net result was in place). ``GitHistory.spans`` gives each collapsed
event's first line, last line and entry count.

Commit lists: ``commits`` = what the move brought in (``old..new``), ``commits_removed`` =
what left HEAD's history (``new..old``), both NEWEST FIRST as git prints them; from a zero old
id (clone, initial commit, new worktree) only the new commit itself is listed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta, timezone
from pathlib import Path

from timeline.parsers.records import Diagnostic

from timeline.git.classify import (
    DETAILED_KINDS, Group, classify, detail_for, heads_of, single_detail, single_kind, special_groups,
    stashed_positions,
)
from timeline.git.locate import (
    GitLocation, HeadState, MAX_SMALL_FILE_BYTES, UnsafeFile, locate, packed_ref, read_small,
    regular_file_mtime, resolve_head, resolve_inside, valid_refname,
)
from timeline.git.objects import ObjectStore, ObjectStoreError
from timeline.git.reflog import ReflogEntry, load_reflog, parse_reflog, paused_gc, tz_offset
from timeline.git.runner import valid_sha
from timeline.model import CodeEvent, is_zero_sha

__all__ = ["GitHistory", "Coverage", "read_history", "MERGED_NOTE"]

MERGED_NOTE = ("HEAD moved, files did not: {ref} was moved without a HEAD-log entry (from another "
               "worktree, by update-ref, or by a push into this checkout); the checked-out files "
               "stayed as they were")
# A merged-in branch move must fall in its gap's time window, give or take this (seconds).
MERGE_TOLERANCE_S = 120
# ORIG_HEAD counts as the old side of the approximate event when written this close to it.
ORIG_HEAD_WINDOW_S = 2
MAX_CONTEXT_LOGS = 2000

_NOTES = {
    "reset": "reset: the reflog does not say whether it was --soft/--mixed (files kept) or "
             "--hard (files changed), so the files may differ from this commit",
    "reset-head": "reset: moving to HEAD (reset --hard, merge --abort, or reset --mixed): the files "
                  "may have been put back to the commit, or not",
    "stash": "git stash: the uncommitted changes were put aside; before this moment the files "
             "differed from the commit",
    "unfinished": "stopped mid-way (a conflict, an edit stop, or --quit): the files may hold "
                  "conflict markers or partial work",
}


@dataclass(frozen=True)
class Coverage:
    """Where the reflog's record starts. Runs before ``ts`` cannot be tied to a commit (the
    correlator marks them ``before-reflog``).

    ``reason``: ``clone`` (clones never copy reflogs), ``repository-created``,
    ``worktree-created``, ``expired-or-deleted`` (older entries were expired by gc or
    deleted), ``branch-log`` (HEAD's log was empty; the branch's log was read), ``unknown``
    (reftable: the oldest entry's old id is not recorded), ``approximate`` (no reflog: file
    modification times), ``no-reflog`` (nothing at all), ``unread`` (reftable without git >= 2.45).
    """

    reason: str
    ts: int | None = None
    time: datetime | None = None
    event: str | None = None       # id of the first event
    description: str = ""


@dataclass
class GitHistory:
    path: str                  # the worktree root we resolved
    git_dir: str
    common_dir: str
    head: str | None           # sha HEAD resolves to now (from the files); None if unborn
    head_log: str              # path of the HEAD log we read (the branch log on fallback)
    events: list[CodeEvent]    # FILE ORDER, never sorted by time; ids "e1", "e2", ...
    diagnostics: list[Diagnostic]
    branch: str | None = None  # "refs/heads/main" when HEAD is attached, None when detached
    object_format: str = "sha1"
    # event id -> (first line, last line, number of reflog entries), for collapsed groups only
    spans: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # Moves of other refs, for context only (they never move HEAD): fetches into
    # refs/remotes/**, stash entries. ``ref`` names the ref; ids "x1", "x2", ...; per ref in
    # file order, refs sorted by name.
    context: list[CodeEvent] = field(default_factory=list)
    coverage: Coverage | None = None
    ref_storage: str = "files"
    approximate: bool = False  # events come from file modification times, not from a reflog


def _short(sha: str | None) -> str:
    return (sha or "")[:12] or "?"


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# "+HHMM" -> its fixed-offset ``timezone``; None when ``timezone`` refuses it (24 h or more).
# At most 20,000 distinct strings, so it stays small.
_TZINFOS: dict[str, timezone | None] = {}
_fromtimestamp = datetime.fromtimestamp
_SECOND = timedelta(seconds=1)


def _tzinfo(tz: str) -> timezone | None:
    """``tz``'s fixed offset as a ``timezone`` (kept in ``_TZINFOS``); None when absurd."""
    tzinfo = _TZINFOS.get(tz, _EPOCH)
    if tzinfo is _EPOCH:
        try:
            tzinfo = timezone(tz_offset(tz))
        except (ValueError, TypeError):
            tzinfo = None
        _TZINFOS[tz] = tzinfo
    return tzinfo   # type: ignore[return-value]


def _when(e: ReflogEntry) -> datetime:
    """The entry's instant in the writer's offset; same as ``e.when()``. Raises like it when
    the offset or timestamp is absurd."""
    return _at(e.ts, e.tz)


def _at(ts: int, tz: str) -> datetime:
    """The instant ``ts`` in the fixed offset ``tz``: ``datetime.fromtimestamp`` (one C call),
    or, where that refuses (a UTC date past year 9999 that the offset brings back in range),
    the epoch in that offset plus ``ts`` seconds, exact for fixed offsets. Raises
    ``ValueError``/``OverflowError`` when absurd."""
    tzinfo = _TZINFOS.get(tz) or _tzinfo(tz)
    if tzinfo is None:
        raise ValueError(f"UTC offset {tz} out of range")
    try:
        return _fromtimestamp(ts, tzinfo)
    except (ValueError, OverflowError, OSError):
        return _EPOCH.astimezone(tzinfo) + _SECOND * ts


# ``_events`` and ``_read_context`` make a CodeEvent per reflog entry (100,000s), the costliest
# step of reading a log, so they do it the cheap way: on a bare object (calling the class makes
# CPython 3.11 pack the 18 arguments once more for ``__init__``), ``_events`` setting the fields
# one by one (cheaper still than the call of ``__init__``), ``_read_context`` calling
# ``__init__`` with the arguments by position (matching 18 keywords costs more than all the
# rest of making an event). Both rely on the model, checked here once so that a change fails
# loudly.
_EVENT_FIELDS = ("id", "time", "ts", "kind", "message", "old", "new", "changes_commit", "ref",
                 "commits", "commits_removed", "source", "line", "files_may_differ",
                 "approximate", "detail", "note", "old_inferred")
if (tuple(f.name for f in fields(CodeEvent)) != _EVENT_FIELDS
        or CodeEvent.__new__ is not object.__new__):  # pragma: no cover - model changed
    raise ImportError("timeline.model.CodeEvent changed: update timeline.git.history")
_bare = object.__new__
_init_event = CodeEvent.__init__


# --------------------------------------------------------------------------- log sources

class _FilesLogs:
    """Reflogs of the files backend: ``logs/HEAD`` of the worktree, ``logs/refs/...`` shared."""

    old_inferred = False

    def __init__(self, loc: GitLocation):
        self.loc = loc

    def path(self, ref: str) -> Path:
        if ref == "HEAD":
            return self.loc.git_dir / "logs" / "HEAD"
        return self.loc.common_dir / "logs" / Path(*ref.split("/"))

    def source(self, ref: str) -> str:
        return str(self.path(ref))

    def read(self, ref: str) -> tuple[list[ReflogEntry] | None, list[Diagnostic]]:
        """Entries in file order; None when there is no log file (or it was refused)."""
        roots = (self.loc.git_dir,) if ref == "HEAD" else (self.loc.common_dir,)
        data, diags = load_reflog(self.path(ref), roots)
        if data is None:
            return None, diags
        parsed = parse_reflog(data, self.source(ref), self.loc.sha_length)
        return parsed.entries, diags + parsed.diagnostics

    def context_refs(self, diags: list[Diagnostic]) -> list[str]:
        """``refs/remotes/**`` refs that have a log file, sorted, then ``refs/stash``."""
        refs: list[str] = []
        top = self.loc.common_dir / "logs" / "refs" / "remotes"
        stack = [top]
        while stack:
            d = stack.pop()
            try:
                resolve_inside(self.loc.common_dir, d, ".")
                with os.scandir(d) as it:
                    items = list(it)
            except (OSError, UnsafeFile):
                continue
            for item in items:
                try:
                    if item.is_dir(follow_symlinks=False):
                        stack.append(Path(item.path))
                    elif item.is_file(follow_symlinks=False) or item.is_symlink():
                        rel = Path(item.path).relative_to(self.loc.common_dir / "logs")
                        name = "/".join(rel.parts)
                        if valid_refname(name):
                            refs.append(name)
                except (OSError, ValueError):
                    continue
            if len(refs) > MAX_CONTEXT_LOGS:
                diags.append(Diagnostic(str(top), None, f"more than {MAX_CONTEXT_LOGS} remote-tracking "
                                                        "logs; the rest are not read"))
                refs = refs[:MAX_CONTEXT_LOGS]
                break
        refs.sort()
        if os.path.lexists(self.path("refs/stash")):
            refs.append("refs/stash")
        return refs


class _ReftableLogs:
    old_inferred = True

    def __init__(self, reader):
        self.reader = reader

    def source(self, ref: str) -> str:
        return self.reader.source(ref)

    def read(self, ref: str):
        return self.reader.read(ref)

    def context_refs(self, diags: list[Diagnostic]) -> list[str]:
        refs = self.reader.list_refs()
        if refs is None:
            diags.append(Diagnostic(self.source("refs/remotes"), None,
                                    "reftable: listing remote-tracking and stash reflogs needs git "
                                    ">= 2.46; fetch and stash context not read"))
            return ["refs/stash"]
        remotes = sorted(r for r in refs if r.startswith("refs/remotes/") and valid_refname(r))
        return remotes + (["refs/stash"] if "refs/stash" in refs else [])


# --------------------------------------------------------------------------- entry point

def read_history(repo: str | os.PathLike) -> GitHistory:
    """Read how HEAD moved in the worktree containing ``repo``.

    Raises ``GitError`` only when there is no usable repository (not a repo, a broken ``.git``
    file or ``commondir``). Everything else -- a missing, empty, symlinked or damaged log,
    missing objects, no git executable, a reftable repository without git >= 2.45 -- becomes
    a diagnostic.
    """
    loc = locate(repo)
    diags: list[Diagnostic] = []
    if loc.ref_storage == "reftable":
        return _read_reftable(loc, diags)
    head = resolve_head(loc)
    diags.extend(head.diagnostics)
    return _build(loc, _FilesLogs(loc), head, diags)


def _read_reftable(loc: GitLocation, diags: list[Diagnostic]) -> GitHistory:
    from timeline.git.reftable import ReftableReader, ReftableUnavailable

    try:
        with ReftableReader(loc) as reader:
            sha, symref = reader.head()
            head = HeadState(sha, symref)
            history = _build(loc, _ReftableLogs(reader), head, diags)
            diags.append(Diagnostic(reader.source("HEAD"), None,
                                    "reftable: reflog read with git reflog (git >= 2.45) in a "
                                    "private copy; each entry's old commit is inferred from the "
                                    "entry before it, and entries whose commits are missing are "
                                    "hidden by git"))
            return history
    except ReftableUnavailable as exc:
        diags.append(Diagnostic(str(loc.common_dir / "reftable"), None, str(exc)))
        return GitHistory(path=str(loc.worktree), git_dir=str(loc.git_dir),
                          common_dir=str(loc.common_dir), head=None,
                          head_log=str(loc.git_dir / "reftable"), events=[], diagnostics=diags,
                          object_format=loc.object_format,
                          coverage=Coverage("unread", description=str(exc)), ref_storage="reftable")


def _build(loc: GitLocation, logs, head: HeadState, diags: list[Diagnostic]) -> GitHistory:
    with paused_gc():           # many small objects, no cycles: see reflog.paused_gc
        return _build_events(loc, logs, head, diags)


def _build_events(loc: GitLocation, logs, head: HeadState, diags: list[Diagnostic]) -> GitHistory:
    head_source = logs.source("HEAD")
    head_entries, d = logs.read("HEAD")
    diags.extend(d)
    # a log that exists but was refused (symlink, FIFO, outside the git dir): not "no reflog"
    refused = any(x.message.startswith("reflog ") and not x.message.startswith("reflog is empty")
                  for x in d)
    branch = head.symref if head.symref and head.symref.startswith("refs/heads/") else None
    branch_entries: list[ReflogEntry] | None = None
    if branch:
        branch_entries, d = logs.read(branch)
        # a missing branch log is not worth a warning (deleted, reflogs off: HEAD's says so)
        diags.extend(x for x in d if "no reflog file" not in x.message)
        refused = refused or any(x.message.startswith("reflog ")
                                 and not x.message.startswith("reflog is empty") for x in d)

    source, ref, entries, fallback = head_source, "HEAD", head_entries or [], False
    if not head_entries and branch_entries:
        source, ref, entries, fallback = logs.source(branch), branch, branch_entries, True
        diags[:] = [x for x in diags if not (x.source == head_source and "no reflog file" in x.message)]
        state = ("empty" if head_entries is not None
                 else "unreadable (see above)" if refused else "missing")
        diags.append(Diagnostic(head_source, None,
                                f"HEAD's reflog is {state}: using the log of {branch} instead (as "
                                "git reflog does); moves of HEAD to other branches or detached "
                                "commits are not in it"))

    _check_entries(entries, loc, source, diags)
    # the groups of classify.group_entries, without a Group per plain entry (see _events)
    heads = heads_of(entries)
    specials = special_groups(entries, heads, linked_worktree=loc.linked_worktree and not fallback)

    context_events, stash_entries = _read_context(logs, loc, diags)
    stashed = stashed_positions(entries, specials, stash_entries) if stash_entries else set()

    # numbered "e1", "e2"... as made; renumbered below if events are added
    events, collapsed = _events(entries, heads, specials, stashed, source, ref, diags,
                                logs.old_inferred)
    made = len(events)

    tail_explained = False
    if not fallback and branch_entries and events:
        events, tail_explained = _merge_branch_moves(events, head_entries or [], branch_entries,
                                                     branch, logs.source(branch), head.sha, diags,
                                                     logs.old_inferred)

    if (not tail_explained and head.sha and entries and entries[-1].new != head.sha
            and not is_zero_sha(entries[-1].new) and not logs.old_inferred):
        diags.append(Diagnostic(source, None,
                                f"HEAD now resolves to {_short(head.sha)}, but the last reflog entry "
                                f"(line {entries[-1].line}) moved it to {_short(entries[-1].new)}: HEAD "
                                "moved without a reflog entry"))

    approximate = False
    if not events and not refused and logs.__class__ is _FilesLogs:
        approx, approx_context = _approximate(loc, head, diags)
        if approx or approx_context:
            approximate = True
            diags[:] = [x for x in diags if not (x.source == head_source
                                                 and x.message.startswith("no reflog file"))]
            events = approx
            context_events = approx_context + context_events

    if len(events) != made or approximate:
        for number, event in enumerate(events, 1):
            event.id = f"e{number}"
    spans = {event.id: span for event, span in collapsed}
    for number, event in enumerate(context_events, 1):
        event.id = f"x{number}"

    _attach_commits(events, loc, source, diags)
    coverage = _coverage(events, fallback, approximate, logs.old_inferred, source, diags)
    return GitHistory(path=str(loc.worktree), git_dir=str(loc.git_dir),
                      common_dir=str(loc.common_dir), head=head.sha, head_log=source,
                      events=events, diagnostics=diags, branch=head.symref,
                      object_format=loc.object_format, spans=spans, context=context_events,
                      coverage=coverage, ref_storage=loc.ref_storage, approximate=approximate)


# --------------------------------------------------------------------------- checks

def _check_entries(entries: list[ReflogEntry], loc: GitLocation, source: str,
                   diags: list[Diagnostic]) -> None:
    """Id lengths that do not fit the repository, and breaks in the old/new chain."""
    prev_new: str | None = None           # the previous entry's new id
    n = loc.sha_length
    for e in entries:
        old, new = e.old, e.new
        if len(old) != n or len(new) != n:
            diags.append(Diagnostic(source, e.line,
                                    f"object id length does not match this {loc.object_format} "
                                    "repository; its commits cannot be looked up"))
        elif (prev_new is not None and old != prev_new and not is_zero_sha(prev_new)
              and not is_zero_sha(old)):
            diags.append(Diagnostic(source, e.line,
                                    f"reflog chain gap: this entry starts at {_short(old)} but the "
                                    f"previous one ended at {_short(prev_new)} (entries deleted, "
                                    "or HEAD moved without a reflog entry)"))
        prev_new = new


# --------------------------------------------------------------------------- events

def _events(entries: list[ReflogEntry], heads: list, specials: list[tuple[int, Group]],
            stashed: set[int], source: str, ref: str, diags: list[Diagnostic],
            old_inferred: bool) -> tuple[list[CodeEvent], list[tuple[CodeEvent, tuple[int, int, int]]]]:
    """One ``CodeEvent`` per group, in file order, numbered "e1", "e2", ...; and the collapsed
    ones with their span (first line, last line, entry count).

    The groups are ``classify.group_entries``'s: ``specials`` (bursts, renames, a worktree's
    creation) go through ``_event``; every other entry is a group of its own, and this loop
    makes its event directly, with no ``Group`` in between: it runs once per entry of a log of
    maybe 100,000s, and does there exactly what ``_event`` would (ids, times, kinds, details,
    notes and diagnostics in the same order). ``stashed``: indices of the entries that
    ``git stash`` wrote (``classify.stashed_positions``).
    """
    events: list[CodeEvent] = []
    collapsed: list[tuple[CodeEvent, tuple[int, int, int]]] = []
    append = events.append
    bare = _bare
    tzinfos = _TZINFOS
    fromtimestamp = _fromtimestamp
    detailed = DETAILED_KINDS
    note_reset, note_reset_head, note_stash = _NOTES["reset"], _NOTES["reset-head"], _NOTES["stash"]
    inferred_note = _INFERRED_NOTE if old_inferred else None
    # the previous entry's (ts, tz) and time: a burst's entries share their second
    last_ts, last_tz, last_when = None, None, None
    i = 0
    for stop, group in [*specials, (len(entries), None)]:
        for j, e, h in zip(range(i, stop), entries[i:stop], heads[i:stop]):
            old, new, _name, _email, ts, tz, message, line, _glued, _terminated = e
            if ts != last_ts or tz != last_tz:
                tzinfo = tzinfos.get(tz) or _tzinfo(tz)
                try:
                    if tzinfo is None:                 # an absurd offset
                        raise ValueError(tz)
                    when = last_when = fromtimestamp(ts, tzinfo)
                    last_ts, last_tz = ts, tz
                except (ValueError, OverflowError, OSError):
                    when = _event_time(e, source, diags)
                    if when is None:
                        continue
            else:
                when = last_when
            kind = single_kind(e, h)
            detail = single_detail(kind, message) if h is not None and kind in detailed else None
            if message == "reset: moving to HEAD":
                if j in stashed:
                    kind = "stash"
                    note = note_stash
                else:
                    note = note_reset_head
            elif kind == "reset":
                note = note_reset
            elif kind == "stash":
                note = note_stash
            else:
                note = None
            event = bare(CodeEvent)                        # see _EVENT_FIELDS
            event.id = f"e{len(events) + 1}"
            event.time = when
            event.ts = ts
            event.kind = kind
            # display_message is the message itself when it is ASCII
            event.message = message if message is not None and message.isascii() else e.display_message
            event.old = old
            event.new = new
            event.changes_commit = old != new and new.strip("0") != ""     # (not is_zero_sha)
            event.ref = ref
            event.commits = []
            event.commits_removed = []
            event.source = source
            event.line = line
            event.files_may_differ = note is not None
            event.approximate = False
            event.detail = detail
            event.note = inferred_note if note is None else note
            event.old_inferred = old_inferred
            append(event)
        if group is None:
            break
        i = stop + len(group.entries)
        event = _event(group, source, ref, diags, old_inferred)
        if event is None:
            continue
        event.id = f"e{len(events) + 1}"
        append(event)
        if len(group.entries) > 1:
            collapsed.append((event, (group.first.line, group.last.line, len(group.entries))))
    return events, collapsed


_INFERRED_NOTE = "old commit inferred from the reflog entry before it (reftable)"


def _event_time(e: ReflogEntry, source: str, diags: list[Diagnostic]) -> datetime | None:
    """The time of the event ``e`` ends: in the entry's own offset (``_at``); when that offset
    is out of range, in UTC, with a diagnostic; when the timestamp is, None (the entry is
    skipped), with a diagnostic."""
    try:
        return _at(e.ts, e.tz)
    except (ValueError, OverflowError, OSError):
        pass
    try:
        when = datetime.fromtimestamp(e.ts, timezone.utc)
        diags.append(Diagnostic(source, e.line, f"UTC offset {e.tz} is out of range; time shown in UTC"))
        return when
    except (ValueError, OverflowError, OSError):
        diags.append(Diagnostic(source, e.line, f"timestamp {e.ts} is out of range; entry skipped"))
        return None


def _event(g: Group, source: str, ref: str, diags: list[Diagnostic],
           old_inferred: bool = False) -> CodeEvent | None:
    """The event of a group (``_events`` makes those of plain single entries itself)."""
    entries = g.entries
    first, last = entries[0], entries[-1]
    ts = last.ts
    # a collapsed group took effect when its last entry was written
    when = _event_time(last, source, diags)
    if when is None:
        return None
    old, new = first.old, last.new
    kind = g.kind
    if g.burst and not g.closed:
        diags.append(Diagnostic(source, first.line,
                                f"{kind} started here has no (finish) or (abort) entry (still in "
                                f"progress, --quit, or a damaged log); collapsed through line {last.line}"))
    changes = (old != new) and not is_zero_sha(new) and not g.rename
    detail = detail_for(g)
    note = None
    if kind == "stash":
        note = _NOTES["stash"]
    elif kind == "reset":
        note = _NOTES["reset"]
    elif detail == "unfinished":
        note = _NOTES["unfinished"]
    files_may_differ = note is not None
    if old_inferred and note is None:
        note = _INFERRED_NOTE
    return CodeEvent(id="", time=when, ts=ts, kind=kind, message=first.display_message, old=old,
                     new=new, changes_commit=changes, ref=ref, source=source, line=first.line,
                     files_may_differ=files_may_differ, detail=detail, note=note,
                     old_inferred=old_inferred)


def _merge_branch_moves(events: list[CodeEvent], head_entries: list[ReflogEntry],
                        branch_entries: list[ReflogEntry], branch: str, branch_source: str,
                        head_sha: str | None, diags: list[Diagnostic],
                        old_inferred: bool) -> tuple[list[CodeEvent], bool]:
    """Insert the branch's moves that HEAD's log lacks, where they fill a gap in HEAD's chain.

    A branch entry is "seen by HEAD" when HEAD's log has an entry, or a collapsed group, with
    the same old, new and time (git writes both lines in the same process). The others are
    taken in runs of consecutive, chained entries; a run (or a prefix of it) is placed after
    event ``p-1`` when that event left HEAD at the run's start, HEAD's next event (or HEAD now,
    after the last one) starts at the run's end -- a gap that only the run explains -- and its
    times fit. Moves made while HEAD was on another branch leave no such gap and are ignored.
    Moves undone before HEAD moved again leave no gap either, and cannot be told apart from
    those: they are not merged.

    Returns the new event list and whether the run placed last explains HEAD's current value.
    """
    seen: set[tuple[str, str, int]] = set()
    for e in head_entries:
        seen.add((e.old, e.new, e.ts))
    for ev in events:
        seen.add((ev.old, ev.new, ev.ts))

    def is_seen(b: ReflogEntry) -> bool:
        return any((b.old, b.new, b.ts + d) in seen for d in (0, -1, 1))

    runs: list[list[ReflogEntry]] = []
    current: list[ReflogEntry] = []
    for b in branch_entries:
        usable = (not is_seen(b) and not is_zero_sha(b.old) and not is_zero_sha(b.new)
                  and b.old != b.new)
        if usable and current and current[-1].new == b.old:
            current.append(b)
            continue
        if current:
            runs.append(current)
        current = [b] if usable else []
    if current:
        runs.append(current)
    if not runs:
        return events, False

    n = len(events)
    # gaps[p]: HEAD left at events[p-1].new, next seen at events[p].old (or head_sha at p == n)
    gaps: dict[int, tuple[str, str]] = {}
    for p in range(1, n + 1):
        before = events[p - 1].new
        after = events[p].old if p < n else head_sha
        if after and before != after and not is_zero_sha(before) and not is_zero_sha(after):
            gaps[p] = (before, after)

    inserts: dict[int, list[ReflogEntry]] = {}
    for run in runs:
        i = 0
        while i < len(run):
            placed = False
            for p, (before, after) in sorted(gaps.items()):
                if p in inserts or run[i].old != before:
                    continue
                k = next((j for j in range(i, len(run)) if run[j].new == after), None)
                if k is None:
                    continue
                if run[i].ts < events[p - 1].ts - MERGE_TOLERANCE_S:
                    continue
                if p < n and run[k].ts > events[p].ts + MERGE_TOLERANCE_S:
                    continue
                inserts[p] = run[i:k + 1]
                i = k + 1
                placed = True
                break
            if not placed:
                i += 1
    if not inserts:
        return events, False

    out: list[CodeEvent] = []
    for p in range(0, n + 1):
        if p in inserts:
            for b in inserts[p]:
                out.append(_merged_event(b, branch, branch_source, diags, old_inferred))
            if p < n:
                # the gap is explained: drop the chain-gap diagnostic of HEAD's next entry
                nxt = events[p]
                diags[:] = [x for x in diags if not (x.source == nxt.source and x.line == nxt.line
                                                     and x.message.startswith("reflog chain gap"))]
        if p < n:
            out.append(events[p])
    return out, n in inserts


def _merged_event(b: ReflogEntry, branch: str, source: str, diags: list[Diagnostic],
                  old_inferred: bool) -> CodeEvent:
    try:
        when = _when(b)
    except (ValueError, OverflowError, OSError):
        when = datetime.fromtimestamp(max(0, min(b.ts, 253402300799)), timezone.utc)
    return CodeEvent(id="", time=when, ts=b.ts, kind=classify(b.message), message=b.display_message,
                     old=b.old, new=b.new, changes_commit=True, ref=branch, source=source,
                     line=b.line, files_may_differ=True, note=MERGED_NOTE.format(ref=branch),
                     old_inferred=old_inferred)


# --------------------------------------------------------------------------- context

def _context_kind(ref: str, message: str | None) -> str:
    if ref == "refs/stash":
        return "stash"
    kind = classify(message)
    if kind == "pull":                 # the fetch half of a pull, on the remote-tracking ref
        return "fetch"
    return kind


def _read_context(logs, loc: GitLocation, diags: list[Diagnostic]) -> tuple[list[CodeEvent], list[ReflogEntry]]:
    """Context events of every remote-tracking ref and the stash; also the stash entries."""
    out: list[CodeEvent] = []
    stash: list[ReflogEntry] = []
    for ref in logs.context_refs(diags):
        entries, d = logs.read(ref)
        diags.extend(x for x in d if "no reflog file" not in x.message
                     and not x.message.startswith("reflog is empty"))
        if not entries:
            continue
        if ref == "refs/stash":
            stash = entries
        source = logs.source(ref)
        for e in entries:
            try:
                when = _when(e)
            except (ValueError, OverflowError, OSError):
                continue
            detail = "fast-forward" if (e.message or "").endswith(": fast-forward") else None
            changes = e.old != e.new and not is_zero_sha(e.new)
            event = _bare(CodeEvent)                 # see _EVENT_FIELDS
            _init_event(event, "", when, e.ts, _context_kind(ref, e.message), e.display_message,
                        e.old, e.new, changes, ref, [], [], source, e.line, False, False, detail,
                        None, logs.old_inferred)
            out.append(event)
    return out, stash


# --------------------------------------------------------------------------- no reflog at all

def _read_sha(path: Path, roots: tuple[Path, ...], length: int) -> str | None:
    try:
        data = read_small(resolve_inside(roots, path.parent, path.name), MAX_SMALL_FILE_BYTES)
    except (UnsafeFile, OSError):
        return None
    if not data:
        return None
    text = data.split(b"\n", 1)[0].split(b"\t", 1)[0].strip().decode("ascii", "replace")
    return text if valid_sha(text, length) else None


def _approximate(loc: GitLocation, head: HeadState,
                 diags: list[Diagnostic]) -> tuple[list[CodeEvent], list[CodeEvent]]:
    """One approximate HEAD event, and a FETCH_HEAD context event, from file mtimes.

    HEAD's file is rewritten by a checkout/switch (not by a commit on a branch); the branch's
    loose ref file by every update of the branch (until ``pack-refs``); ``packed-refs`` when
    refs are packed. The LATER of HEAD's time and the branch's time is when HEAD resolved to
    its current commit at the latest: an upper bound. Anything earlier is unknown.
    """
    roots = (loc.git_dir, loc.common_dir)
    events: list[CodeEvent] = []
    context: list[CodeEvent] = []
    used: list[str] = []
    if head.sha:
        head_file = loc.git_dir / "HEAD"
        t_head = regular_file_mtime(head_file, roots)
        t, kind, what, path = t_head, "checkout", "HEAD was last switched (checkout) at this time", head_file
        if head.symref:
            ref_file = loc.common_dir / Path(*head.symref.split("/"))
            t_ref = regular_file_mtime(ref_file, roots)
            ref_path = ref_file
            if t_ref is None and packed_ref(loc, head.symref):
                ref_path = loc.common_dir / "packed-refs"
                t_ref = regular_file_mtime(ref_path, roots)
            if t_ref is None:
                t = None
            elif t_head is None or t_ref > t_head:
                t, kind, path = t_ref, "other", ref_path
                what = (f"{head.symref} was last written at this time (a commit, pull, merge, reset "
                        "or rebase; or pack-refs)")
        if t is not None:
            ts = int(t)
            old = "0" * loc.sha_length
            orig = loc.git_dir / "ORIG_HEAD"
            t_orig = regular_file_mtime(orig, roots)
            orig_sha = _read_sha(orig, roots, loc.sha_length)
            if t_orig is not None and orig_sha and abs(t_orig - t) <= ORIG_HEAD_WINDOW_S:
                old = orig_sha
                used.append("ORIG_HEAD")
            used.append(str(path.relative_to(loc.git_dir if path.is_relative_to(loc.git_dir)
                                             else loc.common_dir)))
            note = (f"approximate, from the modification time of {path}: {what}; HEAD held "
                    f"{_short(head.sha)} from then on at the latest (an upper bound)")
            events.append(CodeEvent(
                id="", time=datetime.fromtimestamp(ts, timezone.utc), ts=ts, kind=kind,
                message=f"(approximate) {what}", old=old, new=head.sha,
                changes_commit=old != head.sha, ref="HEAD", source=str(path), line=None,
                approximate=True, note=note))
    fetch_head = loc.git_dir / "FETCH_HEAD"
    t_fetch = regular_file_mtime(fetch_head, roots)
    fetched = _read_sha(fetch_head, roots, loc.sha_length)
    if t_fetch is not None and fetched:
        used.append("FETCH_HEAD")
        ts = int(t_fetch)
        context.append(CodeEvent(
            id="", time=datetime.fromtimestamp(ts, timezone.utc), ts=ts, kind="fetch",
            message="(approximate) the last fetch wrote FETCH_HEAD at this time",
            old="0" * loc.sha_length, new=fetched, changes_commit=False, ref="FETCH_HEAD",
            source=str(fetch_head), line=None, approximate=True,
            note=f"approximate, from the modification time of {fetch_head}"))
    if events or context:
        diags.append(Diagnostic(str(loc.git_dir / "logs"), None,
                                "no reflog at all (reflogs disabled, deleted, or expired): times are "
                                "APPROXIMATE, from file modification times (" + ", ".join(used)
                                + "), upper bounds only; what HEAD held before is unknown"))
    return events, context


# --------------------------------------------------------------------------- coverage

def _coverage(events: list[CodeEvent], fallback: bool, approximate: bool, old_inferred: bool,
              source: str, diags: list[Diagnostic]) -> Coverage:
    if not events:
        return Coverage("no-reflog", description="no reflog entries: no run can be tied to a commit")
    first = events[0]
    base = dict(ts=first.ts, time=first.time, event=first.id)
    if approximate:
        return Coverage("approximate", description="no reflog: one approximate time from file "
                                                   "modification times", **base)
    if fallback:
        reason = "branch-log"
        text = "HEAD's log was empty; coverage is that of the branch's log"
    elif old_inferred:
        reason = "unknown"
        text = "reftable: whether older entries were expired is not known"
    elif not is_zero_sha(first.old):
        reason = "expired-or-deleted"
        text = ("the reflog's first entry does not start from nothing: older entries were expired "
                "by git gc (after 90 days, or 30 days for unreachable commits) or deleted")
        diags.append(Diagnostic(source, first.line,
                                f"reflog coverage starts here ({first.time.isoformat()}): {text}; "
                                "runs before it cannot be tied to a commit"))
    elif first.kind == "clone":
        reason, text = "clone", "the checkout was cloned here; clones never copy reflogs"
    elif first.kind == "worktree":
        reason, text = "worktree-created", "this linked worktree was created here"
    else:
        reason, text = "repository-created", "HEAD's first commit (or first checkout) is here"
    return Coverage(reason, description=text, **base)


# --------------------------------------------------------------------------- commits

MAX_SAID_ALONE = 5  # events whose commits could not be listed, each said; more: the first ones and a count


def _few(unlisted: list[Diagnostic]) -> list[Diagnostic]:
    """``unlisted`` as they are, or, for a file with many (an old checkout whose early moves were
    gc'd: thousands), its first ``MAX_SAID_ALONE - 1`` and one line for the rest."""
    by_file: dict[str, list[Diagnostic]] = {}
    for diag in unlisted:
        by_file.setdefault(diag.source, []).append(diag)
    said: list[Diagnostic] = []
    for source, diags in by_file.items():
        if len(diags) <= MAX_SAID_ALONE:
            said += diags
            continue
        rest = diags[MAX_SAID_ALONE - 1 :]
        lines = [d.line for d in rest if d.line is not None]
        where = f" (lines {min(lines)}-{max(lines)})" if lines else ""
        said += diags[: MAX_SAID_ALONE - 1]
        said.append(Diagnostic(source, rest[0].line,
                               f"and {len(rest):,} more events whose commits are not listed{where}: objects "
                               "not in the store (pruned, shallow, or never fetched) or unreadable"))
    return said


def _attach_commits(events: list[CodeEvent], loc: GitLocation, source: str,
                    diags: list[Diagnostic]) -> None:
    """Fill ``commits`` / ``commits_removed`` for every event that changed the commit."""
    n = loc.sha_length
    todo = [ev for ev in events if ev.changes_commit and valid_sha(ev.new, n)
            and (is_zero_sha(ev.old) or valid_sha(ev.old, n))]
    if not todo:
        return
    try:
        with ObjectStore(loc.common_dir, loc.object_format) as store:
            if store.shallow:
                diags.append(Diagnostic(str(loc.common_dir / "shallow"), None,
                                        "shallow clone: commit lists stop at the shallow boundary"))
            if store.shallow_problem:
                diags.append(Diagnostic(str(loc.common_dir / "shallow"), None, store.shallow_problem))
            shas = {s for ev in todo for s in (ev.old, ev.new) if not is_zero_sha(s)}
            types = store.object_types(sorted(shas))
            present = {s for s, t in types.items() if t == "commit"}
            for s, t in sorted(types.items()):
                if t is not None and t != "commit":
                    diags.append(Diagnostic(source, None, f"object {_short(s)} is a {t}, not a commit"))

            singles: list[CodeEvent] = []
            ranged: list[CodeEvent] = []
            unlisted: list[Diagnostic] = []
            for ev in todo:
                missing = [s for s in (ev.old, ev.new) if not is_zero_sha(s) and s not in present]
                if missing:
                    unlisted.append(Diagnostic(ev.source, ev.line,
                                               "commit " + ", ".join(_short(s) for s in missing)
                                               + " is not in the object store (pruned, shallow, or "
                                               f"never fetched); commits of {ev.id} not listed"))
                elif is_zero_sha(ev.old):
                    singles.append(ev)
                else:
                    ranged.append(ev)

            # a constant number of git processes for all of them: ONE walk describing every
            # range's commits; the new commit of each single, when the walk did not read it,
            # in ONE more
            results = store.between_many((ev.old, ev.new) for ev in ranged)
            for ev in ranged:
                res = results[(ev.old, ev.new)]
                if isinstance(res, ObjectStoreError):
                    unlisted.append(Diagnostic(ev.source, ev.line, f"{res}; commits of {ev.id} not listed"))
                    continue
                arrived, left, truncated = res
                ev.commits = arrived
                ev.commits_removed = left
                if truncated:
                    diags.append(Diagnostic(ev.source, ev.line,
                                            f"commit lists of {ev.id} truncated (very long range)"))
            diags.extend(_few(unlisted))
            if singles:
                try:
                    found = store.describe([ev.new for ev in singles])
                    for ev in singles:
                        if ev.new in found:
                            ev.commits = [found[ev.new]]
                except ObjectStoreError as exc:
                    diags.append(Diagnostic(source, None, str(exc)))
            if store.shallow_commits:
                for ev in todo:
                    boundary = [c.sha for c in (*ev.commits, *ev.commits_removed)
                                if c.sha in store.shallow_commits]
                    if boundary:
                        diags.append(Diagnostic(
                            ev.source, ev.line,
                            "shallow-clone boundary: the parents of " + ", ".join(_short(s) for s in boundary)
                            + f" are not in this clone; the commits of {ev.id} stop there and "
                            "the boundary commit's paths are not listed"))
    except ObjectStoreError as exc:
        diags.append(Diagnostic(source, None, str(exc)))
