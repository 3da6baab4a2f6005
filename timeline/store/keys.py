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
        for index, content in zip(indexes, _contents(source, [runs[i] for i in indexes]), strict=True):
            contents[index] = content
    return [
        RunKey(content, hashlib.sha256(f"{content} {run.first_line} {run.last_line}".encode()).hexdigest())
        for content, run in zip(contents, runs, strict=True)
    ]


def _contents(source: str, runs: list[Run]) -> list[str]:
    """The digest of each run's lines (every line of the log for a run without a range)."""
    if source == "-":
        raise StoreError("-: standard input cannot be read again to key its runs: ingest a file")
    spans = sorted(
        (run.first_line or 1, math.inf if run.last_line is None else run.last_line, index)
        for index, run in enumerate(runs)
    )
    hashers = [hashlib.sha256() for _ in runs]
    active: list[tuple[float, int]] = []
    waiting = 0
    try:
        with LogLines(source) as log:
            for number, text in log:
                while waiting < len(spans) and spans[waiting][0] <= number:
                    active.append((spans[waiting][1], spans[waiting][2]))
                    waiting += 1
                if not active:
                    if waiting == len(spans):
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
