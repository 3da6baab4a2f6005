"""What the parsers produce: plain records, no git, no pandas, no printing."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Diagnostic:
    """A warning about the input: which file, which line (1-based, or None), what is wrong."""

    source: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.message}"


@dataclass
class ParsedRun:
    """One server launch (or one benchmark client result) found in a log file.

    ``kind``: ``sglang-server``, ``vllm-server`` (``parsers.sglang``, ``parsers.vllm``), or a
    benchmark client's: ``bench-serving``, ``bench-offline-throughput``, ``bench-one-batch``,
    ``bench-one-batch-server`` (``parsers.bench``).

    Times are the log's own wall-clock readings: naive datetimes, unless the line carried
    its own offset (then aware). Turning them into instants is the core's job (timeline.clock).

    ``series`` holds the per-line numbers needed for metric summaries, always kept but compact
    (``array('d')``); ``samples`` holds every parsed field of every stats line and is filled
    only when the caller asked for samples.
    """

    kind: str
    first_line: int | None = None
    last_line: int | None = None
    start: datetime | None = None
    end: datetime | None = None
    start_text: str | None = None
    nccl_versions: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    series: dict[str, array] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    samples: dict[str, list[dict[str, Any]]] | None = None
    # A benchmark result found inside a server's log: the first_line of that server run (same file).
    measures: int | None = None


@dataclass
class ParsedFile:
    source: str
    runs: list[ParsedRun] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
