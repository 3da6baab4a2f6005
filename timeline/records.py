"""The records at the bottom of every layer: what the parsers and the git module produce.

``Diagnostic`` (a warning naming a file and line, with a code), ``ParsedRun``/``ParsedFile`` (what
a log holds), and the rules for the messages a run keeps. Imports nothing of timeline but
``timeline.columns`` (a run's samples). No git, no pandas, no printing.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

from timeline.columns import SampleRows

DiagnosticCode = Literal[
    "other",  # nothing decides on it: it is only said
    "not-a-file",  # a FIFO, socket, device, link loop or dangling link among the logs: never opened
    "duplicate-input",  # a log reached a second time (another path, a link): read once
    "unreadable-folder",  # a folder of logs that cannot be listed: its logs are not read
    "unreadable",  # a log that could not be opened or decompressed: skipped
    "not-text",  # a binary file or an unsupported archive: skipped
    "zstd-missing",  # a zstd-compressed log without the zstandard package: skipped
    "read-error",  # reading failed part-way: the rest of the log is skipped
    "expansion-limit",  # a compressed log expanded past its budget: the rest is skipped
    "impossible-date",  # a time stamp that is no real date and time (2026-02-30, 25:61)
    "internal-error",  # a parser failed on the log (a bug, caught)
    "no-sglang-lines",  # SGLang's parser met no SGLang header line
    "no-vllm-run",  # vLLM's parser met vLLM lines but no launch or stats line (worker lines, say)
    "nothing-found",  # no parser found a run in the log
    "no-reflog",  # a ref has no reflog file
    "reflog-empty",  # a reflog file of no bytes
    "reflog-unreadable",  # a reflog file refused (symlink, FIFO, outside the git dir) or unreadable
    "reflog-damaged-line",  # a reflog line skipped, cut, glued or oddly terminated
    "reflog-chain-gap",  # a reflog entry does not start where the one before it ended
    "zone-inferred",  # no zone given for a log: inferred from its mtime
    "zone-unlike-reflog",  # a log's mtime matches at an offset unlike the reflog's around then: zone assumed
    "zone-machine",  # no zone given and none inferred: the log read in this machine's zone
    "entry-not-found",  # the server's entry module is not in a version: its imports not judged
    "reflog-clock-step",  # a reflog entry reads earlier than one before it: runs then are ambiguous
]
"""What a ``Diagnostic`` is about, for the code that acts on it (never on its message)."""

RunStatus = Literal[
    "ok",  # the launch logged stats lines
    "crashed",  # it ended in a fatal error or an uncaught traceback (``ParsedRun.error`` keeps the line)
    "no-stats",  # it started and never logged a stats line
]
"""How a server launch ended, as far as its log says."""

DateSource = Literal[
    "stamp",  # the run's time stamps carry their full date
    "dated-line",  # the stamps lack the date or year; taken from a dated line of the same file
    "mtime",  # the stamps lack the date or year; taken from the file's modification time (a guess)
]
"""Where the calendar date of a run's times comes from."""


@dataclass(frozen=True)
class Diagnostic:
    """A warning about the input: which file, which line (1-based, or None), what is wrong, and
    which kind of problem it is (``code``)."""

    source: str
    line: int | None
    message: str
    code: DiagnosticCode = "other"

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.message}"


@dataclass(slots=True)
class SeriesDigest:
    """What a run's series is read for, worked out when the run ended, in place of its numbers:
    the summary (``MetricSummary``) and, for the steady metric, the run's one number
    (``SteadyValue``). Without ``--samples`` a long log keeps this a run, not 8 bytes a stats line
    a series: memory stays flat however many runs a file holds. Both are what the numbers would
    have given later (the same functions, the same numbers)."""

    lines: int  # how many values the series had
    summary: Any  # timeline.model.MetricSummary or None (no finite value)
    steady: Any = None  # timeline.model.SteadyValue or None: the steady metric's only

    def __len__(self) -> int:
        return self.lines


