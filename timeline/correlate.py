"""Tie each run to the commit HEAD held when its server started.

Method: HEAD at instant T is the ``new`` side of the last reflog event, in file order, whose
time is at or before T. File order, not time order, because reflog times have 1-second
resolution (a rebase writes many lines in the same second) and the writer's clock can step
backwards (https://git-scm.com/docs/git-update-ref#_logging_updates: whole seconds since the
epoch, as the committer date).

A start is not one instant when its wall-clock reading is ambiguous (a DST overlap or gap
gives two candidates) or lies within the clock tolerance of a HEAD move (reflog and log
clocks are different clocks, on different machines or in different zones). Every candidate instant is tried; when they
disagree on the commit, the run is ``ambiguous`` and every candidate commit is named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from timeline.model import CodeEvent, is_zero_sha

DEFAULT_TOLERANCE_S = 60.0


@dataclass(frozen=True)
class Attribution:
    commit: str | None
    # "exact" | "mixed" | "ambiguous" | "approximate" | "before-reflog" | "no-repo" | "no-time"
    attribution: str
    events_during: list[str] = field(default_factory=list)
    candidate_commits: list[str] = field(default_factory=list)
    # The event that put ``commit`` in place said the files on disk may not match it.
    files_may_differ: bool = False


def event_at(events: Sequence[CodeEvent], ts: float) -> CodeEvent | None:
    """The event that set what HEAD held at epoch ``ts``; None before the reflog's first entry."""
    found: CodeEvent | None = None
    for event in events:
        if event.ts <= ts and not is_zero_sha(event.new):
            found = event
    return found


def head_at(events: Sequence[CodeEvent], ts: float) -> str | None:
    """The commit HEAD held at epoch ``ts``; None before the reflog's first entry."""
    event = event_at(events, ts)
    return event.new if event else None


def attribute(
    events: Sequence[CodeEvent] | None,
    starts: Sequence[datetime],
    end: datetime | None,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
) -> Attribution:
    """Attribute one run to a commit.

    ``starts`` holds every instant the run's first timestamp may stand for (empty: no time),
    nominal first; ``end`` is its last timestamp; ``events`` is None without a repository.
    """
    if events is None:
        return Attribution(None, "no-repo")
    if not starts:
        return Attribution(None, "no-time")
    nominal = starts[0].timestamp()
    probes = [nominal] + [s.timestamp() + d for s in starts for d in (-tolerance_s, 0.0, tolerance_s)]
    setters = [event_at(events, ts) for ts in probes]
    setter = setters[0]
    outcomes = [e.new if e else None for e in setters]
    commit = outcomes[0]
    latest_start = max(probes)
    end_ts = max((end.timestamp() if end else nominal), nominal)
    during = [e.id for e in events if e.changes_commit and latest_start < e.ts <= end_ts]
    may_differ = setter is not None and setter.files_may_differ
    if len(set(outcomes)) > 1:  # None among them: one reading falls before the reflog's start
        return Attribution(commit, "ambiguous", during, _distinct(outcomes), may_differ)
    if commit is None or setter is None:  # (one is None when the other is)
        return Attribution(None, "before-reflog")
    if setter.approximate or any(e.approximate for e in events if e.id in during):
        # No reflog: the move's time is a file's mtime, a bound rather than a reading.
        return Attribution(commit, "approximate", during, [], may_differ)
    return Attribution(commit, "mixed" if during else "exact", during, [], may_differ)


def _distinct(commits) -> list[str]:
    seen: list[str] = []
    for commit in commits:
        if commit is not None and commit not in seen:
            seen.append(commit)
    return seen
