"""The HTML report's charts: inline SVG panels, laid out for one width at a time.

Per workload group and per metric the runs have (decode throughput, accept length, a bench
client's output throughput, TTFT and TPOT), two views: **over time** and **by commit** (one equal
slot per version, the runs of each version side by side, as asv draws a benchmark). The report
draws every panel twice, for a wide and for a narrow (phone) layout, and the page's style shows
one of them: text keeps its size instead of being scaled down with the picture.

Everything is placed here, with no script in the page: labels get the width of their characters
in the chart's monospace font (``text_width``) and go in rows (``Lanes``), so that no label
overlaps another or leaves the chart; a label with no room keeps its short form, or only its
``<title>`` (the full text on hover). On the time axis, idle stretches longer than ``IDLE_S``
(nights, weekends) are drawn narrow and marked, so that a month of working days is not mostly
empty nights; ticks step by minutes, hours, days or weeks, by the room there is.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone, tzinfo
from html import escape

from timeline.model import CodeEvent, MetricSummary, Run, Shift, is_zero_sha
from timeline.render.shifts import fmt_change
from timeline.render.wording import attribution_text, event_message, zone_readings_text

FONT_PX = 11
CHAR_EM = 0.62  # advance of one character of the chart font (DejaVu Sans Mono: 0.602 em), rounded up
LINE_PX = 14
LABEL_GAP_PX = 5
IDLE_S = 3 * 3600  # a stretch with no run and no code event longer than this is drawn narrow
NO_COMMIT = "#9a9a9a"
EVENT_COLOUR = "#555555"
CHART_BORDER = "#c9ced6"  # used nowhere else: a test finds the chart in a screenshot by it
VERDICT_COLOUR = {"regression": "#d62728", "improvement": "#2ca02c", "inconclusive": "#e0a800", "confounded": "#9467bd"}
# Twenty colours told apart at a glance (Tableau 10 without its grey, then ten of Kelly's and
# Trubetskoy's distinct colours dark enough on white); past twenty commits, ``history_colour``.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#000075",
    "#800000",
    "#469990",
    "#f032e6",
    "#c9a000",
    "#1b5e20",
    "#fb8072",
    "#5e3c99",
    "#6baed6",
    "#b15928",
    "#00c49a",
)
# Viridis at five stops (matplotlib's colormap), for colouring by history order.
_HISTORY_STOPS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))


@dataclass(frozen=True)
class PanelMetric:
    name: str  # the key in Run.metrics
    title: str
    stat: str  # the MetricSummary field drawn as the run's point: "median" or "mean"


PANEL_METRICS = (
    PanelMetric("decode_throughput", "decode throughput", "median"),
    PanelMetric("aggregated_decode_throughput", "decode throughput, engines aggregated", "median"),
    PanelMetric("accept_len", "accept length", "mean"),
    PanelMetric("output_throughput", "bench output throughput", "median"),
    PanelMetric("accept_length", "bench accept length", "median"),
    PanelMetric("ttft_median", "TTFT, median", "median"),
    PanelMetric("tpot_median", "TPOT, median", "median"),
)


@dataclass(frozen=True)
class Layout:
    name: str  # "wide" or "narrow": the page's style shows one
    width: int
    main_height: int  # the plot of the first panel of a view
    other_height: int
    label_rows: int  # rows for event and for shift labels, each
    tick_px: int  # at least this much room per time tick


WIDE = Layout("wide", 1080, 210, 110, 3, 72)
NARROW = Layout("narrow", 360, 170, 90, 4, 64)
LAYOUTS = (WIDE, NARROW)


def history_colour(index: int, count: int) -> str:
    """The colour of the ``index``-th of ``count`` commits when there are too many to tell apart:
    a sequential scale (viridis), oldest dark blue to newest yellow."""
    where = index / max(count - 1, 1) * (len(_HISTORY_STOPS) - 1)
    low = min(int(where), len(_HISTORY_STOPS) - 2)
    part = where - low
    channels = (round(a + (b - a) * part) for a, b in zip(_HISTORY_STOPS[low], _HISTORY_STOPS[low + 1], strict=True))
    return "#" + "".join(f"{c:02x}" for c in channels)


def commit_colours(commits: Sequence[str]) -> dict[str, str]:
    """One colour per commit, given in history order: distinct up to ``len(PALETTE)``, else by
    position in that order."""
    if len(commits) <= len(PALETTE):
        return {sha: PALETTE[i] for i, sha in enumerate(commits)}
    return {sha: history_colour(i, len(commits)) for i, sha in enumerate(commits)}


def text_width(text: str, size: float = FONT_PX) -> float:
    return len(text) * size * CHAR_EM


def short_sha(sha: str | None, length: int = 9) -> str:
    return "-" if sha is None or is_zero_sha(sha) else sha[:length]


# --- label placement ------------------------------------------------------------------------


@dataclass
class Lanes:
    """Rows of labels between ``low`` and ``high`` (x). Row 0 is nearest the plot; a label in a
    higher row has a leader line down through the rows below, which labels there keep clear of."""

    rows: int
    low: float
    high: float
    taken: list[list[tuple[float, float]]] = field(init=False)
    labelled: set[int] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self.taken = [[] for _ in range(self.rows)]

    def reserve(self, x: float) -> None:
        """Keep labels off ``x`` in every row: a line from above passes there."""
        for row in self.taken:
            row.append((x - 1, x + 1))

    def _free(self, row: int, left: float, right: float) -> bool:
        return all(right + LABEL_GAP_PX <= a or left >= b + LABEL_GAP_PX for a, b in self.taken[row])

    def _span(self, text: str, anchor: float, centred: bool) -> tuple[float, float] | None:
        width = text_width(text)
        if centred:
            left = min(max(anchor - width / 2, self.low), self.high - width)
        else:
            left = anchor + 3 if anchor + 3 + width <= self.high else anchor - 3 - width
            left = max(left, self.low)
        if left < self.low - 0.01 or left + width > self.high + 0.01:
            return None
        return left, left + width

    def place(self, texts: Sequence[str], anchor: float, centred: bool = False) -> tuple[str, float, int] | None:
        """The first of ``texts`` (longest first) that fits in some row, at ``anchor`` (its left
        edge just right of it, or just left when there is no room; centred on it with
        ``centred``), kept inside the lanes: (text, left edge, row), or None."""
        leader = [] if centred else [(anchor - 1, anchor + 1)]
        for text in texts:
            span = self._span(text, anchor, centred)
            if span is None:
                continue
            for row in range(self.rows):
                if self._free(row, *span) and all(self._free(below, *lead) for below in range(row) for lead in leader):
                    self.taken[row].append(span)
                    self.labelled.add(row)
                    for below in range(row):
                        self.taken[below].extend(leader)
                    return text, span[0], row
        return None

    def widen(self, placed: tuple[str, float, int], text: str, anchor: float) -> tuple[str, float, int]:
        """``placed`` with the longer ``text`` when it fits in the same row, else as it was."""
        old, left, row = placed
        span = self._span(text, anchor, False)
        current = (left, left + text_width(old))
        self.taken[row].remove(current)
        if span is not None and self._free(row, *span):
            self.taken[row].append(span)
            return text, span[0], row
        self.taken[row].append(current)
        return placed

    def used(self) -> int:
        return max((row + 1 for row in self.labelled), default=0)


# --- axes -----------------------------------------------------------------------------------


class TimeAxis:
    """Time to x: linear within stretches of activity, with each idle stretch longer than
    ``IDLE_S`` drawn narrow (all of them together about a tenth of the width)."""

    def __init__(self, spans: Sequence[tuple[float, float]], left: float, right: float):
        ordered = sorted(spans)
        clusters: list[list[float]] = []
        for start, end in ordered:
            if clusters and start - clusters[-1][1] <= IDLE_S:
                clusters[-1][1] = max(clusters[-1][1], end)
            else:
                clusters.append([start, end])
        margin = max(300.0, 0.03 * sum(b - a for a, b in clusters) / max(len(clusters), 1))
        self.margin = margin
        self.clusters = [(a - margin, b + margin) for a, b in clusters]
        active = sum(b - a for a, b in self.clusters)
        gaps = len(self.clusters) - 1
        gap_seconds = min(IDLE_S, active * 0.12 / gaps) if gaps else 0.0
        self.scale = (right - left) / (active + gaps * gap_seconds)
        self.knots: list[tuple[float, float]] = []  # (time, x), increasing in both
        self.gaps: list[tuple[float, float, float, float]] = []  # (from, to, x from, x to)
        x = left
        for number, (a, b) in enumerate(self.clusters):
            if number:
                self.gaps.append((self.knots[-1][0], a, x - gap_seconds * self.scale, x))
            self.knots += [(a, x), (b, x + (b - a) * self.scale)]
            x += (b - a) * self.scale + gap_seconds * self.scale
        self.times = [t for t, _ in self.knots]

    def x(self, moment: float) -> float:
        i = min(max(bisect_right(self.times, moment), 1), len(self.knots) - 1)
        (t0, x0), (t1, x1) = self.knots[i - 1], self.knots[i]
        return x0 if t1 == t0 else x0 + (x1 - x0) * (moment - t0) / (t1 - t0)


_TIME_STEPS = (
    [60 * m for m in (1, 2, 5, 10, 15, 30)]
    + [3600 * h for h in (1, 2, 3, 6, 12)]
    + [86400 * d for d in (1, 2, 7, 14, 28)]
)
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _day_label(moment: datetime) -> str:
    return f"{_MONTHS[moment.month - 1]} {moment.day}"


# The instants a date can show in any zone (a day inside datetime's years 1-9999): ticks outside
# are not drawn, so a log stamped 9999-12-31 still gets its chart.
_SHOWN = (
    datetime(1, 1, 2, tzinfo=timezone.utc).timestamp(),
    datetime(9999, 12, 30, tzinfo=timezone.utc).timestamp(),
)


def _aligned(start: float, end: float, step: int, zone: tzinfo) -> list[float]:
    """Multiples of ``step`` in the wall-clock time of ``zone`` (weeks start on Mondays)."""
    start, end = max(start, _SHOWN[0]), min(end, _SHOWN[1])
    if start > end:
        return []
    offset = (datetime.fromtimestamp(start, timezone.utc).astimezone(zone).utcoffset() or timedelta(0)).total_seconds()
    origin = 4 * 86400 if step % (7 * 86400) == 0 else 0  # the epoch was a Thursday
    first = math.ceil((start + offset - origin) / step) * step + origin - offset
    return [first + k * step for k in range(int((end - first) // step) + 1) if first + k * step <= end]


def time_ticks(axis: TimeAxis, zone: tzinfo, low: float, high: float, room: int) -> list[tuple[float, str, int]]:
    """Tick marks for ``axis``: (x, label, row). Row 0: times of day (or dates, for steps of a
    day or more); row 1: the date at the first moment of each day shown."""
    step = next((s for s in _TIME_STEPS if s * axis.scale >= room), _TIME_STEPS[-1])
    local = lambda t: datetime.fromtimestamp(t, timezone.utc).astimezone(zone)  # noqa: E731
    ticks: list[tuple[float, str, int]] = []
    lanes = [Lanes(1, low, high), Lanes(1, low, high)]

    def add(moment: float, label: str, row: int) -> None:
        if not _SHOWN[0] <= moment <= _SHOWN[1]:
            return
        placed = lanes[row].place([label], axis.x(moment), centred=True)
        if placed:
            ticks.append((axis.x(moment), label, row))

    if step < 86400:
        for a, b in axis.clusters:
            for moment in _aligned(a, b, step, zone):
                add(moment, local(moment).strftime("%H:%M"), 0)
        for a, b in axis.clusters:
            for moment in [a + axis.margin, *_aligned(a, b, 86400, zone)]:
                if not _SHOWN[0] <= moment <= _SHOWN[1]:
                    continue
                day = local(moment)
                if not any(label == _day_label(day) for _, label, row in ticks if row == 1):
                    add(moment, _day_label(day), 1)
        return ticks
    last = -math.inf
    candidates = sorted(
        t
        for t in {t for a, b in axis.clusters for t in [a + axis.margin, *_aligned(a, b, step, zone)]}
        if _SHOWN[0] <= t <= _SHOWN[1]
    )
    for moment in candidates:
        if moment - last >= step * 0.9:
            day = local(moment)
            before = len(ticks)
            add(moment, _day_label(day) if day.month != 1 or day.day != 1 else str(day.year), 0)
            if len(ticks) > before:
                last = moment
    return ticks


def value_ticks(low: float, high: float, count: int) -> tuple[float, float, list[float], int]:
    """A nice axis over [low, high]: (bottom, top, ticks, decimals)."""
    raw = (high - low) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(s * magnitude for s in (1, 2, 2.5, 5, 10) if s * magnitude >= raw)
    bottom, top = math.floor(low / step + 1e-9) * step, math.ceil(high / step - 1e-9) * step
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if round(step / magnitude, 6) == 2.5 else 0)
    ticks = [round(bottom + k * step, 10) for k in range(int(round((top - bottom) / step)) + 1)]
    return bottom, top, ticks, decimals


def value_range(values: Sequence[float]) -> tuple[float, float, bool]:
    """The y range for ``values``: from the data, padded, or from 0 when 0 is near anyway;
    (bottom, top, starts_at_zero)."""
    low, high = min(values), max(values)
    pad = (high - low) * 0.1 or abs(high) * 0.05 or 1.0
    low, high = low - pad, high + pad
    if low <= 0 or low < 0.2 * high:
        return min(low, 0.0), high, True
    return low, high, False


# --- panels ---------------------------------------------------------------------------------


@dataclass
class Point:
    """One run as a panel draws it."""

    run: Run
    summary: MetricSummary
    value: float
    start: float
    end: float
    x: float = 0.0  # set by the view


@dataclass
class ChartData:
    """What a group's panels draw, read from the typed model by the report."""

    group: str
    runs: list[Run]
    shifts: list[Shift]
    events: list[CodeEvent]
    colour: Callable[[str | None], str]
    number: Callable[[str | None], int | None]
    zone: tzinfo
    subjects: dict[str, str]  # commit sha -> subject, for hover texts

    def metrics(self) -> list[PanelMetric]:
        return [m for m in PANEL_METRICS if any(m.name in run.metrics for run in self.runs)]

    def points(self, metric: PanelMetric) -> list[Point]:
        points = []
        for run in self.runs:
            summary = run.metrics.get(metric.name)
            if summary is None or run.start is None:
                continue
            value = float(getattr(summary, metric.stat))
            if not math.isfinite(value):  # nothing to place ("inf" printed by a client)
                continue
            start = run.start.timestamp()
            end = max(run.end.timestamp() if run.end else start, start)
            points.append(Point(run, summary, value, start, end))
        return points


