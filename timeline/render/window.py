"""Which runs and code events the views show: those that answer, not a store's whole history.

A checkout used for a year has a reflog of thousands of moves; every one of them in the table
buried the runs (and rich took 28 s to draw 10,000). The views (table, markdown, HTML) show the
events from the move that set the code of the first run to the first move after the last run
(past ``MAX_RUNS`` runs, of those only some: below); the JSON document keeps them all, and
``--all-events`` shows them all.

A store of nightly runs holds 100,000 of them (``timeline history``), and a table of every one
took two minutes and a gigabyte to print for nobody to read. Past ``MAX_RUNS`` runs, the views
show the runs around each shift with a verdict (the last ``AROUND_SHIFT`` of the side before it
and the first of the side after, which are of its own workload and machine) and the latest
``LATEST_RUNS``; the JSON, CSV and Parquet keep every run, and ``--all-runs`` shows them all.
The same views then list the shifts with a verdict only: between 100 versions of four machines,
396 shifts, most of them "no change", were 3,500 lines of table before the first regression. A
shift a culprit names stays, whatever its verdict; the JSON keeps every shift. And of the code
events, they show those between the two sides of each shift shown, during the runs shown and
around the latest runs: every move of those four machines' 100 versions (397 rows, two thirds
of the table and of its drawing) showed the few that set the code of a shown run among hundreds
that set the code of hidden ones.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the command line reads the bounds below for its help: no model imported for it
    from timeline.model import CodeEvent, Run, Shift, Timeline

WITHOUT_RUNS = 20  # events shown when no run has a time: the latest ones
MAX_RUNS = 200  # a timeline of more runs shows the run window
AROUND_SHIFT = 3  # runs shown on each side of a shift with a verdict
LATEST_RUNS = 20  # the last runs, always shown


class RunWindow(NamedTuple):
    runs: list[Run]
    hidden: int  # runs not shown
    shifts: list[Shift]
    quiet: int  # shifts without a verdict not shown

    def note(self) -> str | None:
        """The line that says what is not shown, or None when everything is."""
        if not self.hidden and not self.quiet:
            return None
        said = (
            f"{self.hidden:,} run{'s' if self.hidden != 1 else ''} not shown, only those around each shift with a "
            f"verdict and the latest {LATEST_RUNS}"
        )
        if self.quiet:
            said += f"; {self.quiet:,} shift{'s' if self.quiet != 1 else ''} without a verdict not shown"
        return f"{said} (--all-runs shows them; the JSON has them all, the CSV and Parquet every run)"

    def of(self, timeline: Timeline) -> Timeline:
        """``timeline`` with the runs and shifts of the window (itself when it shows them all)."""
        if not self.hidden and not self.quiet:
            return timeline
        return dataclasses.replace(timeline, runs=self.runs, shifts=self.shifts)


def run_window(timeline: Timeline, all_runs: bool = False) -> RunWindow:
    """The runs to show, in the timeline's order: all of them up to ``MAX_RUNS`` or with
    ``all_runs``; else the ``AROUND_SHIFT`` runs before and after each shift that has a verdict
    and the ``LATEST_RUNS`` last ones, and the shifts with a verdict or named by a culprit or by
    a shown shift's suspect (the shift that cleared it or undid its own)."""
    runs = timeline.runs
    if all_runs or len(runs) <= MAX_RUNS:
        return RunWindow(list(runs), 0, list(timeline.shifts), 0)
    position = {run.id: index for index, run in enumerate(runs)}
    shown = set(range(max(0, len(runs) - LATEST_RUNS), len(runs)))
    named = {i for c in timeline.culprits for i in (*c.shifts, *(i for e in c.evidence for i in e.shifts))}
    for shift in timeline.shifts:
        if shift.verdict is None:
            continue
        before = sorted(position[r] for r in shift.from_side.runs if r in position)
        after = sorted(position[r] for r in shift.to_side.runs if r in position)
        shown.update(before[-AROUND_SHIFT:])
        shown.update(after[:AROUND_SHIFT])
        for suspect in shift.suspects:  # "cleared: came at s7 with no change", "undone by s9"
            named.update(i for i in (suspect.undone_by, suspect.cleared and suspect.cleared.by) if i)
    shifts = [shift for shift in timeline.shifts if shift.verdict is not None or shift.id in named]
    return RunWindow(
        [runs[index] for index in sorted(shown)],
        len(runs) - len(shown),
        shifts,
        len(timeline.shifts) - len(shifts),
    )


