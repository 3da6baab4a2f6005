"""The HTML report: one self-contained file, charts first, then every table.

``timeline build ... --html report.html`` writes it. It needs nothing when opened: the charts are
inline SVG, the style is inline, there is no script, and a Content-Security-Policy forbids the
page any network access. Like every view it reads the typed model (``timeline.model.Timeline``) and
words the analysis' facts with ``timeline.render.wording``, so the report, the other views and the
JSON export (``--json``) say the same.

Per workload group: decode throughput (each run's median, with its min-max range and its span in
time) over time, points coloured by the commit the run ran on (hollow when the run is not
``exact``), a dashed vertical marker with its message for each code event in the chart's time
range, and each shift the comparison found highlighted between its two versions. Then the runs,
code events, shifts, suspects (and culprits) and warnings tables.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone, tzinfo
from html import escape
from typing import overload

from timeline.clock import iso
from timeline.model import Run, Shift, ShiftSide, Suspect, Timeline, is_zero_sha
from timeline.render.shifts import fmt_change
from timeline.render.window import event_window
from timeline.render.wording import (
    EFFECT_MARK,
    HARMLESS,
    clearing_text,
    confounder_text,
    evidence_mark,
    evidence_text,
    rerun_text,
)
from timeline.suspects import knob_linked
from timeline.workload import workload_label

WIDTH, HEIGHT = 880, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 34, 40
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
NO_COMMIT = "#9a9a9a"
CHART_BORDER = "#c9ced6"  # used nowhere else: a test finds the chart in a screenshot by it
EVENT_COLOUR = "#555555"
VERDICT_COLOUR = {"regression": "#d62728", "improvement": "#2ca02c", "inconclusive": "#e0a800", "confounded": "#9467bd"}
METRIC = "decode_throughput"

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
.meta { color: #666; margin: 0 0 16px; }
figure.chart { margin: 0 0 20px; } figcaption { font-weight: 600; margin-bottom: 4px; }
svg.chart { background: #fff; border: 1px solid @CHART_BORDER@; }
svg.chart text { font: 11px system-ui, sans-serif; fill: #333; }
svg.chart .grid { stroke: #eee; } svg.chart .axis { stroke: #999; }
svg.chart .event line { stroke: #555; stroke-dasharray: 4 3; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin-top: 6px; font-size: 13px; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 50%; margin-right: 5px; vertical-align: -1px; }
table { border-collapse: collapse; margin: 0 0 8px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
td.t { white-space: nowrap; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
.verdict-regression { color: #b0171f; font-weight: 600; } .verdict-improvement { color: #1a7f2a; font-weight: 600; }
.verdict-inconclusive { color: #8a6a00; } .verdict-confounded { color: #6b3fa0; font-weight: 600; } .muted { color: #777; }
"""  # noqa: E501 - CSS, one rule set a line
STYLE = CSS.replace("@CHART_BORDER@", CHART_BORDER)


@overload
def _moment(moment: datetime) -> datetime: ...
@overload
def _moment(moment: datetime | None) -> datetime | None: ...
def _moment(moment: datetime | None) -> datetime | None:
    """A time as the report places it: to the millisecond, at its fixed UTC offset (what the
    JSON export holds, so that the report and the export place every point alike)."""
    if moment is None:
        return None
    offset = moment.utcoffset()
    return moment.replace(
        microsecond=moment.microsecond // 1000 * 1000, tzinfo=None if offset is None else timezone(offset)
    )


def _short(sha: str | None) -> str:
    return "-" if sha is None or is_zero_sha(sha) else sha[:9]


def _fmt_time(moment: datetime | None, zone: tzinfo) -> str:
    return "" if moment is None else moment.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")