def _attribute(value: str) -> str:
    return escape(value, quote=True)


def _run_title(point: Point, metric: PanelMetric, subject: str) -> str:
    run, summary = point.run, point.summary
    lines = [
        f"{run.id} on {short_sha(run.commit)} ({attribution_text(run)}): {metric.title} {metric.stat} "
        f"{point.value:.4g} {summary.unit}"
        + (f", range {summary.min:.4g}-{summary.max:.4g}, n={summary.n}" if summary.n > 1 else ""),
        f"{run.source}:{run.first_line}-{run.last_line}",
    ]
    if subject:
        lines.insert(1, f"{short_sha(run.commit)} {subject}")
    readings = zone_readings_text(run)
    if readings:
        lines.append(readings)
    elif run.candidate_commits:
        lines.append(f"may have run on: {' or '.join(short_sha(c) for c in run.candidate_commits)}")
    if run.events_during:
        lines.append(f"HEAD moved during the run: {', '.join(run.events_during)}")
    return "\n".join(lines)


def _event_title(event: CodeEvent) -> str:
    brought = [f"+ {short_sha(c.sha)} {c.subject}" for c in event.commits]
    removed = [f"- {short_sha(c.sha)} {c.subject}" for c in event.commits_removed]
    return "\n".join([f"{event.id} {event.kind}: {event_message(event)}", *brought, *removed])


