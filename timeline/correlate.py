"""Tie each run to the commit HEAD held when its server started.

Method (git-reflog.md §7.4): HEAD at instant T is the ``new`` side of the last reflog event,
in file order, whose time is at or before T. File order, not time order, because reflog
clocks have 1-second resolution and can step backwards (§0.3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from timeline.model import CodeEvent, is_zero_sha


@dataclass(frozen=True)
class Attribution:
    commit: str | None
    attribution: str  # "exact" | "mixed" | "before-reflog" | "no-repo" | "no-time"
    events_during: list[str] = field(default_factory=list)


def head_at(events: Sequence[CodeEvent], ts: float) -> tuple[str | None, bool]:
    """The commit HEAD held at epoch ``ts``, and whether ``ts`` lies inside the reflog's coverage."""
    head: str | None = None
    covered = False
    for event in events:
        if event.ts > ts:
            continue
        covered = True
        if not is_zero_sha(event.new):
            head = event.new
    return head, covered


def attribute(events: Sequence[CodeEvent] | None, start: datetime | None, end: datetime | None) -> Attribution:
    """Attribute one run (start/end are aware datetimes) to a commit.

    ``events`` is None when no repository was given.
    """
    if events is None:
        return Attribution(None, "no-repo")
    if start is None:
        return Attribution(None, "no-time")
    start_ts = start.timestamp()
    commit, covered = head_at(events, start_ts)
    if not covered or commit is None:
        return Attribution(None, "before-reflog")
    end_ts = (end or start).timestamp()
    during = [e.id for e in events if e.changes_commit and start_ts < e.ts <= end_ts]
    return Attribution(commit, "mixed" if during else "exact", during)
