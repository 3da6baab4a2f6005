"""timeline.render.table: the time-ordered table as a terminal shows it."""

from __future__ import annotations

import dataclasses
import io
from datetime import datetime, timedelta, timezone

from rich.console import Console
from shift_stories import steady_run

from timeline.model import Timeline
from timeline.render.table import render_timeline


def _text(*runs) -> str:
    moment = datetime(2026, 4, 8, 12, tzinfo=timezone.utc)
    timeline = Timeline(moment, "UTC", "flag", None, [], list(runs), [])
    out = io.StringIO()
    render_timeline(timeline, Console(file=out, width=120, color_system=None))
    return out.getvalue()


def test_a_run_across_midnight_shows_the_date_it_ends():
    overnight = steady_run(1, "a" * 40, 22, 100.0)
    overnight = dataclasses.replace(overnight, end=overnight.start + timedelta(hours=4, minutes=45))
    text = _text(overnight)
    assert "2026-04-07 22:00:00" in text and "→ 2026-04-08 02:45:00" in text


def test_a_run_within_a_day_shows_the_time_it_ends():
    text = _text(steady_run(1, "a" * 40, 16, 100.0))
    assert "2026-04-07 16:00:00" in text and "→ 16:10:00" in text and "2026-04-07 16:10" not in text


def test_machine_names_show_as_given_not_as_markup():
    runs = [
        dataclasses.replace(steady_run(n, "a" * 40, 10 + n, 100.0), machine=name)
        for n, name in ((1, "[gpu1]"), (2, "b:fire:"))
    ]
    assert "Runs and code events of 2 machines ([gpu1], b:fire:): each names its own." in _text(*runs)
