"""Which code events the views show: those around the runs, not a checkout's whole history.

A checkout used for a year has a reflog of thousands of moves; every one of them in the table
buried the runs (and rich took 28 s to draw 10,000). The views (table, markdown, HTML) show the
events from the move that set the code of the first run to the first move after the last run;
the JSON document keeps them all, and ``--all-events`` shows them all.
"""

from __future__ import annotations

from typing import NamedTuple

from timeline.model import CodeEvent, Timeline

WITHOUT_RUNS = 20  # events shown when no run has a time: the latest ones


class EventWindow(NamedTuple):
    events: list[CodeEvent]
    earlier: int  # events before them, not shown
    later: int  # events after them, not shown

    def note(self) -> str | None:
        """The line that says what is not shown, or None when everything is."""
        if not self.earlier and not self.later:
            return None
        parts = [f"{count:,} {when}" for count, when in ((self.earlier, "earlier"), (self.later, "later")) if count]
        return (
            f"{' and '.join(parts)} code event{'s' if self.earlier + self.later != 1 else ''} not shown "
            "(--all-events shows them; the JSON document has them all)"
        )


def event_window(timeline: Timeline, all_events: bool = False) -> EventWindow:
    """The events to show: from the last commit-changing move at or before the first run's start
    to the first commit-changing move after the last run's end (both included), in reflog order;
    the latest ``WITHOUT_RUNS`` when no run has a time; all of them with ``all_events``."""
    events = timeline.events
    starts = [run.start.timestamp() for run in timeline.runs if run.start is not None]
    if all_events or not events:
        return EventWindow(list(events), 0, 0)
    if not starts:
        first = max(0, len(events) - WITHOUT_RUNS)
        return EventWindow(list(events[first:]), first, 0)
    begin = min(starts)
    end = max([run.end.timestamp() for run in timeline.runs if run.end is not None] + starts)
    first = 0
    for i, event in enumerate(events):
        if event.ts > begin:
            break
        if event.changes_commit:
            first = i
    last = len(events) - 1
    for i in range(len(events)):
        if events[i].ts > end and events[i].changes_commit:
            last = i
            break
    first = min(first, last)
    return EventWindow(list(events[first : last + 1]), first, len(events) - 1 - last)
