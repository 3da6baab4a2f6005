"""One big log read in pieces, a process each: ``timeline build``'s workers on a single file, the
first piece read by the process that started the build.

A piece starts at a launch (a ``server_args=`` line: ``parsers.reading.launch_message``) near an
equal share of the file and is read as the whole file is, by the block reader
(``parsers.reading.parse_piece``), its lines numbered from 1: once read, each piece's count of
lines numbers the next one's as the file does (counting the newlines before a piece took its
process 0.07-0.13 s for 212 MB of benchmarks/gen.py's 400 MB log). What the SGLang parser
carries from one launch to the next is passed on explicitly when the pieces are joined
(``SGLangLogParser.joined``: the runs, the diagnostics, the date of the last time-only stamp, the
stamps that are no real date, the decode lines without a throughput), and the file-wide
decisions (the mtime's dates, "no SGLang lines", other families) are taken once, on the joined
parser, as for a file read in one go. A file whose pieces cannot be joined into exactly that
(another family's lines, a launch line that would not start a run of its own, a read error, the
file changed meanwhile) is read whole instead.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from timeline.parsers.reading import Piece, join_pieces, launch_message, parse_piece
from timeline.records import ParsedFile, ParsedRun

__all__ = ["Span", "Launches", "launches", "plan", "spans_at", "read_piece", "joined"]

_NEEDLE = b"] server_args="


@dataclass(frozen=True)
class Span:
    """One piece of a file: its first byte, the byte after it (None: the end), and the message of
    the launch line the next piece starts at (None: the last piece); ``stamp``: the file's size
    and mtime in ns when the pieces were planned."""

    start: int
    end: int | None
    next_launch: str | None
    stamp: tuple[int, int]


class Launches(NamedTuple):
    """The launch lines a piece can start at, ``(offset, message)`` each, and the file's size and
    mtime in ns when they were found (what each piece checks the file against)."""

    stamp: tuple[int, int]
    lines: list[tuple[int, str]]


def launches(path: str | os.PathLike, near: Iterable[int] | None = None, reach: int | None = None) -> Launches:
    """The launch lines a piece can start at (the first line of the file excepted): all of them
    (the tests cut at each), or for each offset of ``near``, the first at or after it, and less
    than ``reach`` bytes after it when given. The stamp is taken from the file they are found in,
    before they are looked for: a file rewritten meanwhile fails each piece's check and is read
    whole."""
    with open(path, "rb") as handle:
        st = os.fstat(handle.fileno())
        stamp, size = (st.st_size, st.st_mtime_ns), st.st_size
        if not size:
            return Launches(stamp, [])
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if near is None:
                return Launches(stamp, list(_launch_lines(data, size)))
            found: list[tuple[int, str]] = []
            for target in sorted(near):
                stop = size if reach is None else min(size, target + reach)
                hit = next(_launch_lines(data, size, target, stop), None)
                if hit is not None and (not found or hit[0] > found[-1][0]):
                    found.append(hit)
            return Launches(stamp, found)


def _launch_lines(data: mmap.mmap, size: int, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str]]:
    """The launch lines whose ``server_args=`` lies between ``start`` and ``stop`` (None: the end)."""
    stop = size if stop is None else stop
    at = data.find(_NEEDLE, start, stop)
    while at >= 0:
        first = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = size if end < 0 else end
        message = launch_message(data[first:end]) if first else None
        if message is not None and first >= start:
            yield first, message
        at = data.find(_NEEDLE, end, stop)


def spans_at(stamp: tuple[int, int], cuts: list[tuple[int, str]]) -> list[Span]:
    """The pieces of a file cut at these of its ``launches`` (in order), found at ``stamp``."""
    starts = [0, *(offset for offset, _ in cuts)]
    ends: list[int | None] = [*(offset for offset, _ in cuts), None]
    nexts: list[str | None] = [*(message for _, message in cuts), None]
    return [Span(*piece, stamp) for piece in zip(starts, ends, nexts, strict=True)]


# A cut is looked for up to half a piece's share of the file past where the piece should end:
# further on, the pieces would be far from even, and a log with no launch line left (a server up
# for days) is not searched to its end, which took 0.07-0.2 s for the last 200 MB of a 400 MB log.
REACH_SHARE = 0.5


def plan(path: str | os.PathLike, count: int, size: int) -> list[Span] | None:
    """``count`` pieces of about equal size, cut at the launch lines nearest after each share
    (within ``REACH_SHARE`` of a share); None when there is no such line to cut at."""
    targets = [size * k // count for k in range(1, count)]
    found = launches(path, targets, reach=int(size / count * REACH_SHARE))
    return spans_at(found.stamp, found.lines) if found.lines else None


def read_piece(
    path: str | os.PathLike, span: Span, source: str, keep_samples: bool, finish_run: Callable[[ParsedRun], None] | None
) -> Piece | None:
    """``parse_piece`` of one span."""
    return parse_piece(
        path,
        (span.start, span.end),
        span.next_launch,
        source=source,
        keep_samples=keep_samples,
        finish_run=finish_run,
        stamp=span.stamp,
    )


def joined(pieces: list[Piece | None], source: str, keep_samples: bool) -> ParsedFile | None:
    """The file the pieces cover, as ``parse_file`` reads it; None when a piece was not read or
    they cannot be joined (the file is then read whole)."""
    read: list[Piece] = [piece for piece in pieces if piece is not None]
    if len(read) < len(pieces):
        return None
    return join_pieces(read, source=source, keep_samples=keep_samples)
