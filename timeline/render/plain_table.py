"""A rich ``Table`` of the timeline's kind written straight to text, when it fits and draws no colour.

rich lays out and draws a table cell by cell, about half a millisecond a row (65 ms of a 136-run
timeline's table, 13% of a 400 MB log's build). When the console draws no colour (a pipe, a file,
``NO_COLOR``) and every line of every cell fits its column, the layout is simple: each column as
wide as its widest line (``rich.text.Text.__rich_measure__``), no line wrapped, the box's lines
drawn between rows (``rich.table.Table._render``). ``plain_table`` writes those characters, and
says None for anything else, which rich draws: wrapping, colour, another box or padding, markup in
a cell. ``tests/render/test_plain_table.py`` checks it against rich, character for character.
"""

from __future__ import annotations

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["plain_table"]

# Characters where Text.__rich_measure__ (str.splitlines) and the rendering (split at "\n") would
# see lines differently, or that rendering expands (tabs).
_ODD = frozenset("\t\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def plain_table(table: Table, console: Console) -> str | None:
    """What ``console.print(table)`` writes, for a table of the timeline's kind (heavy-headed
    box, lines between rows, padding of one, ``Text`` cells) that fits the console, which draws
    no colour; None otherwise."""
    if not _simple(table, console):
        return None
    columns = table.columns
    cells = [[column.header, *column.cells] for column in columns]
    lines: list[list[list[str]]] = []  # by column, by row: the cell's lines
    widths = []
    for column_cells in cells:
        split = []
        for cell in column_cells:
            text = cell.plain if isinstance(cell, Text) else cell
            if not isinstance(text, str) or not _ODD.isdisjoint(text) or not _plain_cell(cell):
                return None
            split.append(text.split("\n"))
        lines.append(split)
        widths.append(max(cell_len(line) for cell_lines in split for line in cell_lines) + 2)
    table_width = sum(widths) + len(columns) + 1
    if table_width > console.width:
        return None
    title = _annotation(table.title, console, table_width, center=True)
    caption = _annotation(table.caption, console, table_width, center=False)
    if title is None or caption is None:
        return None
    heavy = box.HEAVY_HEAD
    out = title
    out.append(heavy.get_top(widths))
    rows = len(lines[0])
    for row in range(rows):
        height = max(len(column[row]) for column in lines)
        edge = heavy.head_left if row == 0 else heavy.mid_left
        for line_no in range(height):
            parts = []
            for column, width in zip(lines, widths, strict=True):
                cell_lines = column[row]
                text = cell_lines[line_no] if line_no < len(cell_lines) else ""
                parts.append(" " + text + " " * (width - 1 - cell_len(text)))
            out.append(edge + edge.join(parts) + edge)
        if row == 0:
            out.append(heavy.get_row(widths, "head"))
        elif row < rows - 1:
            out.append(heavy.get_row(widths, "row"))
    out.append(heavy.get_bottom(widths))
    out.extend(caption)
    return "".join(line + "\n" for line in out)


def _simple(table: Table, console: Console) -> bool:
    """The table is drawn as ``plain_table`` draws it, and the console draws no colour."""
    return (
        console.color_system is None
        and not console.quiet
        and not console.legacy_windows
        and not console.options.ascii_only
        and not console.record
        and table.box is box.HEAVY_HEAD
        and table.show_header
        and table.show_edge
        and table.show_lines
        and not table.show_footer
        and not table.expand
        and table.width is None
        and table.min_width is None
        and table.leading == 0
        and table.padding == (0, 1, 0, 1)
        and table.pad_edge
        and not table.collapse_padding
        and not table.row_styles
        and bool(table.columns)
        and not any(row.end_section for row in table.rows)
        and all(
            column.width is None
            and column.min_width is None
            and column.max_width is None
            and column.ratio is None
            and column.justify == "left"
            and column.vertical == "top"
            for column in table.columns
        )
    )


def _plain_cell(cell: object) -> bool:
    """A header of plain words, or a ``Text`` laid out by its column (no justification, overflow,
    wrapping or end of its own)."""
    if isinstance(cell, str):
        return "[" not in cell and ":" not in cell  # (a str is read as markup, with emoji codes)
    return (
        isinstance(cell, Text)
        and cell.justify is None
        and cell.overflow is None
        and cell.no_wrap is None
        and cell.end == "\n"
        and cell.tab_size is None
    )


def _annotation(annotation: object, console: Console, width: int, center: bool) -> list[str] | None:
    """The lines of a title (centred) or caption (to the left) as rich draws them over a table
    ``width`` wide, or None for one with a line wider than that (rich would wrap it)."""
    if annotation is None or annotation == "":
        return []
    if not isinstance(annotation, str):
        return None
    text = console.render_str(annotation, highlight=False).plain  # markup and emoji codes, as rich reads them
    if not _ODD.isdisjoint(text):
        return None
    lines = text.split("\n")
    if any(cell_len(line) > width for line in lines):
        return None
    if not center:
        return [line + " " * (width - cell_len(line)) for line in lines]
    drawn = []
    for line in lines:
        line = line.rstrip()
        left = (width - cell_len(line)) // 2
        drawn.append(" " * left + line + " " * (width - left - cell_len(line)))
    return drawn
