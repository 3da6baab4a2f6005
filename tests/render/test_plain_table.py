"""timeline.render.plain_table: the timeline's table written straight to text is, character for
character, what rich draws, or rich draws it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from timeline.builder import build
from timeline.render.plain_table import plain_table
from timeline.render.table import render_timeline, timeline_table
from timeline.render.window import view
from timeline.scenario import build_month

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
WIDTHS = (320, 160, 100, 72)


def drawn_by_rich(table: Table, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    console.print(table)
    return console.file.getvalue()


def plain(table: Table, width: int) -> str | None:
    return plain_table(table, Console(file=io.StringIO(), width=width, color_system=None, highlight=False))


@pytest.fixture(scope="module")
def timelines(demo, tmp_path_factory) -> list:
    month = build_month(tmp_path_factory.mktemp("month"))
    logs = sorted((FIXTURES / "sglang").glob("*.log")) + sorted((FIXTURES / "vllm").glob("*.log"))
    return [
        build([demo.logs], repo=demo.repo, cache=False),
        build([month.logs], repo=month.repo, cache=False),
        *(build([log], cache=False, allow_empty=True) for log in logs),
    ]


def test_the_timelines_tables_are_rich_s_or_left_to_it(timelines) -> None:
    """Every fixture's timeline, a demo's and a month's with their checkouts, at four widths: the
    text is rich's, or None where a line would wrap; the wide ones fit (the path is taken)."""
    written = 0
    for timeline in timelines:
        for all_events in (False, True):
            shown, runs_note, events_note = view(timeline, all_events, False)
            table = timeline_table(shown, None, all_events, runs_note, events_note)
            for width in WIDTHS:
                text = plain(table, width)
                if text is not None:
                    assert text == drawn_by_rich(table, width), (timeline.runs[:1], width)
                    written += 1
    assert written >= len(timelines) * 2


def test_render_timeline_writes_the_same_text_either_way(timelines, monkeypatch) -> None:
    """The whole view (table, shifts, notes) with the table written straight and drawn by rich."""
    from timeline.render import table as table_module

    for timeline in timelines[:2]:
        straight = io.StringIO()
        render_timeline(timeline, Console(file=straight, width=200, color_system=None))
        with monkeypatch.context() as patch:
            patch.setattr(table_module, "plain_table", lambda table, console: None)
            by_rich = io.StringIO()
            render_timeline(timeline, Console(file=by_rich, width=200, color_system=None))
        assert straight.getvalue() == by_rich.getvalue()


def test_a_console_with_colour_or_quiet_or_without_unicode_is_left_to_rich(timelines) -> None:
    """rich draws for a console that colours, writes nothing, or draws its boxes in ASCII."""
    shown, runs_note, events_note = view(timelines[0], False, False)
    table = timeline_table(shown, None, False, runs_note, events_note)
    colour = Console(file=io.StringIO(), width=200, force_terminal=True, color_system="truecolor")
    quiet = Console(file=io.StringIO(), width=200, color_system=None, quiet=True)
    ascii_only = Console(file=io.TextIOWrapper(io.BytesIO(), encoding="ascii"), width=200, color_system=None)
    assert plain_table(table, colour) is None
    assert plain_table(table, quiet) is None
    assert plain_table(table, ascii_only) is None


cell_text = st.lists(
    st.sampled_from([*"ab ,.:[]/-", "\n", "漢", "é", "e\u0301", "✅", "→", "·", "word", "\t", "\u2028", "\x85"]),
    max_size=20,
).map("".join)
annotation = st.one_of(
    st.none(),
    st.sampled_from(["Timeline (times in UTC)", "a [bold]b[/bold] c", "x :smile: y", "12:00:00", "wide 漢字"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.lists(cell_text, min_size=4, max_size=4), max_size=6),
    title=annotation,
    caption=annotation,
    width=st.integers(10, 140),
    styled=st.booleans(),
)
def test_any_such_table_is_rich_s_or_left_to_it(rows, title, caption, width, styled) -> None:
    """Tables built as timeline_table builds them, of any text (wide and combining characters,
    newlines, brackets and colons, which a Text cell does not read as markup, tabs and the line
    separators only str.splitlines sees), styled or not, at any width: rich's characters, or None."""
    table = Table(title=title, expand=False, show_lines=True, caption=caption, caption_justify="left")
    table.add_column("When", no_wrap=True)
    table.add_column("What", no_wrap=True)
    table.add_column("Commit", no_wrap=True)
    table.add_column("Details", overflow="fold")
    for row in rows:
        table.add_row(*(Text(text, style="bold blue" if styled else "") for text in row))
    text = plain(table, width)
    if text is not None:
        assert text == drawn_by_rich(table, width)
