"""The default view: code events and runs in one time-ordered table (rich)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, tzinfo

from rich.console import Console
from rich.table import Table
from rich.text import Text

from timeline.clock import parse_zone
from timeline.errors import UsageError
from timeline.model import CodeEvent, Run, Timeline, is_zero_sha
from timeline.records import DiagnosticCode
from timeline.render.plain_table import plain_table
from timeline.render.safe import displayable, visible
from timeline.render.window import view
from timeline.render.wording import (
    DATE_SOURCE_NOTE,
    RUN_STATUS,
    attribution_text,
    checkout_note,
    counted,
    error_text,
    event_message,
    wall_time,
    zone_readings_text,
)
from timeline.workload import workload_label

MAX_COMMITS_SHOWN = 8
ZONE_SOURCE_NOTE = {
    "inferred-mtime": "inferred from the file's mtime",
    "machine-local": "this machine's zone, assumed",
    "pattern": "from --log-tz PATTERN=ZONE",
}
BENCH_FACTS = (
    ("output_throughput", "output"),
    ("decode_median_throughput", "decode median"),
    ("ttft_median", "TTFT median"),
    ("tpot_median", "TPOT median"),
)
ATTRIBUTION_STYLE = {"exact": "green", "mixed": "bold yellow", "ambiguous": "bold yellow", "before-reflog": "magenta"}
STATUS_STYLE = {"crashed": "bold red", "no-stats": "yellow"}


def short(sha: str | None) -> str:
    return "-" if sha is None or is_zero_sha(sha) else sha[:9]


def timeline_rows(timeline: Timeline) -> list[CodeEvent | Run]:
    """Events and runs merged by instant; at equal instants the event comes first (it set the code)."""
    rows: list[tuple[float, int, int, CodeEvent | Run]] = []
    for order, event in enumerate(timeline.events):
        rows.append((float(event.ts), 0, order, event))
    for order, run in enumerate(timeline.runs):
        when = run.start.timestamp() if run.start else float("inf")
        rows.append((when, 1, order, run))
    rows.sort(key=lambda row: row[:3])
    return [row[3] for row in rows]


def display_zone(timeline: Timeline, display: tzinfo | None) -> tuple[tzinfo | None, str]:
    """The zone the table shows times in, and its name for the title.

    ``--display-tz`` wins; else the logs' own zone when they share one (what the user saw);
    else each row keeps its own zone (runs their log's, events the reflog writer's offset).
    """
    if display is not None:
        return display, str(display)
    names = {run.tz for run in timeline.runs if run.tz} or {timeline.log_tz}
    if len(names) == 1:
        (name,) = names
        try:
            return parse_zone(name), name
        except UsageError:
            pass
    return None, "each log's own zone"


def _when(moment: datetime | None, zone: tzinfo | None) -> str:
    if moment is None:
        return "(no time)"
    if zone is None:  # rows keep their own zone: say which
        return moment.strftime("%Y-%m-%d %H:%M:%S %z")
    return wall_time(moment, zone)


def _event_details(event: CodeEvent, keep: set[str] | None) -> Text:
    """The message and the commits the move brought in and took away. ``keep``: the commits
    that must be shown (None: every commit); past ``MAX_COMMITS_SHOWN`` the others fold."""
    text = Text(event_message(event))
    for label, commits in (("in", event.commits), ("out", event.commits_removed)):
        if not commits:
            continue
        text.append(f"\n{counted(len(commits), 'commit')} {label}:", style="bold")
        shown = (
            commits
            if keep is None
            else [c for n, c in enumerate(commits) if c.sha in keep or n < MAX_COMMITS_SHOWN - 1]
        )
        if len(commits) - len(shown) < 2:  # "... 1 more" takes the line the commit would
            shown = commits
        for commit in shown:
            text.append(f"\n  {commit.sha[:9]} {commit.subject}")
        if len(shown) < len(commits):
            text.append(
                f"\n  ... {len(commits) - len(shown)} more, none of them a likely suspect (--all-events lists them)"
            )
    return text


def _zone_note(run: Run) -> str | None:
    if run.tz_source not in ZONE_SOURCE_NOTE:
        return None
    return f"log zone {run.tz} ({ZONE_SOURCE_NOTE[run.tz_source]})"


def _date_note(run: Run) -> str | None:
    return DATE_SOURCE_NOTE.get(run.date_source or "")


def _run_details(run: Run, zone_note: bool = True, date_note: bool = True) -> Text:
    where = f"{run.source}"
    if run.first_line is not None:
        where += f":{run.first_line}-{run.last_line}"
    text = Text(where, style="cyan")
    label = workload_label(run.config, run.machine)
    if label:
        text.append(f"\n{label}")
    facts = []
    if run.nccl_versions:
        facts.append("nccl " + ",".join(run.nccl_versions))
    decode = run.metrics.get("decode_throughput")
    aggregated = run.metrics.get("aggregated_decode_throughput")
    if run.steady is not None and run.steady.ranks:  # ranks that each log their share: the sum
        facts.append(f"decode {run.steady.value:.1f} {run.steady.unit} (sum of {len(run.steady.ranks)} ranks)")
    elif decode:
        facts.append(f"decode {decode.median:.1f} {decode.unit} (median of {decode.n})")
    elif aggregated:  # vLLM's "N Engines Aggregated:" lines only: the server's total
        facts.append(f"decode {aggregated.median:.1f} {aggregated.unit} (engines aggregated, median of {aggregated.n})")
    accept = run.metrics.get("accept_len") or run.metrics.get("accept_length")
    if accept:
        facts.append(f"accept len {accept.mean:.2f}")
    for name, label in BENCH_FACTS:  # a benchmark client's result
        metric = run.metrics.get(name)
        if metric:
            facts.append(f"{label} {metric.median:.1f} {metric.unit}")
    if facts:
        text.append("\n" + " · ".join(facts))
    error = error_text(run.error, run.error_line) if run.status == "crashed" else ""
    if error:
        text.append(f"\n{error}", style="red")
    if run.events_during:
        text.append(f"\nHEAD moved during the run: {', '.join(run.events_during)}", style="yellow")
    readings = zone_readings_text(run)
    if readings:
        text.append(f"\n{readings}", style="yellow")
    elif run.candidate_commits:
        text.append(f"\nmay have run on: {' or '.join(short(c) for c in run.candidate_commits)}", style="yellow")
    note = _zone_note(run) if zone_note else None
    if note:
        text.append(f"\n{note}", style="dim")
    dates = _date_note(run) if date_note else None
    if dates:
        text.append(f"\n{dates}", style="yellow")
    return text


def timeline_table(
    timeline: Timeline, display: tzinfo | None, all_events: bool, runs_note: str | None, events_note: str | None
) -> Table:
    """The table of a timeline already made ``displayable``, its runs and code events those
    shown (``runs_note`` and ``events_note`` say which are not); ``all_events``: every commit
    of an event listed, not only the first ones and the likely suspects."""
    zone, zone_name = display_zone(timeline, display)
    # One zone note shared by every run is said once, under the table, not on every row.
    notes = {_zone_note(run) for run in timeline.runs}
    shared = notes.pop() if len(notes) == 1 and len(timeline.runs) > 1 else None
    date_notes = {_date_note(run) for run in timeline.runs}
    shared_dates = date_notes.pop() if len(date_notes) == 1 and len(timeline.runs) > 1 else None
    caption = "\n".join(
        line
        for line in (
            f"every run: {shared}" if shared else None,
            f"every run: {shared_dates}" if shared_dates else None,
            runs_note,
            events_note,
        )
        if line
    )
    table = Table(
        title=f"Timeline (times in {zone_name})",
        expand=False,
        show_lines=True,
        caption=caption or None,
        caption_justify="left",
    )
    table.add_column("When", no_wrap=True)
    table.add_column("What", no_wrap=True)
    table.add_column("Commit", no_wrap=True)
    table.add_column("Details", overflow="fold")
    keep = None if all_events else {c.sha for c in timeline.culprits if c.likelihood not in ("unlikely", "cleared")}
    for row in timeline_rows(timeline):
        if isinstance(row, CodeEvent):
            move = short(row.new) if not row.changes_commit else f"{short(row.old)}\n→ {short(row.new)}"
            table.add_row(
                Text(_when(row.time, zone)),
                Text(f"{row.id} {row.kind}", style="bold blue"),
                Text(move),
                _event_details(row, keep),
            )
        else:
            commit = Text(short(row.commit))
            # "ambiguous (zone assumed)" on two lines: the column stays narrow
            said = attribution_text(row).replace(" (", "\n(")
            commit.append(f"\n{said}", style=ATTRIBUTION_STYLE.get(row.attribution, "dim"))
            when = _when(row.start, zone)
            if row.end is not None:
                end = _when(row.end, zone)
                # the end's time alone when it is the same day; its date too across midnight
                when += f"\n→ {end[11:19] if end[:10] == when[:10] else end}"
            what = Text(f"{row.id} run")
            if row.status != "ok":
                what.append(f"\n{RUN_STATUS[row.status]}", style=STATUS_STYLE.get(row.status, ""))
            details = _run_details(row, zone_note=shared is None, date_note=shared_dates is None)
            # Text, not str: rich would read a str as markup and look for emoji codes in it
            table.add_row(Text(when), what, commit, details)
    return table


def render_timeline(
    timeline: Timeline,
    console: Console,
    display: tzinfo | None = None,
    all_events: bool = False,
    all_runs: bool = False,
) -> None:
    """The table, the shifts and culprits, and the note on the checkout: every value shown made
    ``displayable`` once (``render.window.view``)."""
    shown, runs_note, events_note = view(timeline, all_events, all_runs)
    table = timeline_table(shown, display, all_events, runs_note, events_note)
    drawn = plain_table(table, console)  # (None: rich draws it)
    if drawn is None:
        console.print(table)
    else:
        console.file.write(drawn)
    from timeline.render.shifts import render_shifts

    render_shifts(shown, console)
    note = checkout_note(timeline)  # of every run's machine, shown or not
    if note:
        console.print(Text(visible(note), style="dim"))  # (a machine's name is not markup)


def render_warnings(timeline: Timeline, console: Console, hints: Mapping[DiagnosticCode, str] | None = None) -> None:
    """One line per warning, never wrapped: tools grep them by file name. Written as plain text
    (``console.print`` took 0.3 ms a line: a thousand logs' warnings, 0.3 s). ``hints``: what the
    caller's user can do about a kind of warning (the command line's flag), by ``Diagnostic.code``."""
    hints = hints or {}
    if timeline.warnings:
        console.file.write(
            "".join(
                f"warning: {warning}{f' ({hints[warning.code]})' if warning.code in hints else ''}\n"
                for warning in displayable(timeline.warnings)
            )
        )
        console.file.flush()