def _number(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


class _Report:
    def __init__(
        self,
        timeline: Timeline,
        zone: tzinfo,
        zone_name: str,
        shown_events: set[str] | None = None,
        events_note: str | None = None,
    ):
        self.timeline = timeline
        self.shown_events = shown_events  # the events table's (None: all); the note says what is not
        self.events_note = events_note
        self.zone = zone
        self.zone_name = zone_name
        self.runs = {run.id: run for run in timeline.runs}
        self.shifts = {shift.id: shift for shift in timeline.shifts}
        self.subjects: dict[str, str] = {}
        for event in timeline.events:
            for commit in [*event.commits, *event.commits_removed]:
                self.subjects.setdefault(commit.sha, commit.subject)
        self.colours: dict[str | None, str] = {}
        for run in timeline.runs:
            if run.commit and run.commit not in self.colours:
                self.colours[run.commit] = PALETTE[len(self.colours) % len(PALETTE)]

    def colour(self, sha: str | None) -> str:
        return self.colours.get(sha, NO_COMMIT)

    # --- charts -------------------------------------------------------------------------------

    def groups(self) -> dict[str, list[Run]]:
        groups: dict[str, list[Run]] = {}
        for run in self.timeline.runs:
            if run.start is not None and METRIC in run.metrics:
                groups.setdefault(workload_label(run.config) or "(unknown workload)", []).append(run)
        return groups

    def chart(self, index: int, group: str, runs: list[Run]) -> str:
        starts = [_moment(r.start) for r in runs if r.start is not None]  # groups(): all have one
        ends = [_moment(r.end) or s for r, s in zip(runs, starts, strict=False)]
        t0, t1 = min(starts), max(ends)
        span = max((t1 - t0).total_seconds(), 600.0)
        pad = span * 0.06
        x0, x1 = t0 - timedelta(seconds=pad), t0 + timedelta(seconds=span + pad)
        top = max(r.metrics[METRIC].max for r in runs)
        y_max = _nice_ceiling(top * 1.08)
        inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

        def x(moment: datetime) -> float:
            return LEFT + inner_w * (moment - x0).total_seconds() / (x1 - x0).total_seconds()

        def y(value: float) -> float:
            return TOP + inner_h * (1 - value / y_max)

        unit = runs[0].metrics[METRIC].unit
        parts = [
            f'<svg class="chart" id="chart-{index}" data-group="{escape(group)}" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(group)}: decode throughput over time">'
        ]
        # Shifts first, so that points and markers are drawn over them.
        for shift in self.timeline.shifts:
            if shift.group != group:
                continue
            band = self._shift_band(shift)
            if band is None:
                continue
            left, right = max(x(band[0]), LEFT), min(x(band[1]), WIDTH - RIGHT)
            colour = VERDICT_COLOUR.get(shift.verdict or "", "#cccccc")
            label = f"{shift.id} {shift.verdict or 'change'} {fmt_change(shift.change_pct)}"
            parts.append(
                f'<g class="shift" data-verdict="{escape(str(shift.verdict))}"><title>{escape(label)}</title>'
                f'<rect x="{left:.1f}" y="{TOP}" width="{max(right - left, 3):.1f}" height="{inner_h}" '
                f'fill="{colour}" fill-opacity="0.16" stroke="{colour}" stroke-opacity="0.5"/>'
                f'<text x="{(left + right) / 2:.1f}" y="{TOP + inner_h - 8}" text-anchor="middle" fill="{colour}">'
                f"{escape(label)}</text></g>"
            )
        # Axes and grid.
        for tick in _ticks(0.0, y_max):
            parts.append(
                f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}"/>'
                f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>'
            )
        parts.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + inner_h}"/>')
        parts.append(f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{TOP + inner_h}" y2="{TOP + inner_h}"/>')
        for moment in _time_ticks(x0, x1, self.zone):
            parts.append(
                f'<text x="{x(moment):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
                f"{escape(_tick_label(moment, x0, x1, self.zone))}</text>"
            )
        parts.append(
            f'<text x="14" y="{TOP + inner_h / 2:.1f}" text-anchor="middle" transform="rotate(-90 14 '
            f'{TOP + inner_h / 2:.1f})">'
            f"decode {escape(unit)} (median)</text>"
        )
        parts.append(
            f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">time ({escape(self.zone_name)})</text>'
        )
        # Code events in range.
        for event in self.timeline.events:
            when = _moment(event.time)
            if when is None or not (x0 <= when <= x1):
                continue
            ex = x(when)
            message = f"{event.id} {event.kind}: {event.message}"
            brought = [f"+ {_short(c.sha)} {c.subject}" for c in event.commits]
            removed = [f"- {_short(c.sha)} {c.subject}" for c in event.commits_removed]
            title = "\n".join([message, *brought, *removed])
            label = message if len(message) <= 60 else message[:57] + "..."
            parts.append(
                f'<g class="event" data-event="{escape(event.id)}"><title>{escape(title)}</title>'
                f'<line x1="{ex:.1f}" x2="{ex:.1f}" y1="{TOP - 6}" y2="{TOP + inner_h}" stroke="{EVENT_COLOUR}" '
                f'stroke-width="1.5"/>'
                f'<text x="{ex + 4:.1f}" y="{TOP + 4}" transform="rotate(90 {ex + 4:.1f} '
                f'{TOP + 4})">{escape(label)}</text></g>'
            )
        # Runs: span, min-max range, median point.
        for run, start, end in zip(runs, starts, ends, strict=False):
            summary = run.metrics[METRIC]
            colour = self.colour(run.commit)
            exact = run.attribution in ("exact", "no-repo")
            cx, cy = x(start), y(summary.median)
            title = (
                f"{run.id} {_short(run.commit)} ({run.attribution}): decode median "
                f"{summary.median:.1f} {unit}, range {summary.min:.1f}-{summary.max:.1f}, n={summary.n}"
                f"\n{run.source}:{run.first_line}-{run.last_line}"
            )
            parts.append(
                f'<g class="run" data-run="{escape(run.id)}" data-commit="{escape(run.commit or "")}">'
                f"<title>{escape(title)}</title>"
                f'<line x1="{cx:.1f}" x2="{max(x(end), cx):.1f}" y1="{cy:.1f}" y2="{cy:.1f}" stroke="{colour}" '
                f'stroke-width="3" stroke-opacity="0.55"/>'
                f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(summary.min):.1f}" y2="{y(summary.max):.1f}" '
                f'stroke="{colour}" stroke-width="1.5"/>'
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{colour if exact else "#ffffff"}" '
                f'stroke="{colour}" stroke-width="2.5"/></g>'
            )
        parts.append("</svg>")
        commits: dict[str | None, None] = {}
        for run in runs:
            commits.setdefault(run.commit, None)
        legend = "".join(
            '<span><span class="swatch" '
            f'style="background:{self.colour(sha)}"></span><code>{escape(_short(sha))}</code> '
            f"{escape(self.subjects.get(sha, '') if sha else 'no commit known')}</span>"
            for sha in commits
        )
        return (
            f'<figure class="chart"><figcaption>{escape(group)}</figcaption>{"".join(parts)}'
            f'<div class="legend">{legend}<span class="muted">hollow: run not tied to one commit exactly</span></div>'
            "</figure>"
        )

    def _shift_band(self, shift: Shift) -> tuple[datetime, datetime] | None:
        def moments(side: ShiftSide, end: bool) -> list[datetime]:
            found = []
            for run_id in side.runs:
                run = self.runs.get(run_id)
                moment = _moment((run.end if end else None) or run.start) if run else None
                if moment is not None:
                    found.append(moment)
            return found

        before, after = moments(shift.from_side, end=True), moments(shift.to_side, end=False)
        if not before or not after:
            return None
        left, right = max(before), min(after)
        return (left, right) if left <= right else (right, left)

    # --- tables -------------------------------------------------------------------------------

    def runs_table(self) -> str:
        rows = []
        for run in self.timeline.runs:
            decode, accept = run.metrics.get(METRIC), run.metrics.get("accept_len")
            rows.append(
                "<tr>"
                f"<td>{escape(run.id)}</td>"
                f'<td class="t">{_fmt_time(_moment(run.start), self.zone)}</td>'
                f'<td class="t">{_fmt_time(_moment(run.end), self.zone)}</td>'
                '<td><span class="swatch" '
                f'style="background:{self.colour(run.commit)}"></span><code>{_short(run.commit)}</code></td>'
                f"<td>{escape(run.attribution or '')}{self._during(run)}</td>"
                f"<td>{escape(workload_label(run.config))}</td>"
                f'<td class="num">{_number(decode.median if decode else None)}</td>'
                f'<td class="num">{decode.n if decode else ""}</td>'
                f'<td class="num">{_number(accept.mean if accept else None, 2)}</td>'
                f"<td>{escape(', '.join(run.nccl_versions))}</td>"
                f"<td><code>{escape(run.source)}:{run.first_line}-{run.last_line}</code></td>"
                "</tr>"
            )
        return _table(
            "runs",
            [
                "Run",
                "Start",
                "End",
                "Commit",
                "Attribution",
                "Group",
                "Decode median",
                "Lines",
                "Accept len",
                "NCCL",
                "Source",
            ],
            rows,
            "No runs found in the logs.",
        )

    @staticmethod
    def _during(run: Run) -> str:
        extra = ""
        if run.events_during:
            extra += f'<br><span class="muted">HEAD moved: {escape(", ".join(run.events_during))}</span>'
        if run.candidate_commits:
            extra += (
                f'<br><span class="muted">may have run on: '
                f"{escape(' or '.join(_short(c) for c in run.candidate_commits))}</span>"
            )
        return extra

    def events_table(self) -> str:
        rows = []
        for event in self.timeline.events:
            if self.shown_events is not None and event.id not in self.shown_events:
                continue
            commits = "".join(
                f"<br>{sign} <code>{_short(c.sha)}</code> {escape(c.subject)}"
                for sign, listed in (("+", event.commits), ("−", event.commits_removed))
                for c in listed
            )
            rows.append(
                "<tr>"
                f"<td>{escape(event.id)}</td>"
                f'<td class="t">{_fmt_time(_moment(event.time), self.zone)}</td>'
                f"<td>{escape(event.kind)}</td>"
                f"<td><code>{_short(event.old)}</code> → <code>{_short(event.new)}</code></td>"
                f"<td>{escape(event.message)}{commits}</td>"
                "</tr>"
            )
        message = "No code events (no --repo given)." if self.timeline.repo is None else "No code events."
        table = _table("events", ["Event", "Time", "Kind", "Commit", "Message and commits"], rows, message)
        return table + (f'\n<p class="note">{escape(self.events_note)}</p>' if self.events_note else "")

    def shifts_table(self) -> str:
        rows = []
        for shift in self.timeline.shifts:
            verdict = shift.verdict or ""
            sides = [
                f"<code>{_short(side.commit)}</code> {_number(side.value)} "
                f'<span class="muted">({escape(", ".join(side.runs))})</span>'
                for side in (shift.from_side, shift.to_side)
            ]
            confounders = "; ".join(
                [confounder_text(c, knob_linked(self.timeline.culprits, shift, c)) for c in shift.confounders]
                + [rerun_text(r, shift) for r in shift.reruns]
            )
            p_value = shift.p_value
            rows.append(
                "<tr>"
                f"<td>{escape(shift.id)}</td>"
                f"<td>{escape(shift.group)}</td>"
                f"<td>{escape(shift.metric)}</td>"
                f"<td>{sides[0]}</td><td>{sides[1]}</td>"
                f'<td class="num">{fmt_change(shift.change_pct)}</td>'
                f'<td class="num">{"" if p_value is None else f"{p_value:.3g}"}</td>'
                f'<td class="verdict-{escape(verdict)}">{escape(verdict)}'
                f"{' (single run)' if shift.single_run else ''}</td>"
                f"<td>{escape(', '.join(shift.events))}</td>"
                f"<td>{escape(confounders)}</td>"
                "</tr>"
            )
        return _table(
            "shifts",
            ["Shift", "Group", "Metric", "From", "To", "Change", "p", "Verdict", "Events", "Confounders"],
            rows,
            "No shifts.",
        )

    def suspects_table(self) -> str:
        rows = []
        for number, culprit in enumerate(self.timeline.culprits, 1):
            marks = [f"{evidence_mark(e)} {escape(evidence_text(e, culprit, self.shifts))}" for e in culprit.evidence]
            reasons = "<br>".join(marks) or f"{EFFECT_MARK['shown']} "  # no evidence: a bare mark
            rows.append(
                f"<tr><td>{number}. {escape(culprit.likelihood)}</td>"
                f"<td>{escape(', '.join(culprit.shifts))}</td>"
                f"<td><code>{_short(culprit.sha)}</code></td>"
                f"<td>{escape(culprit.subject)}</td><td></td>"
                f"<td>{reasons}</td></tr>"
            )
        for shift in self.timeline.shifts:
            for suspect in shift.suspects:
                paths = suspect.paths or []
                rows.append(
                    "<tr><td>suspect</td>"
                    f"<td>{escape(shift.id)}</td>"
                    f"<td><code>{_short(suspect.sha)}</code></td>"
                    f"<td>{escape(suspect.subject)}</td>"
                    f"<td>{escape(', '.join(paths[:6]))}{' ...' if len(paths) > 6 else ''}</td>"
                    f"<td>{escape(self._suspect_note(suspect))}</td></tr>"
                )
        return _table("suspects", ["", "Shifts", "Commit", "Subject", "Paths", "Reasoning"], rows, "No suspects.")

    @staticmethod
    def _suspect_note(suspect: Suspect) -> str:
        notes = []
        if suspect.change:
            notes.append(f"{suspect.change} with {suspect.event or 'the move'}")
        if suspect.unlikely:
            notes.append(f"unlikely: touches only {HARMLESS}")
        if suspect.cleared:
            notes.append(f"cleared: {clearing_text(suspect.cleared)}")
        return "; ".join(notes)

    def warnings_list(self) -> str:
        warnings = self.timeline.warnings
        if not warnings:
            return '<p class="muted">No warnings.</p>'
        items = "".join(
            f"<li><code>{escape(w.source)}{'' if w.line is None else ':' + str(w.line)}</code>: "
            f"{escape(w.message)}</li>"
            for w in warnings
        )
        return f'<ul id="warnings">{items}</ul>'

    def page(self) -> str:
        repo = self.timeline.repo
        where = (
            f"repository <code>{escape(repo.path)}</code>, HEAD <code>{_short(repo.head)}</code>"
            if repo
            else "no repository given"
        )
        groups = self.groups()
        charts = "".join(self.chart(i, group, runs) for i, (group, runs) in enumerate(groups.items(), 1))
        if not charts:
            charts = '<p class="muted">No run has a time and a decode throughput to chart.</p>'
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>timeline report</title><style>{STYLE}</style></head><body>\n"
            f'<h1>Timeline</h1><p class="meta">{len(self.timeline.runs)} runs, {len(self.timeline.events)} code '
            f"events; {where}; times in {escape(self.zone_name)}; generated "
            f"{escape(iso(self.timeline.generated_at) or '')}.</p>\n"
            f'<h2>Decode throughput over time</h2>\n<section id="charts">{charts}</section>\n'
            f"<h2>Runs</h2>\n{self.runs_table()}\n"
            f"<h2>Code events</h2>\n{self.events_table()}\n"
            f"<h2>Shifts</h2>\n{self.shifts_table()}\n"
            f"<h2>Suspects</h2>\n{self.suspects_table()}\n"
            f"<h2>Warnings</h2>\n{self.warnings_list()}\n"
            "</body></html>\n"
        )


