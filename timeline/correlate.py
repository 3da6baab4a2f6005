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

Every commit HEAD held within the tolerance of a reading counts, a move away and back inside it
too; and every commit HEAD held while the reflog's clock read a time it read again after stepping
back (``ClockStep``, reason ``reflog-clock-step``).

``HeadIndex`` answers each question in O(log n) (n reflog entries), so a build of many runs over
a long reflog is n log n, not runs x entries (``benchmarks/attribution_speed.py``).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from timeline.clock import REAL_OFFSETS
from timeline.model import AmbiguousReason, CodeEvent, ZoneReading, is_zero_sha

DEFAULT_TOLERANCE_S = 60.0
# The commits kept for one stretch of time: a reflog that moves HEAD thousands of times within
# the tolerance (or within a clock step) names this many, not all.
MAX_CANDIDATES = 16


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


@dataclass(frozen=True)
class ClockStep:
    """The reflog's clock read ``back_s`` seconds earlier at ``event`` than at an entry before it:
    between ``low`` and ``high`` (epoch seconds) HEAD held each of ``commits`` at some point."""

    event: CodeEvent
    back_s: int
    low: int
    high: int
    commits: tuple[str, ...]


class HeadIndex:
    """What HEAD held at any instant, each look-up in O(log n) (``event_at``'s answers).

    The setter of instant T is the last event in file order at or before T. With ``floor[i]``
    the earliest time from event i on (suffix minima, non-decreasing), it is the last i with
    ``floor[i] <= T``: that event's own time is then at or before T, and no later one's is.
    """

    def __init__(self, events: Sequence[CodeEvent]):
        self.all = list(events)
        self.events = [e for e in self.all if not is_zero_sha(e.new)]
        floor: list[float] = []
        earliest = float("inf")
        for event in reversed(self.events):
            earliest = min(earliest, event.ts)
            floor.append(earliest)
        self.floor = floor[::-1]
        by_time = sorted(range(len(self.events)), key=lambda i: self.events[i].ts)
        self._times = [self.events[i].ts for i in by_time]
        self._by_time = by_time
        changing = [i for i, e in enumerate(self.all) if e.changes_commit]
        changing.sort(key=lambda i: self.all[i].ts)  # (stable: at equal times, in file order)
        self._changing_times = [self.all[i].ts for i in changing]
        self._changing = changing
        self.steps = clock_steps(self.all)
        spans = _merged([(s.low, s.high, s.commits) for s in self.steps])
        self._span_lows = [low for low, _, _ in spans]
        self._span_highs = [high for _, high, _ in spans]
        self._span_commits = [commits for _, _, commits in spans]

    def position(self, ts: float) -> int:
        """The index of the event that set HEAD at ``ts``; -1 before the reflog's first entry."""
        return bisect.bisect_right(self.floor, ts) - 1

    def event_at(self, ts: float) -> CodeEvent | None:
        position = self.position(ts)
        return self.events[position] if position >= 0 else None

    def commit_at(self, ts: float) -> str | None:
        position = self.position(ts)
        return self.events[position].new if position >= 0 else None

    def one_commit(self, first: int, last: int) -> bool:
        """Whether HEAD held one commit (or none yet: before the reflog) from position ``first`` to ``last``."""
        if first == last:
            return True
        return first >= 0 and all(e.new == self.events[first].new for e in self.events[first + 1 : last + 1])

    def held_within(self, low: float, high: float) -> list[str | None]:
        """Every commit HEAD held between ``low`` and ``high`` (None: before the reflog), the one
        at ``low`` first, then those set in between in file order (a bounded number of them)."""
        held = [self.commit_at(low)]
        a = bisect.bisect_right(self._times, low)
        b = bisect.bisect_right(self._times, high)
        for i in sorted(self._by_time[a : min(b, a + 4 * MAX_CANDIDATES)]):
            held.append(self.events[i].new)
        return held

    def stepped_within(self, low: float, high: float) -> tuple[str, ...]:
        """The commits of the clock steps whose stretch meets ``[low, high]``."""
        # the stretches are disjoint and sorted: the ones meeting the window are consecutive
        a = bisect.bisect_left(self._span_highs, low)
        b = bisect.bisect_right(self._span_lows, high)
        return tuple(c for commits in self._span_commits[a:b] for c in commits)

    def changed_between(self, low: float, high: float) -> list[CodeEvent]:
        """The events that changed the commit at a time in ``(low, high]``, in file order."""
        a = bisect.bisect_right(self._changing_times, low)
        b = bisect.bisect_right(self._changing_times, high)
        return [self.all[i] for i in sorted(self._changing[a:b])]


