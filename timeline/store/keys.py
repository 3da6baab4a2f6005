"""Which run is which: a run's identity is the digest of its own lines in its log and its line range.

Not the file's digest: a server log that is appended to between two ingests keeps its earlier
runs' lines and numbers, so they stay known instead of coming back as new runs. The lines are
read as build read them (``timeline.parsers.framing.LogLines``: decompressed, line endings and
over-long lines handled alike), so a ``.gz`` and the plain log it came from key the same runs.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from timeline.model import Run
from timeline.parsers.framing import STREAM_ERRORS, LogLines, NotTextError
from timeline.store.errors import StoreError


@dataclass(frozen=True)
class RunKey:
    content: str  # sha256 of the run's lines, each ending in a newline
    key: str  # sha256 of (content, first line, last line): the unique key of the runs table


def run_keys(runs: list[Run]) -> list[RunKey]:
    """The key of each run, in order, reading each log once. Raises StoreError (naming the log)
    when a log cannot be read again (standard input, a file removed since the build)."""
    by_source: dict[str, list[int]] = {}
    for index, run in enumerate(runs):
        by_source.setdefault(run.source, []).append(index)
    contents: list[str] = [""] * len(runs)
    for source, indexes in by_source.items():
        spans = [(runs[i].first_line, runs[i].last_line) for i in indexes]
        for index, content in zip(indexes, span_digests(source, spans), strict=True):
            contents[index] = content
    return [
        RunKey(content, hashlib.sha256(f"{content} {run.first_line} {run.last_line}".encode()).hexdigest())
        for content, run in zip(contents, runs, strict=True)
    ]


def span_digests(source: str, spans: list[tuple[int | None, int | None]]) -> list[str]:
    """The digest of the lines ``first`` to ``last`` of the log, for each span (None: from the
    first line, to the last), as a run's content is digested."""
    if source == "-":
        raise StoreError("-: standard input cannot be read again to key its runs: ingest a file")
    ordered = sorted(
        (first or 1, math.inf if last is None else last, index) for index, (first, last) in enumerate(spans)
    )
    hashers = [hashlib.sha256() for _ in spans]
    active: list[tuple[float, int]] = []
    waiting = 0
    try:
        with LogLines(source) as log:
            for number, text in log:
                while waiting < len(ordered) and ordered[waiting][0] <= number:
                    active.append((ordered[waiting][1], ordered[waiting][2]))
                    waiting += 1
                if not active:
                    if waiting == len(ordered):
                        break
                    continue
                data = text.encode("utf-8", "surrogatepass") + b"\n"
                for _, index in active:
                    hashers[index].update(data)
                if any(last <= number for last, _ in active):
                    active = [(last, index) for last, index in active if last > number]
    except (NotTextError, *STREAM_ERRORS) as error:
        reason = getattr(error, "strerror", None) or error
        raise StoreError(f"{source}: cannot read the log again to key its runs: {reason}") from error
    return [hasher.hexdigest() for hasher in hashers]
