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

A start read in an assumed zone (the analysing machine's: no ``log_tz``, nothing in the file
said) is tried at every real-world UTC offset too (``assume_zone``): when they disagree, the run
is ``ambiguous`` for the reason ``zone-assumed``, with the commit under each span of offsets. The
reflog side needs no such care: each entry records UTC seconds since the epoch, and the offset
next to them is only the writer's zone, for display.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from timeline.clock import REAL_OFFSETS
from timeline.model import AmbiguousReason, CodeEvent, ZoneReading, is_zero_sha

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
    reasons: list[AmbiguousReason] = field(default_factory=list)  # with "ambiguous": why
    # With the reason "zone-assumed": the commit under each span of real-world offsets, west to east.
    zone_readings: list[ZoneReading] = field(default_factory=list)


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
    # Per reading: the reading itself, then a tolerance before and after it.
    readings = [[event_at(events, s.timestamp() + d) for d in (0.0, -tolerance_s, tolerance_s)] for s in starts]
    setter = readings[0][0]
    outcomes = [e.new if e else None for row in readings for e in row]
    commit = outcomes[0]
    probes = [s.timestamp() + d for s in starts for d in (-tolerance_s, tolerance_s)]
    latest_start = max(probes + [nominal])
    end_ts = max((end.timestamp() if end else nominal), nominal)
    during = [e.id for e in events if e.changes_commit and latest_start < e.ts <= end_ts]
    may_differ = setter is not None and setter.files_may_differ
    if len(set(outcomes)) > 1:  # None among them: one reading falls before the reflog's start
        reasons: list[AmbiguousReason] = []
        if len({row[0].new if row[0] else None for row in readings}) > 1:
            reasons.append("dst")
        if any(len({e.new if e else None for e in row}) > 1 for row in readings):
            reasons.append("clock-tolerance")
        return Attribution(commit, "ambiguous", during, _distinct(outcomes), may_differ, reasons=reasons)
    if commit is None or setter is None:  # (one is None when the other is)
        return Attribution(None, "before-reflog")
    if setter.approximate or any(e.approximate for e in events if e.id in during):
        # No reflog: the move's time is a file's mtime, a bound rather than a reading.
        return Attribution(commit, "approximate", during, [], may_differ)
    return Attribution(commit, "mixed" if during else "exact", during, [], may_differ)


class HeadIndex:
    """What HEAD held at any instant, each look-up in O(log n) (``event_at``'s answers).

    The setter of instant T is the last event in file order at or before T. With ``floor[i]``
    the earliest time from event i on (suffix minima, non-decreasing), it is the last i with
    ``floor[i] <= T``: that event's own time is then at or before T, and no later one's is.
    """

    def __init__(self, events: Sequence[CodeEvent]):
        self.events = [e for e in events if not is_zero_sha(e.new)]
        floor: list[float] = []
        earliest = float("inf")
        for event in reversed(self.events):
            earliest = min(earliest, event.ts)
            floor.append(earliest)
        self.floor = floor[::-1]

    def position(self, ts: float) -> int:
        """The index of the event that set HEAD at ``ts``; -1 before the reflog's first entry."""
        return bisect_right(self.floor, ts) - 1

    def commit_at(self, ts: float) -> str | None:
        position = self.position(ts)
        return self.events[position].new if position >= 0 else None

    def steady(self, since: float, until: float) -> bool:
        """Whether HEAD held one commit (or none yet: before the reflog) from ``since`` to ``until``."""
        first, last = self.position(since), self.position(until)
        if first == last:
            return True
        return first >= 0 and all(e.new == self.events[first].new for e in self.events[first + 1 : last + 1])


# The widest a wall-clock reading can be off from UTC: -12:00 to +14:00.
_WESTMOST, _EASTMOST = REAL_OFFSETS[0], REAL_OFFSETS[-1]


def assume_zone(tied: Attribution, heads: HeadIndex, wall: datetime, tolerance_s: float) -> Attribution:
    """``tied``, made ``ambiguous`` (reason ``zone-assumed``) when the naive wall-clock start
    ``wall``, read at another real-world offset than the assumed one, falls on another commit.

    Only the reflog entries within the offsets' window are looked at: a start whose window holds
    no move of HEAD (most runs) costs two look-ups, the others one a real-world offset.
    """
    if tied.attribution in ("no-repo", "no-time"):
        return tied
    as_utc = wall.replace(tzinfo=timezone.utc, fold=0).timestamp()
    if heads.steady(as_utc - _EASTMOST.total_seconds() - tolerance_s, as_utc - _WESTMOST.total_seconds() + tolerance_s):
        return tied
    spans: list[ZoneReading] = []
    found: list[tuple[float, str | None]] = []
    for offset in REAL_OFFSETS:  # west to east: latest instant first
        instant = as_utc - offset.total_seconds()
        commit = heads.commit_at(instant)
        found += [(instant + d, heads.commit_at(instant + d)) for d in (-tolerance_s, tolerance_s)]
        found.append((instant, commit))
        if spans and spans[-1].commit == commit:
            spans[-1] = replace(spans[-1], max_offset=offset)
        else:
            spans.append(ZoneReading(commit, offset, offset))
    if len({commit for _, commit in found}) < 2:
        return tied
    in_time_order = [commit for _, commit in sorted(found, key=lambda pair: pair[0])]
    reasons: list[AmbiguousReason] = [*tied.reasons] if tied.attribution == "ambiguous" else []
    return replace(
        tied,
        attribution="ambiguous",
        candidate_commits=_distinct([*in_time_order, *tied.candidate_commits]),
        reasons=[*reasons, "zone-assumed"],
        zone_readings=spans,
    )


def _distinct(commits) -> list[str]:
    seen: list[str] = []
    for commit in commits:
        if commit is not None and commit not in seen:
            seen.append(commit)
    return seen