def clock_steps(events: Sequence[CodeEvent]) -> list[ClockStep]:
    """Where the reflog's clock reads earlier than an entry before it (the writer's clock was set
    back, or the entries came from two machines), with the commits HEAD held meanwhile."""
    steps: list[ClockStep] = []
    highest: int | None = None
    highs: list[int] = []  # the largest time among the first k entries (non-decreasing)
    for position, event in enumerate(events):
        if highest is not None and event.ts < highest:
            first = bisect.bisect_right(highs, event.ts)  # the first entry read later than this one
            steps.append(ClockStep(event, highest - event.ts, event.ts, highest, _held(events, first, position)))
        highest = event.ts if highest is None else max(highest, event.ts)
        highs.append(highest)
    return steps


def _held(events: Sequence[CodeEvent], first: int, last: int) -> tuple[str, ...]:
    """The commits HEAD held from entry ``first`` to entry ``last``, newest first, capped."""
    found: list[str] = []
    for event in reversed(events[max(first, last - 4 * MAX_CANDIDATES) : last + 1]):
        for commit in (event.new, event.old):
            if not is_zero_sha(commit) and commit not in found and len(found) < MAX_CANDIDATES:
                found.append(commit)
    return tuple(found)


def _merged(spans: list[tuple[int, int, tuple[str, ...]]]) -> list[tuple[int, int, tuple[str, ...]]]:
    """Overlapping stretches joined (their commits too, capped), sorted."""
    out: list[tuple[int, int, tuple[str, ...]]] = []
    for low, high, commits in sorted(spans, key=lambda s: s[0]):
        if out and low <= out[-1][1]:
            last_low, last_high, last_commits = out[-1]
            joined = tuple(dict.fromkeys(last_commits + commits))[:MAX_CANDIDATES]
            out[-1] = (last_low, max(last_high, high), joined)
        else:
            out.append((low, high, commits))
    return out


def event_at(events: Sequence[CodeEvent], ts: float) -> CodeEvent | None:
    """The event that set what HEAD held at epoch ``ts``; None before the reflog's first entry."""
    return HeadIndex(events).event_at(ts)


def head_at(events: Sequence[CodeEvent], ts: float) -> str | None:
    """The commit HEAD held at epoch ``ts``; None before the reflog's first entry."""
    event = event_at(events, ts)
    return event.new if event else None


def attribute(
    events: Sequence[CodeEvent] | HeadIndex | None,
    starts: Sequence[datetime],
    end: datetime | None,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
) -> Attribution:
    """Attribute one run to a commit.

    ``starts`` holds every instant the run's first timestamp may stand for (empty: no time),
    nominal first; ``end`` is its last timestamp; ``events`` is None without a repository (a
    ``HeadIndex`` of them when many runs are attributed: it is built once).
    """
    if events is None:
        return Attribution(None, "no-repo")
    if not starts:
        return Attribution(None, "no-time")
    index = events if isinstance(events, HeadIndex) else HeadIndex(events)
    nominal = starts[0].timestamp()
    setter = index.event_at(nominal)
    commit = setter.new if setter else None
    readings, windows, stepped = _readings(index, starts, tolerance_s)
    outcomes = [commit, *readings, *(c for window in windows for c in window), *stepped]
    latest_start = max(s.timestamp() for s in starts) + tolerance_s
    end_ts = max((end.timestamp() if end else nominal), nominal)
    during = index.changed_between(latest_start, end_ts)
    ids = [e.id for e in during]
    may_differ = setter is not None and setter.files_may_differ
    if len(set(outcomes)) > 1:  # None among them: one reading falls before the reflog's start
        reasons = _ambiguous_reasons(commit, readings, windows, stepped)
        return Attribution(commit, "ambiguous", ids, _distinct(outcomes), may_differ, reasons=reasons)
    if commit is None or setter is None:  # (one is None when the other is)
        return Attribution(None, "before-reflog")
    if setter.approximate or any(e.approximate for e in during):
        # No reflog: the move's time is a file's mtime, a bound rather than a reading.
        return Attribution(commit, "approximate", ids, [], may_differ)
    return Attribution(commit, "mixed" if during else "exact", ids, [], may_differ)