@dataclass
class ParsedRun:
    """One server launch (or one benchmark client result) found in a log file.

    ``kind``: ``sglang-server``, ``vllm-server`` (``parsers.sglang``, ``parsers.vllm``), or a
    benchmark client's: ``bench-serving``, ``bench-offline-throughput``, ``bench-one-batch``,
    ``bench-one-batch-server`` (``parsers.bench``).

    Times are the log's own wall-clock readings: naive datetimes, unless the line carried
    its own offset (then aware). Turning them into instants is the core's job (timeline.clock).

    ``series`` holds the per-line numbers needed for metric summaries, always kept but compact
    (``array('d')``), or their ``SeriesDigest`` once the run ended when the reader was given a
    ``finish_run`` (``timeline.build`` without samples); ``samples`` holds every parsed field of
    every stats line, by kind (``SampleRows``), and is filled only when the caller asked for them.

    ``rank_series``: when two or more ranks log their own decode lines (SGLang's DP ranks, with DP
    attention or DP replicas: ``DP3``; several vLLM engines: ``Engine 001``), each one's gen
    throughput, by rank, in file order. A replica's lines count once: the first tags seen for it
    speak for it, and TP peers repeating its line (``DP3 TP4`` after ``DP3 TP3``) are left out.
    The run's throughput is then the sum of the ranks' steady values (``timeline.shifts``).

    ``messages``: the distinct messages of the server's own log lines (after their header; not
    stats, configuration or uvicorn access lines): startup lines, warnings, in first-seen order, as
    ``message_key`` makes them. Log evidence that a message appears only after a change; at most
    ``MAX_MESSAGES`` a run.

    ``cuda_driver_versions``: the CUDA version of the GPU driver as NCCL logs it under
    ``NCCL_DEBUG=INFO`` (``NCCL INFO cudaDriverVersion 12080``: ``12.8``), in order of appearance.

    ``status``: ``ok`` (stats lines), ``crashed`` (the launch ended in a fatal error or an uncaught
    traceback; ``error`` is that line's text, ``error_line`` its number), ``no-stats``. A
    benchmark client's result is ``ok``. ``date_source``: where the date of ``start`` and ``end``
    comes from (None when the run has no time).
    """

    kind: str
    first_line: int | None = None
    last_line: int | None = None
    start: datetime | None = None
    end: datetime | None = None
    start_text: str | None = None
    nccl_versions: list[str] = field(default_factory=list)
    cuda_driver_versions: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    series: dict[str, array | SeriesDigest] = field(default_factory=dict)
    rank_series: dict[str, array] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    samples: dict[str, SampleRows] | None = None
    # A benchmark result found inside a server's log: the first_line of that server run (same file).
    measures: int | None = None
    messages: list[str] = field(default_factory=list)
    status: RunStatus = "ok"
    error: str | None = None
    error_line: int | None = None
    date_source: DateSource | None = None


@dataclass
class ParsedFile:
    source: str
    runs: list[ParsedRun] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


# --- messages: what a server printed besides its stats lines -----------------------------------

MAX_MESSAGES = 256  # a run's distinct messages kept; later ones are ignored (a log of gigabytes costs no more)
MAX_MESSAGE_CHARS = 200
_DIGITS_RE = re.compile(r"\d+")
# uvicorn's access line (the "access" format of LOGGING_CONFIG in uvicorn/config.py,
# '%(client_addr)s - "%(request_line)s" %(status_code)s'; SGLang stamps it with its own header):
# a line a request, not a message of the server's own.
_ACCESS_RE = re.compile(r'"[A-Z]+ \S* HTTP/[0-9.]+" \d{3}')


def message_key(message: str) -> str:
    """``message`` (a log line's text after its header) as a run's ``messages`` keep it: every run
    of digits made ``0`` (``avail mem=74.12 GB`` and ``avail mem=73.98 GB`` are one message),
    whitespace collapsed, cut to ``MAX_MESSAGE_CHARS``."""
    # A long line (a request dump) is read from a prefix: the key of a prefix is a prefix of the
    # whole line's key, so one of MAX_MESSAGE_CHARS or more is the whole line's, cut.
    head = message[: 4 * MAX_MESSAGE_CHARS]
    key = " ".join(_DIGITS_RE.sub("0", head).split())
    if len(key) < MAX_MESSAGE_CHARS and len(head) < len(message):
        key = " ".join(_DIGITS_RE.sub("0", message).split())
    return key[:MAX_MESSAGE_CHARS].rstrip()


def add_message(messages: dict[str, None], message: str) -> None:
    """Keep ``message`` in a run's ``messages`` (a dict: distinct, in first-seen order), unless it
    is an access line, empty, or the run holds ``MAX_MESSAGES`` already."""
    if len(messages) >= MAX_MESSAGES or ("HTTP/" in message and _ACCESS_RE.search(message)):
        return
    key = message_key(message)
    if key:
        messages[key] = None


class ChangedLine(NamedTuple):
    """One line a commit added (``added``) or removed, in the file at ``path`` (the git module reads
    them; culprit evidence looks for flags and messages in them)."""

    path: str
    added: bool
    text: str
