"""The HTML report: one self-contained file, charts first, then every table.

``timeline build ... --html report.html`` writes it. It needs nothing when opened: the charts are
inline SVG, the style is inline, there is no script, and a Content-Security-Policy forbids the
page any network access. It is rendered from the JSON v1 document (what ``--json`` writes), so the
report and the export can never disagree.

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
from typing import Any

from timeline.export import timeline_to_dict
from timeline.model import Timeline
from timeline.render.window import event_window
from timeline.render.wording import EFFECT_MARK, HARMLESS
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


def _parse(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _short(sha: str | None) -> str:
    return "-" if not sha or set(sha) <= {"0"} else sha[:9]


def _fmt_time(moment: datetime | None, zone: tzinfo) -> str:
    return "" if moment is None else moment.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")


def _number(value: Any, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


class _Report:
    def __init__(
        self,
        document: dict[str, Any],
        zone: tzinfo,
        zone_name: str,
        shown_events: set[str] | None = None,
        events_note: str | None = None,
    ):
        self.doc = document
        self.shown_events = shown_events  # the events table's (None: all); the note says what is not
        self.events_note = events_note
        self.zone = zone
        self.zone_name = zone_name
        self.runs = {run["id"]: run for run in document["runs"]}
        self.subjects: dict[str, str] = {}
        for event in document["events"]:
            for commit in [*event.get("commits", []), *event.get("commits_removed", [])]:
                self.subjects.setdefault(commit["sha"], commit["subject"])
        self.colours: dict[str | None, str] = {}
        for run in document["runs"]:
            if run.get("commit") and run["commit"] not in self.colours:
                self.colours[run["commit"]] = PALETTE[len(self.colours) % len(PALETTE)]

    def colour(self, sha: str | None) -> str:
        return self.colours.get(sha, NO_COMMIT)

    # --- charts -------------------------------------------------------------------------------

    def groups(self) -> dict[str, list[dict[str, Any]]]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for run in self.doc["runs"]:
            if run.get("start") and METRIC in run.get("metrics", {}):
                groups.setdefault(workload_label(run.get("config") or {}) or "(unknown workload)", []).append(run)
        return groups

    def chart(self, index: int, group: str, runs: list[dict[str, Any]]) -> str:
        starts = [datetime.fromisoformat(r["start"]) for r in runs]  # groups(): runs with a start
        ends = [_parse(r.get("end")) or s for r, s in zip(runs, starts, strict=False)]
        t0, t1 = min(starts), max(ends)
        span = max((t1 - t0).total_seconds(), 600.0)
        pad = span * 0.06
        x0, x1 = t0 - timedelta(seconds=pad), t0 + timedelta(seconds=span + pad)
        top = max(r["metrics"][METRIC]["max"] for r in runs)
        y_max = _nice_ceiling(top * 1.08)
        inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

        def x(moment: datetime) -> float:
            return LEFT + inner_w * (moment - x0).total_seconds() / (x1 - x0).total_seconds()

        def y(value: float) -> float:
            return TOP + inner_h * (1 - value / y_max)

        unit = runs[0]["metrics"][METRIC].get("unit", "")
        parts = [
            f'<svg class="chart" id="chart-{index}" data-group="{escape(group)}" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(group)}: decode throughput over time">'
        ]
        # Shifts first, so that points and markers are drawn over them.
        for shift in self.doc.get("shifts", []):
            if shift.get("group") != group:
                continue
            band = self._shift_band(shift)
            if band is None:
                continue
            left, right = max(x(band[0]), LEFT), min(x(band[1]), WIDTH - RIGHT)
            colour = VERDICT_COLOUR.get(shift.get("verdict") or "", "#cccccc")
            change = shift.get("change_pct")
            label = f"{shift.get('id', '')} {shift.get('verdict') or 'change'}"
            if change is not None:
                label += f" {change:+.1f}%"
            parts.append(
                f'<g class="shift" data-verdict="{escape(str(shift.get("verdict")))}"><title>{escape(label)}</title>'
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
        for event in self.doc["events"]:
            when = _parse(event["time"])
            if when is None or not (x0 <= when <= x1):
                continue
            ex = x(when)
            message = f"{event['id']} {event['kind']}: {event['message']}"
            brought = [f"+ {_short(c['sha'])} {c['subject']}" for c in event.get("commits", [])]
            removed = [f"- {_short(c['sha'])} {c['subject']}" for c in event.get("commits_removed", [])]
            title = "\n".join([message, *brought, *removed])
            label = message if len(message) <= 60 else message[:57] + "..."
            parts.append(
                f'<g class="event" data-event="{escape(event["id"])}"><title>{escape(title)}</title>'
                f'<line x1="{ex:.1f}" x2="{ex:.1f}" y1="{TOP - 6}" y2="{TOP + inner_h}" stroke="{EVENT_COLOUR}" '
                f'stroke-width="1.5"/>'
                f'<text x="{ex + 4:.1f}" y="{TOP + 4}" transform="rotate(90 {ex + 4:.1f} '
                f'{TOP + 4})">{escape(label)}</text></g>'
            )
        # Runs: span, min-max range, median point.
        for run, start, end in zip(runs, starts, ends, strict=False):
            summary = run["metrics"][METRIC]
            colour = self.colour(run.get("commit"))
            exact = run.get("attribution") in ("exact", "no-repo")
            cx, cy = x(start), y(summary["median"])
            title = (
                f"{run['id']} {_short(run.get('commit'))} ({run.get('attribution')}): decode median "
                f"{summary['median']:.1f} {unit}, range {summary['min']:.1f}-{summary['max']:.1f}, n={summary['n']}"
                f"\n{run['source']}:{run.get('first_line')}-{run.get('last_line')}"
            )
            parts.append(
                f'<g class="run" data-run="{escape(run["id"])}" data-commit="{escape(run.get("commit") or "")}">'
                f"<title>{escape(title)}</title>"
                f'<line x1="{cx:.1f}" x2="{max(x(end), cx):.1f}" y1="{cy:.1f}" y2="{cy:.1f}" stroke="{colour}" '
                f'stroke-width="3" stroke-opacity="0.55"/>'
                f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(summary["min"]):.1f}" y2="{y(summary["max"]):.1f}" '
                f'stroke="{colour}" stroke-width="1.5"/>'
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{colour if exact else "#ffffff"}" '
                f'stroke="{colour}" stroke-width="2.5"/></g>'
            )
        parts.append("</svg>")
        commits: dict[str | None, None] = {}
        for run in runs:
            commits.setdefault(run.get("commit"), None)
        legend = "".join(
            '<span><span class="swatch" '
            f'style="background:{self.colour(sha)}"></span><code>{escape(_short(sha))}</code> '
            f"{escape(self.subjects.get(sha or '', '') if sha else 'no commit known')}</span>"
            for sha in commits
        )
        return (
            f'<figure class="chart"><figcaption>{escape(group)}</figcaption>{"".join(parts)}'
            f'<div class="legend">{legend}<span class="muted">hollow: run not tied to one commit exactly</span></div>'
            "</figure>"
        )

    def _shift_band(self, shift: dict[str, Any]) -> tuple[datetime, datetime] | None:
        def moments(side: dict[str, Any] | None, key: str) -> list[datetime]:
            found = []
            for run_id in (side or {}).get("runs", []):
                run = self.runs.get(run_id)
                moment = _parse(run.get(key) or run.get("start")) if run else None
                if moment is not None:
                    found.append(moment)
            return found

        before, after = moments(shift.get("from"), "end"), moments(shift.get("to"), "start")
        if not before or not after:
            return None
        left, right = max(before), min(after)
        return (left, right) if left <= right else (right, left)

    # --- tables -------------------------------------------------------------------------------

    def runs_table(self) -> str:
        rows = []
        for run in self.doc["runs"]:
            metrics = run.get("metrics", {})
            decode, accept = metrics.get(METRIC), metrics.get("accept_len")
            commit = run.get("commit")
            rows.append(
                "<tr>"
                f"<td>{escape(run['id'])}</td>"
                f'<td class="t">{_fmt_time(_parse(run.get("start")), self.zone)}</td>'
                f'<td class="t">{_fmt_time(_parse(run.get("end")), self.zone)}</td>'
                '<td><span class="swatch" '
                f'style="background:{self.colour(commit)}"></span><code>{_short(commit)}</code></td>'
                f"<td>{escape(run.get('attribution') or '')}{self._during(run)}</td>"
                f"<td>{escape(workload_label(run.get('config') or {}))}</td>"
                f'<td class="num">{_number(decode and decode["median"])}</td>'
                f'<td class="num">{decode["n"] if decode else ""}</td>'
                f'<td class="num">{_number(accept and accept["mean"], 2)}</td>'
                f"<td>{escape(', '.join(run.get('nccl_versions', [])))}</td>"
                f"<td><code>{escape(run['source'])}:{run.get('first_line')}-{run.get('last_line')}</code></td>"
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
    def _during(run: dict[str, Any]) -> str:
        extra = ""
        if run.get("events_during"):
            extra += f'<br><span class="muted">HEAD moved: {escape(", ".join(run["events_during"]))}</span>'
        if run.get("candidate_commits"):
            extra += (
                f'<br><span class="muted">may have run on: '
                f"{escape(' or '.join(_short(c) for c in run['candidate_commits']))}</span>"
            )
        return extra

    def events_table(self) -> str:
        rows = []
        for event in self.doc["events"]:
            if self.shown_events is not None and event["id"] not in self.shown_events:
                continue
            commits = "".join(
                f"<br>{sign} <code>{_short(c['sha'])}</code> {escape(c['subject'])}"
                for sign, key in (("+", "commits"), ("−", "commits_removed"))
                for c in event.get(key, [])
            )
            rows.append(
                "<tr>"
                f"<td>{escape(event['id'])}</td>"
                f'<td class="t">{_fmt_time(_parse(event["time"]), self.zone)}</td>'
                f"<td>{escape(event['kind'])}</td>"
                f"<td><code>{_short(event['old'])}</code> → <code>{_short(event['new'])}</code></td>"
                f"<td>{escape(event['message'])}{commits}</td>"
                "</tr>"
            )
        message = "No code events (no --repo given)." if self.doc.get("repo") is None else "No code events."
        table = _table("events", ["Event", "Time", "Kind", "Commit", "Message and commits"], rows, message)
        return table + (f'\n<p class="note">{escape(self.events_note)}</p>' if self.events_note else "")

    def shifts_table(self) -> str:
        rows = []
        for shift in self.doc.get("shifts", []):
            verdict = shift.get("verdict") or ""
            sides = []
            for key in ("from", "to"):
                side = shift.get(key) or {}
                sides.append(
                    f"<code>{_short(side.get('commit'))}</code> {_number(side.get('value'))} "
                    f'<span class="muted">({escape(", ".join(side.get("runs", [])))})</span>'
                )
            confounders = "; ".join(
                [
                    c.get("text") or f"{c.get('field')}: {c.get('from')} → {c.get('to')}"
                    for c in shift.get("confounders", [])
                ]
                + [r.get("text", "") for r in shift.get("reruns", [])]
            )
            change = shift.get("change_pct")
            p_value = shift.get("p_value")
            rows.append(
                "<tr>"
                f"<td>{escape(str(shift.get('id', '')))}</td>"
                f"<td>{escape(str(shift.get('group', '')))}</td>"
                f"<td>{escape(str(shift.get('metric', '')))}</td>"
                f"<td>{sides[0]}</td><td>{sides[1]}</td>"
                f'<td class="num">{"" if change is None else f"{change:+.1f}%"}</td>'
                f'<td class="num">{"" if p_value is None else f"{p_value:.3g}"}</td>'
                f'<td class="verdict-{escape(verdict)}">{escape(verdict)}'
                f"{' (single run)' if shift.get('single_run') else ''}</td>"
                f"<td>{escape(', '.join(shift.get('events', [])))}</td>"
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
        for number, culprit in enumerate(self.doc.get("culprits", []), 1):
            evidence = culprit.get("evidence") or [{"effect": "shown", "text": culprit.get("reason", "")}]
            reasons = "<br>".join(
                f"{EFFECT_MARK.get(e.get('effect'), '·')} {escape(e.get('text', ''))}" for e in evidence
            )
            rows.append(
                f"<tr><td>{number}. {escape(str(culprit.get('likelihood', 'culprit')))}</td>"
                f"<td>{escape(', '.join(culprit.get('shifts', [])))}</td>"
                f"<td><code>{_short(culprit.get('sha'))}</code></td>"
                f"<td>{escape(culprit.get('subject', ''))}</td><td></td>"
                f"<td>{reasons}</td></tr>"
            )
        for shift in self.doc.get("shifts", []):
            for suspect in shift.get("suspects", []):
                rows.append(
                    "<tr><td>suspect</td>"
                    f"<td>{escape(str(shift.get('id', '')))}</td>"
                    f"<td><code>{_short(suspect.get('sha'))}</code></td>"
                    f"<td>{escape(suspect.get('subject', ''))}</td>"
                    f"<td>{escape(', '.join(suspect.get('paths', [])[:6]))}"
                    f"{' ...' if len(suspect.get('paths', [])) > 6 else ''}</td>"
                    f"<td>{escape(self._suspect_note(suspect))}</td></tr>"
                )
        return _table("suspects", ["", "Shifts", "Commit", "Subject", "Paths", "Reasoning"], rows, "No suspects.")

    @staticmethod
    def _suspect_note(suspect: dict[str, Any]) -> str:
        notes = []
        if suspect.get("change"):
            notes.append(f"{suspect['change']} with {suspect.get('event') or 'the move'}")
        if suspect.get("unlikely"):
            notes.append(f"unlikely: touches only {HARMLESS}")
        if suspect.get("cleared"):
            notes.append(f"cleared: {suspect['cleared']}")
        return "; ".join(notes)

    def warnings_list(self) -> str:
        warnings = self.doc.get("warnings", [])
        if not warnings:
            return '<p class="muted">No warnings.</p>'
        items = "".join(
            f"<li><code>{escape(w['source'])}{'' if w.get('line') is None else ':' + str(w['line'])}</code>: "
            f"{escape(w['message'])}</li>"
            for w in warnings
        )
        return f'<ul id="warnings">{items}</ul>'

    def page(self) -> str:
        repo = self.doc.get("repo")
        where = (
            f"repository <code>{escape(repo['path'])}</code>, HEAD <code>{_short(repo.get('head'))}</code>"
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
            f'<h1>Timeline</h1><p class="meta">{len(self.doc["runs"])} runs, {len(self.doc["events"])} code events; '
            f"{where}; times in {escape(self.zone_name)}; generated {escape(self.doc.get('generated_at') or '')}.</p>\n"
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
    return _Report(timeline_to_dict(timeline), zone, name, {e.id for e in window.events}, window.note()).page()


def document_html(document: dict[str, Any], display: tzinfo | None = None) -> str:
    """The report from a JSON v1 document already exported (``json.load`` of ``--json FILE``)."""
    zone = display or timezone.utc
    return _Report(document, zone, str(display) if display else "UTC").page()
