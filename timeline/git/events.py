"""Reflog entries -> ``CodeEvent``s: HEAD's moves (one event per group of entries, in file order)
and the context refs' moves (remote-tracking refs, the stash), with their times, kinds, details
and notes. The entry format and its messages: https://git-scm.com/docs/git-reflog,
https://git-scm.com/docs/git-update-ref#_logging_updates.
"""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime, timedelta, timezone
from typing import cast

from timeline.git.classify import DETAILED_KINDS, Group, classify, detail_for, single_detail, single_kind
from timeline.git.reflog import ReflogEntry, tz_offset
from timeline.model import CodeEvent, is_zero_sha
from timeline.records import Diagnostic

__all__ = ["events_of", "context_events", "entry_time", "short_sha"]

_NOTES = {
    "reset": "reset: the reflog does not say whether it was --soft/--mixed (files kept) or "
    "--hard (files changed), so the files may differ from this commit",
    "reset-head": "reset: moving to HEAD (reset --hard, merge --abort, or reset --mixed): the files "
    "may have been put back to the commit, or not",
    "stash": "git stash: the uncommitted changes were put aside; before this moment the files differed from the commit",
    "unfinished": "stopped mid-way (a conflict, an edit stop, or --quit): the files may hold "
    "conflict markers or partial work",
}
# Notes of a single entry's event by its kind ("reset: moving to HEAD" is told apart first).
_KIND_NOTES = {"reset": _NOTES["reset"], "stash": _NOTES["stash"]}


def short_sha(sha: str | None) -> str:
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
    return tzinfo  # type: ignore[return-value]


def entry_time(e: ReflogEntry) -> datetime:
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


# ``_plain_events`` and ``context_events`` make a CodeEvent per reflog entry (100,000s), the
# costliest step of reading a log, so they do it the cheap way: on a bare object (calling the class
# makes CPython 3.11 pack the 18 arguments once more for ``__init__``), ``_plain_events`` setting
# the fields one by one (cheaper still than the call of ``__init__``), ``context_events`` calling
# ``__init__`` with the arguments by position (matching 18 keywords costs more than all the
# rest of making an event). Both rely on the model, checked here once so that a change fails
# loudly.
_EVENT_FIELDS = (
    "id",
    "time",
    "ts",
    "kind",
    "message",
    "old",
    "new",
    "changes_commit",
    "ref",
    "commits",
    "commits_removed",
    "source",
    "line",
    "files_may_differ",
    "approximate",
    "detail",
    "note",
    "old_inferred",
    "machine",
)
if (
    tuple(f.name for f in fields(CodeEvent)) != _EVENT_FIELDS or CodeEvent.__new__ is not object.__new__
):  # pragma: no cover - model changed
    raise ImportError("timeline.model.CodeEvent changed: update timeline.git.events")
_bare = object.__new__
_init_event = CodeEvent.__init__


def events_of(
    entries: list[ReflogEntry],
    heads: list,
    specials: list[tuple[int, Group]],
    stashed: set[int],
    source: str,
    ref: str,
    diags: list[Diagnostic],
    old_inferred: bool,
) -> tuple[list[CodeEvent], list[tuple[CodeEvent, tuple[int, int, int]]]]:
    """One ``CodeEvent`` per group, in file order, numbered "e1", "e2", ...; and the collapsed
    ones with their span (first line, last line, entry count).

    The groups are ``classify.group_entries``'s: ``specials`` (bursts, renames, a worktree's
    creation) go through ``_event``; every other entry is a group of its own, and
    ``_plain_events`` makes its event directly, with no ``Group`` in between: it runs once per
    entry of a log of maybe 100,000s, and does there exactly what ``_event`` would (ids, times,
    kinds, details, notes and diagnostics in the same order). ``stashed``: indices of the
    entries that ``git stash`` wrote (``classify.stashed_positions``).
    """
    events: list[CodeEvent] = []
    collapsed: list[tuple[CodeEvent, tuple[int, int, int]]] = []
    start = 0
    for stop, group in [*specials, (len(entries), None)]:
        _plain_events(events, entries, heads, start, stop, stashed, source, ref, diags, old_inferred)
        if group is None:
            break
        start = stop + len(group.entries)
        event = _event(group, source, ref, diags, old_inferred)
        if event is None:
            continue
        event.id = f"e{len(events) + 1}"
        events.append(event)
        if len(group.entries) > 1:
            collapsed.append((event, (group.first.line, group.last.line, len(group.entries))))
    return events, collapsed