def _shift_label(shift: Shift) -> tuple[list[str], str]:
    short = f"{shift.id} {fmt_change(shift.change_pct)}"
    return [short, shift.id], f"{shift.id} {shift.verdict} {fmt_change(shift.change_pct)}"


@dataclass
class _Frame:
    """The vertical layout of one panel."""

    title_rows: int
    event_rows: int
    shift_rows: int
    plot: int
    tick_rows: int

    @property
    def plot_top(self) -> float:
        return 6 + LINE_PX * (self.title_rows + self.event_rows + self.shift_rows) + 8

    @property
    def plot_bottom(self) -> float:
        return self.plot_top + self.plot

    @property
    def height(self) -> float:
        return self.plot_bottom + 6 + LINE_PX * self.tick_rows + 2

    def event_row_y(self, row: int) -> float:  # text baseline
        return 6 + LINE_PX * (self.title_rows + self.event_rows - row) - 3

    def shift_row_y(self, row: int) -> float:
        return 6 + LINE_PX * (self.title_rows + self.event_rows + self.shift_rows - row) - 3


def _text(x: float, y: float, text: str, cls: str = "", fill: str | None = None) -> str:
    extra = f' class="{cls}"' if cls else ""
    colour = f' fill="{fill}"' if fill else ""
    return f'<text x="{x:.1f}" y="{y:.1f}"{extra}{colour}>{escape(text)}</text>'