class EventWindow(NamedTuple):
    events: list[CodeEvent]
    earlier: int  # events before them, not shown
    later: int  # events after them, not shown
    between: int = 0  # events among them not shown: past MAX_RUNS, those of no run or shift shown

    def note(self) -> str | None:
        """The line that says what is not shown, or None when everything is."""
        if self.between:
            hidden = self.earlier + self.later + self.between
            return (
                f"{hidden:,} code event{'s' if hidden != 1 else ''} not shown, only those between the sides of "
                f"each shift shown, during the runs shown and around the latest {LATEST_RUNS} runs "
                "(--all-events shows them; the JSON document has them all)"
            )
        if not self.earlier and not self.later:
            return None
        parts = [f"{count:,} {when}" for count, when in ((self.earlier, "earlier"), (self.later, "later")) if count]
        return (
            f"{' and '.join(parts)} code event{'s' if self.earlier + self.later != 1 else ''} not shown "
            "(--all-events shows them; the JSON document has them all)"
        )

    def of(self, timeline: Timeline) -> Timeline:
        """``timeline`` with the events of the window (itself when it shows them all)."""
        if not self.earlier and not self.later and not self.between:
            return timeline
        return dataclasses.replace(timeline, events=self.events)


def event_window(timeline: Timeline, all_events: bool = False, runs_hidden: bool = False) -> EventWindow:
    """The events to show: from the last commit-changing move at or before the first run's start
    to the first commit-changing move after the last run's end (both included), in reflog order;
    the latest ``WITHOUT_RUNS`` when no run has a time; all of them with ``all_events``.
    ``runs_hidden``: ``timeline`` holds a run window's runs and shifts (``RunWindow.of``), and
    of those events only the ones its shifts and runs name are shown, and those of the window of
    its latest ``LATEST_RUNS`` runs."""
    window = _event_span(timeline, all_events)
    if all_events or not runs_hidden or not window.events:
        return window
    latest = _event_span(dataclasses.replace(timeline, runs=timeline.runs[-LATEST_RUNS:]), False)
    named = {e.id for e in latest.events}
    named.update(event for shift in timeline.shifts for event in shift.events)
    named.update(event for run in timeline.runs for event in run.events_during)
    kept = [(index, event) for index, event in enumerate(window.events, window.earlier) if event.id in named]
    if len(kept) == len(window.events):
        return window
    total = len(timeline.events)
    if not kept:
        return EventWindow([], 0, 0, total)
    first, last = kept[0][0], kept[-1][0]
    return EventWindow([event for _, event in kept], first, total - 1 - last, last + 1 - first - len(kept))


def _event_span(timeline: Timeline, all_events: bool) -> EventWindow:
    """``event_window`` of every run of ``timeline``: the span from the move that set the first
    one's code to the first move after the last one."""
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


class View(NamedTuple):
    """What a view (table, markdown) shows of a timeline, and the lines that say what it leaves out."""

    timeline: Timeline  # its run window and the events around those runs, made ``displayable``
    runs_note: str | None
    events_note: str | None


def view(timeline: Timeline, all_events: bool = False, all_runs: bool = False) -> View:
    """The run window of ``timeline`` and the event window around it, and only those made
    ``displayable``: the 20 events shown of a 100,000-entry reflog, not 100,000 (2.5 s)."""
    from timeline.render.safe import displayable  # (the help reads this module's bounds: nothing more imported)

    runs = run_window(timeline, all_runs)
    windowed = runs.of(timeline)
    events = event_window(windowed, all_events, runs_hidden=bool(runs.hidden))
    return View(displayable(events.of(windowed)), runs.note(), events.note())