def _plain_events(
    events: list[CodeEvent],
    entries: list[ReflogEntry],
    heads: list,
    start: int,
    stop: int,
    stashed: set[int],
    source: str,
    ref: str,
    diags: list[Diagnostic],
    old_inferred: bool,
) -> None:
    """Append the events of ``entries[start:stop]``, each a group of its own (see ``events_of``)."""
    append = events.append
    bare = _bare
    tzinfos = _TZINFOS
    fromtimestamp = _fromtimestamp
    detailed = DETAILED_KINDS
    kind_notes = _KIND_NOTES
    note_reset_head, note_stash = _NOTES["reset-head"], _NOTES["stash"]
    inferred_note = _INFERRED_NOTE if old_inferred else None
    # the previous entry's (ts, tz) and time: a burst's entries share their second
    last_ts, last_tz, last_when = None, None, None
    for j, e, h in zip(range(start, stop), entries[start:stop], heads[start:stop], strict=False):
        old, new, _name, _email, ts, tz, message, line, _glued, _terminated = e
        if ts != last_ts or tz != last_tz:
            tzinfo = tzinfos.get(tz) or _tzinfo(tz)
            try:
                if tzinfo is None:  # an absurd offset
                    raise ValueError(tz)
                when = last_when = fromtimestamp(ts, tzinfo)
                last_ts, last_tz = ts, tz
            except (ValueError, OverflowError, OSError):
                fallback = _event_time(e, source, diags)
                if fallback is None:
                    continue
                when = fallback
        else:
            when = cast(datetime, last_when)  # set with last_ts, and ts is never None
        kind = single_kind(e, h)
        note: str | None
        detail = single_detail(kind, message) if h is not None and kind in detailed else None
        if message == "reset: moving to HEAD":
            if j in stashed:
                kind = "stash"
                note = note_stash
            else:
                note = note_reset_head
        else:
            note = kind_notes.get(kind)
        event = bare(CodeEvent)  # see _EVENT_FIELDS
        event.id = f"e{len(events) + 1}"
        event.time = when
        event.ts = ts
        event.kind = kind
        # display_message is the message itself when it is ASCII
        event.message = message if message is not None and message.isascii() else e.display_message
        event.old = old
        event.new = new
        event.changes_commit = old != new and new.strip("0") != ""  # (not is_zero_sha)
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
        event.machine = None
        append(event)


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


def _event(g: Group, source: str, ref: str, diags: list[Diagnostic], old_inferred: bool = False) -> CodeEvent | None:
    """The event of a group (``_plain_events`` makes those of plain single entries itself)."""
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
        diags.append(
            Diagnostic(
                source,
                first.line,
                f"{kind} started here has no (finish) or (abort) entry (still in "
                f"progress, --quit, or a damaged log); collapsed through line {last.line}",
            )
        )
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
    return CodeEvent(
        id="",
        time=when,
        ts=ts,
        kind=kind,
        message=first.display_message,
        old=old,
        new=new,
        changes_commit=changes,
        ref=ref,
        source=source,
        line=first.line,
        files_may_differ=files_may_differ,
        detail=detail,
        note=note,
        old_inferred=old_inferred,
    )


def _context_kind(ref: str, message: str | None) -> str:
    if ref == "refs/stash":
        return "stash"
    kind = classify(message)
    if kind == "pull":  # the fetch half of a pull, on the remote-tracking ref
        return "fetch"
    return kind


def context_events(logs, diags: list[Diagnostic]) -> tuple[list[CodeEvent], list[ReflogEntry]]:
    """Context events of every remote-tracking ref and the stash; also the stash entries."""
    out: list[CodeEvent] = []
    stash: list[ReflogEntry] = []
    for ref in logs.context_refs(diags):
        entries, d = logs.read(ref)
        diags.extend(x for x in d if x.code not in ("no-reflog", "reflog-empty"))
        if not entries:
            continue
        if ref == "refs/stash":
            stash = entries
        source = logs.source(ref)
        for e in entries:
            try:
                when = entry_time(e)
            except (ValueError, OverflowError, OSError):
                continue
            detail = "fast-forward" if (e.message or "").endswith(": fast-forward") else None
            changes = e.old != e.new and not is_zero_sha(e.new)
            event = _bare(CodeEvent)  # see _EVENT_FIELDS
            _init_event(
                event,
                "",
                when,
                e.ts,
                _context_kind(ref, e.message),
                e.display_message,
                e.old,
                e.new,
                changes,
                ref,
                [],
                [],
                source,
                e.line,
                False,
                False,
                detail,
                None,
                logs.old_inferred,
                None,
            )
            out.append(event)
    return out, stash
