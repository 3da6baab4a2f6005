"""The HTML report: one self-contained file, charts first, then every table.

``timeline build ... --html report.html`` writes it. It needs nothing when opened: the charts are
inline SVG, the style is inline, there is no script, and a Content-Security-Policy forbids the
page any network access. Like every view it reads the typed model (``timeline.model.Timeline``) and
words the analysis' facts with ``timeline.render.wording``, so the report, the other views and the
JSON export (``--json``) say the same.

Per workload group, a panel per metric the runs have (``render.html_chart``), over time and by
commit; then the runs, code events, shifts, suspects (and culprits) and warnings tables. The
page reads on a phone: the charts have a narrow layout of their own, the tables scroll in their
own box.
"""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from html import escape
from typing import overload

from timeline.clock import iso
from timeline.model import Run, Suspect, Timeline, is_zero_sha
from timeline.render.html_chart import (
    CHART_BORDER,
    EVENT_COLOUR,
    IDLE_S,
    LAYOUTS,
    NO_COMMIT,
    PALETTE,
    PANEL_METRICS,
    ChartData,
    commit_colours,
    view_svgs,
)
from timeline.render.safe import displayable
from timeline.render.shifts import fmt_change
from timeline.render.window import event_window, run_window
from timeline.render.wording import (
    DATE_SOURCE_NOTE,
    EFFECT_MARK,
    HARMLESS,
    RUN_STATUS,
    attribution_text,
    clearing_text,
    confounder_text,
    counted,
    error_text,
    event_message,
    evidence_mark,
    evidence_text,
    rerun_text,
    wall_time,
    zone_readings_text,
)
from timeline.shifts import group_key, workload_groups
from timeline.suspects import knob_linked
from timeline.workload import workload_label