def _table(name: str, headers: list[str], rows: list[str], empty: str) -> str:
    if not rows:
        return f'<p class="muted" id="{name}">{escape(empty)}</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f'<table id="{name}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _nice_ceiling(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next(s * magnitude for s in (1, 2, 2.5, 5, 10) if s * magnitude >= raw)
    ticks, tick = [], math.ceil(low / step) * step
    while tick <= high + step * 1e-9:
        ticks.append(round(tick, 10))
        tick += step
    return ticks


_TIME_STEPS = (
    [60 * m for m in (1, 2, 5, 10, 15, 30)]
    + [3600 * h for h in (1, 2, 3, 6, 12)]
    + [86400 * d for d in (1, 2, 7, 14, 30)]
)


def _time_ticks(start: datetime, end: datetime, zone: tzinfo, count: int = 6) -> list[datetime]:
    span = (end - start).total_seconds()
    step = next((s for s in _TIME_STEPS if span / s <= count), _TIME_STEPS[-1])
    local = start.astimezone(zone)
    offset = (local.utcoffset() or timedelta(0)).total_seconds()
    first = math.ceil((start.timestamp() + offset) / step) * step - offset
    ticks, moment = [], first
    while moment <= end.timestamp():
        ticks.append(datetime.fromtimestamp(moment, timezone.utc))
        moment += step
    return ticks


def _tick_label(tick: datetime, start: datetime, end: datetime, zone: tzinfo) -> str:
    local = tick.astimezone(zone)
    if (end - start) > timedelta(days=2):
        return local.strftime("%m-%d")
    if start.astimezone(zone).date() != end.astimezone(zone).date():
        return local.strftime("%m-%d %H:%M")
    return local.strftime("%H:%M")


def _zone(timeline: Timeline, display: tzinfo | None) -> tuple[tzinfo, str]:
    if display is not None:
        return display, str(display)
    try:
        from timeline.render.table import display_zone

        zone, name = display_zone(timeline, None)
    except Exception:  # the table's rules are the table's; the report falls back to UTC
        zone, name = None, ""
    return (zone, name) if zone is not None else (timezone.utc, "UTC")


def timeline_html(timeline: Timeline, display: tzinfo | None = None, all_events: bool = False) -> str:
    """The report as one HTML document (str). Times are shown in ``display``, else in the logs'
    common zone, else in UTC; the code events around the runs (``render.window``), or all."""
    zone, name = _zone(timeline, display)
    window = event_window(timeline, all_events)
    return _Report(timeline, zone, name, {e.id for e in window.events}, window.note()).page()
