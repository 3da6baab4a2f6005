"""Every output of ``timeline build`` as text, by format name (table aside: rich prints it)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import tzinfo

from timeline.errors import UsageError
from timeline.model import Timeline

STDOUT_FORMATS = ("table", "json", "csv", "markdown")  # --format
FILE_OPTIONS = {"json": "--json", "csv": "--csv", "html": "--html"}  # --json FILE, --csv FILE, --html FILE


def render_text(
    timeline: Timeline, fmt: str, display: tzinfo | None = None, all_events: bool = False
) -> str | Iterable[str]:
    """The timeline as ``json``, ``csv``, ``markdown`` or ``html`` text (JSON in pieces to write
    one after the other, a batch of samples at a time: ``write_text_atomic`` takes both). Markdown and
    HTML show the code events around the runs, or ``all_events``; the JSON document always has
    them all."""
    if fmt == "json":
        from timeline.export import json_pieces

        return json_pieces(timeline)
    if fmt == "csv":
        from timeline.render.csv import timeline_csv

        return timeline_csv(timeline)
    if fmt == "markdown":
        try:
            from timeline.render.markdown import timeline_markdown
        except ImportError:
            raise UsageError("--format markdown is not available in this version of timeline") from None
        return timeline_markdown(timeline, all_events)
    if fmt == "html":
        from timeline.render.html import timeline_html

        return timeline_html(timeline, display, all_events)
    raise UsageError(f"unknown format {fmt!r} (use one of: {', '.join(STDOUT_FORMATS)})")


def plan_outputs(fmt: str, files: dict[str, str | None]) -> tuple[str, dict[str, str]]:
    """What goes to standard output, and which files to write: ``(stdout format, {format: path})``.

    ``files`` maps ``json``/``csv``/``html`` to the path given with ``--json``/``--csv``/``--html``
    (or None); a path of ``-`` means standard output instead of the table, so it may not clash
    with another ``-`` or with a ``--format`` other than ``table``.
    """
    fmt = fmt.lower()
    if fmt not in STDOUT_FORMATS:
        raise UsageError(f"unknown --format {fmt!r} (use one of: {', '.join(STDOUT_FORMATS)})")
    stdout = fmt
    claimed_by = None if fmt == "table" else f"--format {fmt}"
    written: dict[str, str] = {}
    for kind, path in files.items():
        if path is None:
            continue
        if path != "-":
            written[kind] = path
            continue
        if claimed_by is not None and stdout != kind:
            raise UsageError(f"{FILE_OPTIONS[kind]} - and {claimed_by} both write to standard output: choose one")
        stdout, claimed_by = kind, f"{FILE_OPTIONS[kind]} -"
    return stdout, written
