"""The report's chart geometry: label rows, the time axis with idle stretches drawn narrow,
ticks by the span, y ranges from the data, colours by commit."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeline.render.html_chart import (
    IDLE_S,
    LABEL_GAP_PX,
    PALETTE,
    Lanes,
    TimeAxis,
    commit_colours,
    text_width,
    time_ticks,
    value_range,
    value_ticks,
)

DAY = 86400
START = datetime(2026, 4, 6, tzinfo=timezone.utc).timestamp()  # a Monday


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.floats(0, 1000), st.text("abcde 0123456789", min_size=1, max_size=12), st.booleans()),
        max_size=30,
    )
)
def test_placed_labels_never_overlap_nor_leave_the_lanes(labels):
    lanes = Lanes(3, 10.0, 1000.0)
    placed = []
    for anchor, text, centred in labels:
        spot = lanes.place([text + " long", text], anchor, centred)
        if spot:
            placed.append(spot)
    for text, left, _row in placed:
        assert left >= 10.0 - 0.01 and left + text_width(text) <= 1000.0 + 0.01
    for i, (text_a, left_a, row_a) in enumerate(placed):
        for text_b, left_b, row_b in placed[i + 1 :]:
            if row_a == row_b:
                assert left_a + text_width(text_a) + LABEL_GAP_PX <= left_b + 1e-6 or (
                    left_b + text_width(text_b) + LABEL_GAP_PX <= left_a + 1e-6
                )


def test_a_label_goes_up_a_row_when_its_place_is_taken_then_gives_up():
    lanes = Lanes(2, 0.0, 500.0)
    assert lanes.place(["e1 pull"], 100.0) == ("e1 pull", 103.0, 0)
    assert lanes.place(["e2 pull"], 95.0) == ("e2 pull", 98.0, 1)  # its leader passes row 0 left of e1's label
    assert lanes.place(["e3 pull"], 130.0) is None  # its leader would cross e1's label, its text e2's
    assert lanes.place(["e3 pull", "e3"], 170.0) == ("e3 pull", 173.0, 0)
    assert lanes.place(["e4 pull"], 499.0) == ("e4 pull", 499.0 - 3 - text_width("e4 pull"), 0)  # turned left


def _working_days(days: int) -> list[tuple[float, float]]:
    """Two 20-minute runs on each weekday, at 10:00 and 15:30."""
    spans = []
    for day in range(days):
        if datetime.fromtimestamp(START + day * DAY, timezone.utc).weekday() < 5:
            for hour in (10.0, 15.5):
                begin = START + day * DAY + hour * 3600
                spans.append((begin, begin + 1200))
    return spans


def test_idle_stretches_are_drawn_narrow():
    spans = _working_days(14)
    axis = TimeAxis(spans, 50.0, 1050.0)
    # Nights, lunch breaks and the weekend: 19 idle stretches, together about a tenth of the width.
    assert len(axis.gaps) == 19
    idle_px = sum(x_to - x_from for _, _, x_from, x_to in axis.gaps)
    assert 0.08 * 1000 < idle_px < 0.14 * 1000
    # Linear within the runs (each 20 minutes wide alike), increasing throughout, inside the plot.
    widths = {round(axis.x(b) - axis.x(a), 6) for a, b in spans}
    assert len(widths) == 1
    xs = [axis.x(t) for a, b in spans for t in (a, b)]
    assert xs == sorted(xs) and xs[0] >= 50.0 and xs[-1] <= 1050.0
    # Without idle stretches the axis is plainly linear.
    linear = TimeAxis([(START, START + 3600), (START + 7200, START + 9000)], 0.0, 100.0)
    assert not linear.gaps
    assert abs((linear.x(START + 7200) - linear.x(START + 3600)) - (linear.x(START + 3600) - linear.x(START))) < 1e-6


def test_ticks_step_by_the_span():
    zone = timezone.utc
    # An afternoon: times of day, and the date once.
    afternoon = TimeAxis([(START + 13 * 3600, START + 18 * 3600)], 40.0, 1000.0)
    ticks = time_ticks(afternoon, zone, 0.0, 1040.0, 72)
    hours = [label for _, label, row in ticks if row == 0]
    assert hours and all(label.endswith(":00") or label.endswith(":30") for label in hours)
    assert [label for _, label, row in ticks if row == 1] == ["Apr 6"]
    # Two months of runs every two hours, night and day (nothing idle): weeks, on Mondays.
    busy = [(START + k * 7200, START + k * 7200 + 1200) for k in range(12 * 60)]
    months = TimeAxis(busy, 40.0, 1000.0)
    assert not months.gaps
    labels = [label for _, label, _ in time_ticks(months, zone, 0.0, 1040.0, 72)]
    assert labels[:3] == ["Apr 6", "Apr 13", "Apr 20"] and len(labels) >= 6
    # A month of working days drawn narrow: a label for days, none overlapping (Lanes).
    month = TimeAxis(_working_days(30), 40.0, 1000.0)
    days = [label for _, label, row in time_ticks(month, zone, 0.0, 1040.0, 72) if row == 1]
    assert days[0] == "Apr 6" and "May 5" in days and len(days) >= 10


def test_idle_threshold_is_three_hours():
    axis = TimeAxis([(START, START + 600), (START + 600 + IDLE_S + 60, START + IDLE_S + 1800)], 0.0, 100.0)
    assert len(axis.gaps) == 1
    axis = TimeAxis([(START, START + 600), (START + 600 + IDLE_S - 60, START + IDLE_S + 1800)], 0.0, 100.0)
    assert not axis.gaps


def test_the_y_range_is_from_the_data_unless_zero_is_near():
    low, high, zero = value_range([81.0, 98.0])
    assert not zero and 75 < low < 81 and 98 < high < 105
    bottom, top, ticks, decimals = value_ticks(low, high, 5)
    assert bottom == 75 and top == 100 and ticks[:2] == [75, 80] and decimals == 0
    assert value_range([3.0, 94.0])[2]  # a drop to near nothing: from 0
    low, high, zero = value_range([3.1, 3.1])  # one value: a band around it
    assert not zero and low < 3.1 < high
    assert value_ticks(2.8, 3.6, 3)[3] == 1


def test_colours_are_distinct_up_to_twenty_then_follow_history():
    twenty = commit_colours([f"{n:040x}" for n in range(20)])
    assert len(set(twenty.values())) == 20 and list(twenty.values()) == list(PALETTE)
    many = commit_colours([f"{n:040x}" for n in range(30)])
    values = list(many.values())
    assert values[0] == "#440154" and values[-1] == "#fde725"  # viridis, oldest to newest
    assert len(set(values)) == 30


def test_reserved_lines_keep_labels_off_and_take_no_row():
    lanes = Lanes(2, 0.0, 300.0)
    lanes.reserve(150.0)  # an event's line passes here
    assert lanes.used() == 0
    assert lanes.place(["s1 -35.8%"], 150.0, centred=True) is None  # centred, it would cover the line
    width = text_width("s1 -35.8%")
    assert lanes.place(["s1 -35.8%"], 60.0 + width / 2, centred=True) == ("s1 -35.8%", 60.0, 0)
    assert lanes.used() == 1