def _fit(text: str, room: float) -> str:
    chars = int(room / (FONT_PX * CHAR_EM))
    return text if len(text) <= chars else text[: max(chars - 1, 1)] + "…"


class Panel:
    """One metric in one view (time or commit) at one layout: an ``<svg>``."""

    def __init__(self, data: ChartData, metric: PanelMetric, view: str, layout: Layout, first: bool, left: float):
        self.data, self.metric, self.view, self.layout, self.first = data, metric, view, layout, first
        self.points = data.points(metric)
        self.left, self.right = left, layout.width - 12.0
        self.unit = self.points[0].summary.unit if self.points else ""

    # the y axis is from the data; ``left`` (room for its labels) is shared by a view's panels
    def y_axis(self) -> tuple[float, float, list[float], int, bool]:
        values = [p.value for p in self.points]
        values += [
            v for p in self.points if p.summary.n > 1 for v in (p.summary.min, p.summary.max) if math.isfinite(v)
        ]
        low, high, zero = value_range(values)
        rows = 5 if self.first else 3
        bottom, top, ticks, decimals = value_ticks(low, high, rows)
        return bottom, top, ticks, decimals, zero or bottom <= 0

    def render(self, axis: TimeAxis | None, slots: list[list[Run]] | None) -> str:
        data, metric, layout = self.data, self.metric, self.layout
        bottom, top, ticks, decimals, zero = self.y_axis()
        title = f"{metric.title} ({self.unit}, {metric.stat} per run)"
        note = "" if zero else f"axis from {bottom:.{decimals}f}, not 0"
        room = self.right - 4
        title_rows = 1 if text_width(title) + text_width(note) + 20 <= room or not note else 2
        shifts = [s for s in data.shifts if s.metric == metric.name and s.verdict]
        events = data.events if self.view == "time" else []

        # Labels first: their rows set the height.
        event_lanes = Lanes(layout.label_rows, self.left, self.right)
        event_labels = []
        if self.first and axis is not None:
            # Every event's id first, where there is room; then the kind beside it where that fits.
            for event in events:
                event_labels.append((event, axis.x(event.ts), event_lanes.place([event.id], axis.x(event.ts))))
            event_labels = [
                (event, ex, placed and event_lanes.widen(placed, f"{event.id} {event.kind}", ex))
                for event, ex, placed in event_labels
            ]
        shift_lanes = Lanes(layout.label_rows, self.left, self.right)
        for _, ex, placed in event_labels:  # the leader of a labelled event crosses the shift rows
            if placed:
                shift_lanes.reserve(ex)
        bands = []
        for shift in shifts:
            band = self._band(shift, axis, slots)
            if band is None:
                continue
            texts, full = _shift_label(shift)
            # Centred over its band; else flush with either edge of it, clear of event lines.
            spots = (
                (text, at)
                for text in texts
                for at in ((band[0] + band[1]) / 2, band[0] + text_width(text) / 2, band[1] - text_width(text) / 2)
            )
            placed = next(filter(None, (shift_lanes.place([text], at, centred=True) for text, at in spots)), None)
            bands.append((shift, band, placed, full))
        frame = _Frame(
            title_rows,
            event_lanes.used(),
            shift_lanes.used(),
            layout.main_height if self.first else layout.other_height,
            (2 if self.view == "time" else 1),
        )
        y_of = lambda v: frame.plot_bottom - (v - bottom) / ((top - bottom) or 1) * frame.plot  # noqa: E731

        ident = f"{layout.name}-{self.view}-{metric.name}"
        parts = [
            f'<svg class="chart" data-layout="{layout.name}" data-view="{self.view}" '
            f'data-metric="{_attribute(metric.name)}" data-group="{_attribute(data.group)}" '
            f'width="{layout.width}" height="{frame.height:.0f}" viewBox="0 0 {layout.width} {frame.height:.0f}" '
            f'role="img" aria-label="{_attribute(f"{data.group}: {title}, {self.view} view")}" data-id="{ident}">',
            f'<rect class="frame" x="0.5" y="0.5" width="{layout.width - 1}" height="{frame.height - 1:.0f}"/>',
            _text(4, 6 + LINE_PX - 3, _fit(title, room), "title"),
        ]
        if note:
            if title_rows == 1:
                parts.append(
                    f'<text x="{self.right:.1f}" y="{6 + LINE_PX - 3}" class="baseline" '
                    f'text-anchor="end">{escape(note)}</text>'
                )
            else:
                parts.append(_text(4, 6 + 2 * LINE_PX - 3, note, "baseline"))
        # Idle stretches, shift bands, grid: under the runs.
        plot_top, plot_bottom = frame.plot_top, frame.plot_bottom
        if axis is not None:
            for t_from, t_to, x_from, x_to in axis.gaps:
                idle = _duration(t_to - t_from)
                parts.append(
                    f'<g class="gap"><title>idle {escape(idle)}: drawn narrow</title>'
                    f'<rect x="{x_from:.1f}" y="{plot_top:.1f}" width="{max(x_to - x_from, 1):.1f}" '
                    f'height="{frame.plot}"/></g>'
                )
        for shift, (b0, b1), placed, full in bands:
            colour = VERDICT_COLOUR.get(shift.verdict or "", "#cccccc")
            label = ""
            if placed:
                text, left, row = placed
                y = frame.shift_row_y(row)
                label = (
                    f'<line x1="{b0:.1f}" x2="{b1:.1f}" y1="{y + 3:.1f}" y2="{y + 3:.1f}" stroke="{colour}" '
                    f'stroke-width="2"/>' + _text(left, y, text, "label shift-label", colour)
                )
            parts.append(
                f'<g class="shift" data-shift="{_attribute(shift.id)}" data-verdict="{_attribute(str(shift.verdict))}">'
                f"<title>{escape(full)}</title>"
                f'<rect x="{b0:.1f}" y="{plot_top:.1f}" width="{b1 - b0:.1f}" height="{frame.plot}" fill="{colour}" '
                f'fill-opacity="0.16" stroke="{colour}" stroke-opacity="0.5"/>{label}</g>'
            )
        for tick in ticks:
            ty = y_of(tick)
            parts.append(
                f'<line class="grid" x1="{self.left:.1f}" x2="{self.right:.1f}" y1="{ty:.1f}" y2="{ty:.1f}"/>'
                f'<text x="{self.left - 5:.1f}" y="{ty + 4:.1f}" class="tick" text-anchor="end">'
                f"{tick:.{decimals}f}</text>"
            )
        parts.append(
            f'<line class="axis" x1="{self.left:.1f}" x2="{self.left:.1f}" y1="{plot_top:.1f}" y2="{plot_bottom:.1f}"/>'
            f'<line class="axis" x1="{self.left:.1f}" x2="{self.right:.1f}" y1="{plot_bottom:.1f}" '
            f'y2="{plot_bottom:.1f}"/>'
        )
        if not zero:  # the axis does not start at 0: a break mark at its foot says so
            parts.append(
                f'<path class="axis-break" d="M{self.left - 5:.1f} {plot_bottom - 2:.1f} l10 -4 M{self.left - 5:.1f} '
                f'{plot_bottom - 6:.1f} l10 -4"/>'
            )
        # X ticks.
        tick_y = plot_bottom + 6 + LINE_PX - 3
        if axis is not None:
            for x, label, row in time_ticks(axis, data.zone, 2.0, layout.width - 2.0, layout.tick_px):
                if row == 0:
                    parts.append(
                        f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{plot_top:.1f}" y2="{plot_bottom:.1f}"/>'
                    )
                parts.append(
                    f'<text x="{x:.1f}" y="{tick_y + row * LINE_PX:.1f}" class="tick" '
                    f'text-anchor="middle">{escape(label)}</text>'
                )
        if slots is not None:
            parts.extend(self._slot_ticks(slots, tick_y))
        # Code events: a thin line each, its short label on the first panel, the message on hover.
        for event, ex, placed in event_labels or [(e, axis.x(e.ts), None) for e in events if axis is not None]:
            label = ""
            top_y = plot_top
            if placed:
                text, left, row = placed
                top_y = frame.event_row_y(row) + 3
                label = _text(left, frame.event_row_y(row), text, "label event-label")
            parts.append(
                f'<g class="event" data-event="{_attribute(event.id)}"><title>{escape(_event_title(event))}</title>'
                f'<line x1="{ex:.1f}" x2="{ex:.1f}" y1="{top_y:.1f}" y2="{plot_bottom:.1f}"/>{label}</g>'
            )
        # Runs over everything.
        places = {id(run): (i, k, len(slot)) for i, slot in enumerate(slots or []) for k, run in enumerate(slot)}
        for point in self.points:
            parts.append(self._run(point, axis, places, len(slots or []), y_of))
        parts.append("</svg>")
        return "".join(parts)

    def _band(self, shift: Shift, axis: TimeAxis | None, slots: list[list[Run]] | None) -> tuple[float, float] | None:
        before, after = set(shift.from_side.runs), set(shift.to_side.runs)
        if slots is not None:
            width = (self.right - self.left) / max(len(slots), 1)
            ends = [i for i, slot in enumerate(slots) if any(r.id in before for r in slot)]
            starts = [i for i, slot in enumerate(slots) if any(r.id in after for r in slot)]
            if not ends or not starts:
                return None
            a = self.left + (max(ends) + 0.5) * width + width * 0.3
            b = self.left + (min(starts) + 0.5) * width - width * 0.3
        else:
            assert axis is not None
            runs = {r.id: r for r in self.data.runs}
            left = [(runs[i].end or runs[i].start) for i in before if i in runs]
            right = [runs[i].start for i in after if i in runs]
            moments_left = [m.timestamp() for m in left if m is not None]
            moments_right = [m.timestamp() for m in right if m is not None]
            if not moments_left or not moments_right:
                return None
            a, b = axis.x(max(moments_left)), axis.x(min(moments_right))
        a, b = min(a, b), max(a, b)
        if b - a < 3:
            a, b = (a + b) / 2 - 1.5, (a + b) / 2 + 1.5
        return max(a, self.left), min(b, self.right)

    def _slot_ticks(self, slots: list[list[Run]], y: float) -> list[str]:
        """A label under each slot (the short sha, or the commit's number in the legend when
        there is no room), its subject on hover."""
        width = (self.right - self.left) / max(len(slots), 1)
        use_sha = text_width("0" * 7) + LABEL_GAP_PX <= width
        lanes = Lanes(1, 2, self.layout.width - 2)
        parts = []
        for index, slot in enumerate(slots):
            commit = slot[0].commit
            number = self.data.number(commit)
            label = short_sha(commit, 7) if use_sha else ("-" if number is None else str(number))
            x = self.left + (index + 0.5) * width
            if lanes.place([label], x, centred=True):
                about = f"{number or '-'} {short_sha(commit)} {self.data.subjects.get(commit or '', '')}".rstrip()
                runs = ", ".join(run.id for run in slot)
                parts.append(
                    f'<g class="slot"><title>{escape(about)}\nruns: {escape(runs)}</title>'
                    f'<text x="{x:.1f}" y="{y:.1f}" class="tick" text-anchor="middle">{escape(label)}</text></g>'
                )
        return parts

    def _run(
        self,
        point: Point,
        axis: TimeAxis | None,
        places: dict[int, tuple[int, int, int]],
        slots: int,
        y_of: Callable[[float], float],
    ) -> str:
        """One run: its point (hollow unless exact), whisker (min-max of its lines) and, over
        time, a bar for its duration; by commit, placed by ``places`` (slot, place, runs in it)."""
        run, summary = point.run, point.summary
        colour = self.data.colour(run.commit)
        exact = run.attribution in ("exact", "no-repo")
        radius = 5 if self.layout is WIDE else 4
        cy = y_of(point.value)
        if id(run) in places:
            width = (self.right - self.left) / max(slots, 1)
            index, place, size = places[id(run)]
            share = min(width * 0.6 / size, radius * 3)
            cx = self.left + (index + 0.5) * width + (place - (size - 1) / 2) * share
            span = ""
        else:
            assert axis is not None
            cx, x_end = axis.x(point.start), axis.x(point.end)
            span = (
                f'<line x1="{cx:.1f}" x2="{max(x_end, cx):.1f}" y1="{cy:.1f}" y2="{cy:.1f}" stroke="{colour}" '
                f'stroke-width="3" stroke-opacity="0.55"/>'
            )
        whisker = (
            f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y_of(summary.min):.1f}" y2="{y_of(summary.max):.1f}" '
            f'stroke="{colour}" stroke-width="1.5"/>'
            if summary.n > 1 and self.metric.stat == "median"
            else ""
        )
        title = _run_title(point, self.metric, self.data.subjects.get(run.commit or "", ""))
        return (
            f'<g class="run" data-run="{_attribute(run.id)}" data-commit="{_attribute(run.commit or "")}">'
            f"<title>{escape(title)}</title>{span}{whisker}"
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{radius}" fill="{colour if exact else "#ffffff"}" '
            f'stroke="{colour}" stroke-width="2"/></g>'
        )


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    days, minutes = divmod(minutes, 1440)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{days} d"] if days else []
    parts += [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes and not days else []
    return " ".join(parts) or "under a minute"


def versions(runs: Sequence[Run]) -> list[list[Run]]:
    """The runs (with a start) in time order, cut wherever the commit changes: the by-commit
    view's slots, one per version, as the shift comparison cuts them."""
    slots: list[list[Run]] = []
    for run in sorted((r for r in runs if r.start is not None), key=lambda r: r.start.timestamp()):  # type: ignore[union-attr]
        if slots and slots[-1][0].commit == run.commit:
            slots[-1].append(run)
        else:
            slots.append([run])
    return slots


def view_svgs(data: ChartData, view: str, layout: Layout) -> tuple[str, int]:
    """Every panel of one view of a group at one layout, and the number of idle stretches drawn
    narrow. The panels share the x axis and the room for y labels, so that they line up."""
    metrics = [m for m in data.metrics() if data.points(m)]
    charted = [r for r in data.runs if r.start is not None and any(m.name in r.metrics for m in metrics)]
    axis, slots = None, None
    if view == "time" and charted:
        spans = [(p.start, p.end) for m in metrics for p in data.points(m)]
        low, high = min(s for s, _ in spans) - IDLE_S, max(e for _, e in spans) + IDLE_S
        data = replace(data, events=[e for e in data.events if low <= e.ts <= high])
    panels = [Panel(data, metric, view, layout, number == 0, 0.0) for number, metric in enumerate(metrics)]
    widest = 0.0
    for panel in panels:
        _, _, ticks, decimals, _ = panel.y_axis()
        widest = max([widest, *(text_width(f"{t:.{decimals}f}") for t in ticks)])
    left = widest + 12
    if view == "time" and charted:
        spans += [(e.ts, e.ts) for e in data.events]
        axis = TimeAxis(spans, left, layout.width - 12.0)
    elif charted:
        slots = versions(charted)
    out = []
    for panel in panels:
        panel.left = left
        out.append(panel.render(axis, slots))
    return "".join(out), len(axis.gaps) if axis else 0