BREAKPOINT_PX = 760  # narrower windows get the narrow layout of the charts

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
h3 { font-size: 14px; margin: 12px 0 4px; color: #444; }
.meta { color: #666; margin: 0 0 16px; overflow-wrap: anywhere; }
figure.group { margin: 0 0 28px; } figcaption { font-weight: 600; margin-bottom: 4px; overflow-wrap: anywhere; }
svg.chart { display: block; background: #fff; margin: 0 0 6px; max-width: 100%; height: auto; }
svg.chart rect.frame { fill: none; stroke: @CHART_BORDER@; }
svg.chart text { font: 11px "DejaVu Sans Mono", Menlo, Consolas, ui-monospace, monospace; fill: #333; }
svg.chart text.title { font-weight: bold; } svg.chart text.baseline { fill: #b45f06; }
svg.chart .grid { stroke: #eee; } svg.chart .axis { stroke: #999; }
svg.chart .axis-break { stroke: #b45f06; stroke-width: 1.5; fill: none; }
svg.chart .gap rect { fill: #e9e9e9; }
svg.chart .event line { stroke: @EVENT_COLOUR@; stroke-width: 1; stroke-dasharray: 3 2; }
.layout-narrow { display: none; }
@media (max-width: @NARROW_MAX@px) {
  body { margin: 12px; } .layout-wide { display: none; } .layout-narrow { display: block; }
  svg.chart { width: 100%; }
}
.note { color: #555; font-size: 13px; margin: 2px 0 6px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin-top: 6px; font-size: 13px; }
.legend > span { overflow-wrap: anywhere; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 50%; margin-right: 5px; vertical-align: -1px; }
.scroll { overflow-x: auto; max-width: 100%; margin: 0 0 8px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
td.t { white-space: nowrap; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
#warnings code { overflow-wrap: anywhere; }
.verdict-regression { color: #b0171f; font-weight: 600; } .verdict-improvement { color: #1a7f2a; font-weight: 600; }
.verdict-inconclusive { color: #8a6a00; } .verdict-confounded { color: #6b3fa0; font-weight: 600; } .muted { color: #777; }
"""  # noqa: E501 - CSS, one rule set a line
STYLE = (
    CSS.replace("@CHART_BORDER@", CHART_BORDER)
    .replace("@EVENT_COLOUR@", EVENT_COLOUR)
    .replace("@NARROW_MAX@", str(BREAKPOINT_PX - 1))
)


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
    return "" if moment is None else wall_time(moment, zone)


def _number(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


class _Report:
    def __init__(
        self,
        timeline: Timeline,
        zone: tzinfo,
        zone_name: str,
        shown_events: set[str] | None,
        events_note: str | None,
        runs_note: str | None,
        every_run: int,
    ):
        self.timeline = timeline
        self.shown_events = shown_events  # the events table's (None: all); the note says what is not
        self.events_note = events_note
        self.runs_note = runs_note  # the runs table's and charts' (render.window), when not all are shown
        self.every_run = every_run  # the runs of the timeline, shown or not
        self.zone = zone
        self.zone_name = zone_name
        self.runs = {run.id: run for run in timeline.runs}
        self.shifts = {shift.id: shift for shift in timeline.shifts}
        self.subjects: dict[str, str] = {}
        for event in timeline.events:
            for commit in [*event.commits, *event.commits_removed]:
                self.subjects.setdefault(commit.sha, commit.subject)
        # Commits in history order: the order the runs first ran on them.
        ordered = sorted(timeline.runs, key=lambda run: (run.start is None, run.start.timestamp() if run.start else 0))
        self.history = list(dict.fromkeys(run.commit for run in ordered if run.commit))
        self.colours = commit_colours(self.history)
        self.numbers = {sha: number for number, sha in enumerate(self.history, 1)}

    def colour(self, sha: str | None) -> str:
        return self.colours.get(sha or "", NO_COMMIT)

    def number(self, sha: str | None) -> int | None:
        return self.numbers.get(sha or "")

    # --- charts -------------------------------------------------------------------------------

    def groups(self) -> dict[str, list[Run]]:
        """The workload groups the shifts use (``shifts.workload_groups``), then the runs without
        a configuration; only runs with a time and a metric a panel draws."""
        charted = {m.name for m in PANEL_METRICS}
        drawable = [r for r in self.timeline.runs if r.start is not None and charted & set(r.metrics)]
        groups = workload_groups(drawable)
        unknown = [r for r in drawable if group_key(r) is None]
        if unknown:
            groups.setdefault("(unknown workload)", []).extend(unknown)
        return groups

    def figure(self, group: str, runs: list[Run]) -> str:
        data = ChartData(
            group,
            runs,
            [shift for shift in self.timeline.shifts if shift.group == group],
            self.timeline.events,
            self.colour,
            self.number,
            self.zone,
            self.subjects,
        )
        views = []
        for view, heading in (
            ("time", f"Over time ({self.zone_name})"),
            ("commit", "By commit: one slot per version, in the order the runs ran"),
        ):
            layouts = []
            gaps = 0
            for layout in LAYOUTS:
                svgs, gaps = view_svgs(data, view, layout)
                layouts.append(f'<div class="layout-{layout.name}">{svgs}</div>')
            note = (
                f'<p class="note">Grey stripes: {gaps} idle stretch{"es" if gaps != 1 else ""} of more than '
                f"{IDLE_S // 3600} hours, drawn narrow (hover for how long).</p>"
                if gaps
                else ""
            )
            views.append(f"<h3>{escape(heading)}</h3>{''.join(layouts)}{note}")
        commits = list(dict.fromkeys(run.commit for run in sorted(runs, key=lambda r: self.number(r.commit) or 0)))
        legend = "".join(
            f'<span><span class="swatch" style="background:{self.colour(sha)}"></span>'
            f"{self.number(sha) or ''} <code>{escape(_short(sha))}</code> "
            f"{escape(self.subjects.get(sha, '') if sha else 'no commit known')}</span>"
            for sha in commits
        )
        order = (
            ""
            if len(self.history) <= len(PALETTE)
            else f'<span class="muted">{len(self.history)} commits: coloured by history order, '
            "oldest dark blue to newest yellow</span>"
        )
        kinds = ", ".join(dict.fromkeys(run.kind for run in runs))
        return (
            f'<figure class="group" data-group="{escape(group)}"><figcaption>{escape(group)} '
            f'<span class="muted">({counted(len(runs), "run")}: {escape(kinds)})</span></figcaption>'
            f"{''.join(views)}"
            f'<div class="legend">{legend}{order}<span class="muted">hollow: run not tied to one commit '
            "exactly; bar: the run's duration; whisker: min-max of its lines; hover for details</span></div>"
            "</figure>"
        )

    # --- tables -------------------------------------------------------------------------------

    def runs_table(self) -> str:
        rows = []
        for run in self.timeline.runs:
            decode, accept = run.metrics.get("decode_throughput"), run.metrics.get("accept_len")
            # vLLM's "N Engines Aggregated:" lines only: the server's total, said so
            total = "" if decode else ' <span class="muted">engines aggregated</span>'
            decode = decode or run.metrics.get("aggregated_decode_throughput")
            rows.append(
                "<tr>"
                f"<td>{escape(run.id)}</td>"
                f"<td>{self._status(run)}</td>"
                f'<td class="t">{_fmt_time(_moment(run.start), self.zone)}{self._dates(run)}</td>'
                f'<td class="t">{_fmt_time(_moment(run.end), self.zone)}</td>'
                '<td><span class="swatch" '
                f'style="background:{self.colour(run.commit)}"></span><code>{_short(run.commit)}</code></td>'
                f"<td>{escape(attribution_text(run))}{self._during(run)}</td>"
                f"<td>{escape(workload_label(run.config, run.machine))}</td>"
                f'<td class="num">{_number(decode.median if decode else None)}{total if decode else ""}</td>'
                f'<td class="num">{decode.n if decode else ""}</td>'
                f'<td class="num">{_number(accept.mean if accept else None, 2)}</td>'
                f"<td>{escape(', '.join(run.nccl_versions))}</td>"
                f"<td><code>{escape(run.source)}:{run.first_line}-{run.last_line}</code></td>"
                "</tr>"
            )
        table = _table(
            "runs",
            [
                "Run",
                "Status",
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
        return table + (f'\n<p class="note">{escape(self.runs_note)}</p>' if self.runs_note else "")

    @staticmethod
    def _status(run: Run) -> str:
        error = error_text(run.error, run.error_line) if run.status == "crashed" else ""
        word = escape(RUN_STATUS.get(run.status, run.status))
        return word + (f'<br><span class="muted">{escape(error)}</span>' if error else "")

    @staticmethod
    def _dates(run: Run) -> str:
        note = DATE_SOURCE_NOTE.get(run.date_source or "")
        return f'<br><span class="muted">{escape(note)}</span>' if note and run.start is not None else ""

    @staticmethod
    def _during(run: Run) -> str:
        extra = ""
        if run.events_during:
            extra += f'<br><span class="muted">HEAD moved: {escape(", ".join(run.events_during))}</span>'
        readings = zone_readings_text(run)
        if readings:
            extra += f'<br><span class="muted">{escape(readings)}</span>'
        elif run.candidate_commits:
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
                f"<td>{escape(event_message(event))}{commits}</td>"
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
        charts = "".join(self.figure(group, runs) for group, runs in self.groups().items())
        if not charts:
            charts = '<p class="muted">No run has a time and a metric to chart.</p>'
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>timeline report</title><style>{STYLE}</style></head><body>\n"
            f'<h1>Timeline</h1><p class="meta">{self.every_run} runs, {len(self.timeline.events)} code '
            f"events; {where}; times in {escape(self.zone_name)}; generated "
            f"{escape(iso(self.timeline.generated_at) or '')}.</p>\n"
            f'<h2>Charts</h2>\n<section id="charts">{charts}</section>\n'
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
    return (
        f'<div class="scroll"><table id="{name}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _zone(timeline: Timeline, display: tzinfo | None) -> tuple[tzinfo, str]:
    if display is not None:
        return display, str(display)
    try:
        from timeline.render.table import display_zone

        zone, name = display_zone(timeline, None)
    except Exception:  # the table's rules are the table's; the report falls back to UTC
        zone, name = None, ""
    return (zone, name) if zone is not None else (timezone.utc, "UTC")


def timeline_html(
    timeline: Timeline, display: tzinfo | None = None, all_events: bool = False, all_runs: bool = False
) -> str:
    """The report as one HTML document (str). Times are shown in ``display``, else in the logs'
    common zone, else in UTC; the runs of the run window (``render.window``) in the charts and
    tables, or all, and the code events around them, or all."""
    runs = run_window(timeline, all_runs)
    every_run = len(timeline.runs)
    timeline = displayable(runs.of(timeline))
    zone, name = _zone(timeline, display)
    window = event_window(timeline, all_events, runs_hidden=bool(runs.hidden))
    return _Report(timeline, zone, name, {e.id for e in window.events}, window.note(), runs.note(), every_run).page()
