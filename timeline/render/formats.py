"""Every output of ``timeline build`` as text, by format name (table aside: rich prints it)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import tzinfo

from timeline.errors import UsageError
from timeline.model import Timeline

TEXT_FORMATS = ("json", "csv", "markdown", "html")


def render_text(
    timeline: Timeline, fmt: str, display: tzinfo | None = None, all_events: bool = False, all_runs: bool = False
) -> str | Iterable[str]:
    """The timeline as ``json``, ``csv``, ``markdown`` or ``html`` text (JSON in pieces to write
    one after the other, a batch of samples at a time: ``write_text_atomic`` takes both). Markdown and
    HTML show the runs of the run window, or ``all_runs``, and the code events around them, or
    ``all_events`` (render.window); the JSON document and the CSV always have them all."""
    if fmt == "json":
        from timeline.export import json_pieces

        return json_pieces(timeline)
    if fmt == "csv":
        from timeline.render.csv import timeline_csv

        return timeline_csv(timeline)
    if fmt == "markdown":
        from timeline.render.markdown import timeline_markdown

        return timeline_markdown(timeline, all_events, all_runs)
    if fmt == "html":
        from timeline.render.html import timeline_html

        return timeline_html(timeline, display, all_events, all_runs)
    raise UsageError(f"unknown format {fmt!r} (use one of: {', '.join(TEXT_FORMATS)})")