def _readings(
    index: HeadIndex, starts: Sequence[datetime], tolerance_s: float
) -> tuple[list[str | None], list[list[str | None]], list[str]]:
    """What each possible start reads: the commit HEAD held at it, every commit held within the
    tolerance of it, and every one held during a clock step near it; apart, as each is a reason
    of its own when they disagree."""
    readings = [index.commit_at(s.timestamp()) for s in starts]
    windows = [index.held_within(s.timestamp() - tolerance_s, s.timestamp() + tolerance_s) for s in starts]
    stepped = [
        c for s in starts for c in index.stepped_within(s.timestamp() - tolerance_s, s.timestamp() + tolerance_s)
    ]
    return readings, windows, stepped


def _ambiguous_reasons(
    commit: str | None,
    readings: Sequence[str | None],
    windows: Sequence[Sequence[str | None]],
    stepped: Sequence[str],
) -> list[AmbiguousReason]:
    """Why the readings of ``_readings`` disagree (``commit``: the nominal start's), each reason
    named so the user sees which guess the attribution rests on."""
    reasons: list[AmbiguousReason] = []
    if len(set(readings)) > 1:
        reasons.append("dst")
    if any(len(set(window)) > 1 for window in windows):
        reasons.append("clock-tolerance")
    if set(stepped) - {commit}:
        reasons.append("reflog-clock-step")
    return reasons


@functools.lru_cache(maxsize=8)
def _probes(tolerance_s: float) -> tuple[tuple[float, int, bool], ...]:
    """Every reading ``assume_zone`` makes, earliest first: (seconds from the wall-clock time
    read as UTC, index in REAL_OFFSETS, whether it is the offset's own reading or a tolerance
    either side)."""
    probes = [
        (-offset.total_seconds() + d, index, d == 0.0)
        for index, offset in enumerate(REAL_OFFSETS)
        for d in (-tolerance_s, 0.0, tolerance_s)
    ]
    return tuple(sorted(probes))


def assume_zone(tied: Attribution, heads: HeadIndex, wall: datetime, tolerance_s: float) -> Attribution:
    """``tied``, made ``ambiguous`` (reason ``zone-assumed``) when the naive wall-clock start
    ``wall``, read at another real-world offset than the assumed one (or a tolerance either
    side of it), falls on another commit.

    Only the reflog entries within the offsets' window are looked at: a start whose window holds
    no move of HEAD (most runs) costs two look-ups; the others one walk over the readings in time
    order and the entries in the window together, no look-up each.
    """
    if tied.attribution in ("no-repo", "no-time"):
        return tied
    probes = _probes(tolerance_s)
    as_utc = wall.replace(tzinfo=timezone.utc, fold=0).timestamp()
    first, last = heads.position(as_utc + probes[0][0]), heads.position(as_utc + probes[-1][0])
    if heads.one_commit(first, last):
        return tied
    floor, events = heads.floor, heads.events
    position = first
    in_time_order: list[str | None] = []
    by_offset: list[str | None] = [None] * len(REAL_OFFSETS)
    for delta, index, own in probes:
        instant = as_utc + delta
        while position < last and floor[position + 1] <= instant:
            position += 1
        commit = events[position].new if position >= 0 else None
        if not in_time_order or in_time_order[-1] != commit:
            in_time_order.append(commit)
        if own:
            by_offset[index] = commit
    if len(set(in_time_order)) < 2:
        return tied
    spans: list[ZoneReading] = []
    start = 0
    for index in range(1, len(REAL_OFFSETS) + 1):  # west to east
        if index == len(REAL_OFFSETS) or by_offset[index] != by_offset[start]:
            spans.append(ZoneReading(by_offset[start], REAL_OFFSETS[start], REAL_OFFSETS[index - 1]))
            start = index
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
