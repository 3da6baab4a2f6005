"""The current branch's moves that HEAD's log lacks, merged into HEAD's events.

git writes a HEAD-log entry and the branch's in the same process when a command run in this
worktree moves the checked-out branch; a branch move made elsewhere (another worktree,
``git update-ref``, a push into this checkout) is only in the branch's log
(https://git-scm.com/docs/git-update-ref#_logging_updates). Such a move leaves a gap in HEAD's
chain of old/new ids; it is merged where it fills one, as an event with ``ref`` = the branch and
``files_may_differ`` = True: HEAD moved, the files did not.
"""

from __future__ import annotations

from datetime import datetime, timezone

from timeline.git.classify import classify
from timeline.git.events import entry_time
from timeline.git.reflog import ReflogEntry
from timeline.model import CodeEvent, is_zero_sha
from timeline.records import Diagnostic

__all__ = ["merge_branch_moves", "MERGED_NOTE", "MERGE_TOLERANCE_S"]

MERGED_NOTE = (
    "HEAD moved, files did not: {ref} was moved without a HEAD-log entry (from another "
    "worktree, by update-ref, or by a push into this checkout); the checked-out files "
    "stayed as they were"
)
# A merged-in branch move must fall in its gap's time window, give or take this (seconds).
MERGE_TOLERANCE_S = 120


def merge_branch_moves(
    events: list[CodeEvent],
    head_entries: list[ReflogEntry],
    branch_entries: list[ReflogEntry],
    branch: str,
    branch_source: str,
    head_sha: str | None,
    diags: list[Diagnostic],
    old_inferred: bool,
) -> tuple[list[CodeEvent], bool]:
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
    runs = _unseen_runs(events, head_entries, branch_entries)
    if not runs:
        return events, False
    inserts = _placements(runs, _gaps(events, head_sha), events)
    if not inserts:
        return events, False
    n = len(events)
    out: list[CodeEvent] = []
    for p in range(0, n + 1):
        if p in inserts:
            for b in inserts[p]:
                out.append(_merged_event(b, branch, branch_source, old_inferred))
            if p < n:
                # the gap is explained: drop the chain-gap diagnostic of HEAD's next entry
                nxt = events[p]
                diags[:] = [
                    x
                    for x in diags
                    if not (x.source == nxt.source and x.line == nxt.line and x.code == "reflog-chain-gap")
                ]
        if p < n:
            out.append(events[p])
    return out, n in inserts


def _unseen_runs(
    events: list[CodeEvent], head_entries: list[ReflogEntry], branch_entries: list[ReflogEntry]
) -> list[list[ReflogEntry]]:
    """The branch's entries HEAD's log has not seen, in runs of consecutive, chained moves."""
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
        usable = not is_seen(b) and not is_zero_sha(b.old) and not is_zero_sha(b.new) and b.old != b.new
        if usable and current and current[-1].new == b.old:
            current.append(b)
            continue
        if current:
            runs.append(current)
        current = [b] if usable else []
    if current:
        runs.append(current)
    return runs


def _gaps(events: list[CodeEvent], head_sha: str | None) -> dict[int, tuple[str, str]]:
    """``{p: (before, after)}``: HEAD left at ``events[p-1].new``, next seen at ``events[p].old``
    (or at ``head_sha`` for ``p == len(events)``), where the two differ."""
    n = len(events)
    gaps: dict[int, tuple[str, str]] = {}
    for p in range(1, n + 1):
        before = events[p - 1].new
        after = events[p].old if p < n else head_sha
        if after and before != after and not is_zero_sha(before) and not is_zero_sha(after):
            gaps[p] = (before, after)
    return gaps


def _placements(
    runs: list[list[ReflogEntry]], gaps: dict[int, tuple[str, str]], events: list[CodeEvent]
) -> dict[int, list[ReflogEntry]]:
    """``{p: moves}``: the part of a run each gap gets (a gap gets one at most)."""
    inserts: dict[int, list[ReflogEntry]] = {}
    for run in runs:
        i = 0
        while i < len(run):
            placed = _place(run, i, gaps, inserts, events)
            i = placed if placed is not None else i + 1
    return inserts


def _place(
    run: list[ReflogEntry],
    i: int,
    gaps: dict[int, tuple[str, str]],
    inserts: dict[int, list[ReflogEntry]],
    events: list[CodeEvent],
) -> int | None:
    """Put ``run[i:k+1]`` in the first free gap it fills and whose times it fits; returns where
    the rest of the run starts (``k + 1``), or None when no gap takes a part from ``run[i]``."""
    n = len(events)
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
        inserts[p] = run[i : k + 1]
        return k + 1
    return None


def _merged_event(b: ReflogEntry, branch: str, source: str, old_inferred: bool) -> CodeEvent:
    try:
        when = entry_time(b)
    except (ValueError, OverflowError, OSError):
        when = datetime.fromtimestamp(max(0, min(b.ts, 253402300799)), timezone.utc)
    return CodeEvent(
        id="",
        time=when,
        ts=b.ts,
        kind=classify(b.message),
        message=b.display_message,
        old=b.old,
        new=b.new,
        changes_commit=True,
        ref=branch,
        source=source,
        line=b.line,
        files_may_differ=True,
        note=MERGED_NOTE.format(ref=branch),
        old_inferred=old_inferred,
    )
