"""SGLang server log parser (0.4.x - 0.5.x formats; 0.2/0.3 time-only stamps tolerated).

Input: ``(line_number, text)`` pairs from ``parsers.framing``. Output: one ``ParsedRun`` per
server launch, plus diagnostics. The formats are SGLang's own: the header from
``configure_logger`` (``python/sglang/srt/utils.py`` up to 0.5.2, then
https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/utils/common.py), the rank tags
from the scheduler process
(https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/managers/scheduler.py), as
shipped in each release's wheel; the pieces, in order of a line:

* optional outer wrappers: ``docker logs -t`` stamp, Slurm ``N: ``, Ray ``(Name pid=N, ip=A) ``;
* the header ``[YYYY-MM-DD HH:MM:SS(.mmm) RANK-TAGS]`` (date optional for 0.2-0.3 logs; any
  number of tags like ``TP0``, ``DP0 PP1 TP3 EP3``, ``ATTN_CP1``, ``MOE_DP0``), then ``] `` and
  an optional ``LEVEL file.py:LINE: `` from custom logging configs;
* the message. Recognised messages: ``server_args=...`` (configuration, starts a run),
  ``Decode batch...`` / ``Prefill batch...`` (stats), and NCCL version lines (these also count
  without a header, wherever they sit), as is NCCL's ``NCCL INFO cudaDriverVersion 12080`` line
  (``NCCL_DEBUG=INFO``): the GPU driver's CUDA version, ``cuda_driver_versions``.

Deployments that log through their own format (``SGLANG_LOGGING_CONFIG_PATH``, forks, launchers)
put another prefix before the same messages; stats and ``server_args=`` lines are found after it
(``find_message``) and take the stamp and rank tags it carries. Damaged pastes: a header missing
its ``[`` is such a prefix; a ``server_args=`` line hard-wrapped at a terminal's width is joined
back (``_wrapped_piece``); a value cut inside the next key keeps its number (``values.field_spans``).

Per run, ``series`` (always kept, ``array('d')``, present only when non-empty):
``decode_throughput`` (tok/s, the ``gen throughput (token/s)`` of each Decode line, in file
order, every rank that logs: with DP attention each DP rank prints its own line),
``accept_len`` (tokens, speculative decoding) and ``prefill_input_throughput`` (tok/s).
``samples`` (only with ``keep_samples``): ``{"decode": SampleRows, "prefill": SampleRows}``, each
row a dict ``{"time", "line", "rank", ["forward_ct"], **fields}`` with snake_case keys and typed
values. ``messages``: the messages of the run's other header lines, the text after the header
(SGLang's ``configure_logger`` in ``python/sglang/srt/utils.py`` logs ``[%(asctime)s{prefix}]
%(message)s``), as ``timeline.records.message_key`` makes them; not ``server_args=``, stats or
uvicorn access lines. Lines without a header (tracebacks, progress bars, ``[Gloo]``, NCCL's own
output) are not messages: they are not the server's logger's.

Run splitting: every ``server_args=`` line starts a new run, unless the current one holds nothing
but lines without a header (a launch's first warnings), or it is an identical repeat right after
the previous one. Stats or NCCL lines before the first ``server_args=`` form a run of their own;
header lines before it without any of those are reported and not counted as a run.
"""

from __future__ import annotations

import dataclasses
import re
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date as _date
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple

from timeline.columns import SampleRows
from timeline.parsers import values
from timeline.parsers.dates import ImpossibleStamps, describe_mtime, last_day, real_clock, real_date
from timeline.parsers.failures import exception_line, fatal_message, kept_error, note_failure, run_status
from timeline.parsers.pyrepr import parse_keyword_repr
from timeline.parsers.wrappers import RFC3339_RE, rfc3339
from timeline.records import DateSource, Diagnostic, DiagnosticCode, ParsedRun, add_message

__all__ = [
    "KIND",
    "HEADER_RE",
    "PLAIN_HEADER_RE",
    "BATCH_RE",
    "match_header",
    "stamp_parts",
    "Segment",
    "SGLangLogParser",
    "parse_stats_message",
    "stats_fields",
    "stats_value",
    "field_number",
    "stats_key",
    "SYNTHETIC_DAY0",
    "WRAP_S",
    "Handover",
]

KIND = "sglang-server"

_BRACKET = (
    r"\[(?:(?P<date>\d{4}-\d\d-\d\d) )?(?P<time>\d\d:\d\d:\d\d(?:\.\d{1,6})?)"
    r"(?P<rank>(?: (?:[A-Z_]+\d+|encode_server|encode_dp_worker\[\d+\]))*)"
    r"\](?: |$)"
)
_LEVEL = r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.\-]+\.py:\d+: )"
HEADER_RE = re.compile(
    r"(?:(?P<rfc>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) )?"  # docker logs -t
    r"(?:\d{1,5}: )?"  # srun -l
    r"(?:\([^()\[\]]*? pid=\d+[^()]*\) )?" + _BRACKET + _LEVEL + "?"  # Ray actor prefix
)
"""The whole header. Groups: ``date`` (None for time-only stamps), ``time``, ``rank``, ``rfc``
(the ``docker logs -t`` stamp, when there is one: it is then the line's time, with its zone)."""

PLAIN_HEADER_RE = re.compile(
    r"\[(?:(?P<date>\d{4}-\d\d-\d\d) )?(?P<time>\d\d:\d\d:\d\d(?:\.\d{1,6})?)(?P<rank>(?: [A-Z_]+\d+)*)\](?: |$)"
)
"""The common header: a line starting with ``[`` and plain rank tags (``HEADER_RE`` without its
alternations; a match followed by a level word is checked against ``HEADER_RE``)."""
_LEVEL_RE = re.compile(_LEVEL)
_LEVEL_WORDS = ("DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL ")


def match_header(text: str) -> re.Match[str] | None:
    """The header match of a line (see ``HEADER_RE``), or None. Message = ``text[m.end():]``."""
    if text[:1] == "[":
        m = PLAIN_HEADER_RE.match(text)
        if m is not None:
            end = m.end()
            if not text.startswith(_LEVEL_WORDS, end) or _LEVEL_RE.match(text, end) is None:
                return m
    return HEADER_RE.match(text)


_HEADER_FIRST = frozenset("[(0123456789")
_BARE_STARTS = ("Decode batch", "Prefill batch", "server_args=")

BATCH_RE = re.compile(r"(Prefill|Decode) batch(?:\(mixed #running-req: (\d+)\))?(?: \[(\d+)\])?[.,] ")
"""A stats line's prefix: ``Decode batch, `` / ``Decode batch. `` / ``Decode batch [N], `` and the
<= 0.3.4 mixed-chunk form ``Prefill batch(mixed #running-req: N). ``. Groups: kind, running
requests (mixed form), forward counter."""

# Messages found after another logging config's prefix (``find_message``).
_MESSAGE_RE = re.compile(r"(?:Decode|Prefill) batch[ .,(\[]|server_args=")
MAX_PREFIX = 240  # a logging prefix longer than this is not one
# The pieces a logging prefix is made of (``logging.Formatter`` fields as deployments configure
# them: ``%(asctime)s``, ``[%(levelname)s]``, ``%(name)s:``, ``[%(filename)s:%(lineno)d]``,
# ``%(process)d``, rank tags), each matched whole, one after another: no nested repetition.
_PREFIX_TOKEN_RE = re.compile(
    r"\s+|\[[^\[\]]{0,100}\]|\([^()]{0,100}\)"
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b:?|[DIWEF]\b"  # names, or glog's letters
    r"|[\w.\-/]+\.py(?::\d+)?:?"
    r"|[a-z_]\w*(?:\.\w+)+:?"
    r"|[a-z_]+:?"
    r"|\d[\d\-:T.,Z+]*"
    r"|(?:[A-Z]+_)*(?:DP|TP|EP|PP|CP)\d+\b"
    r"|[-|:,\]\[]"
)
_PREFIX_STAMP_RE = re.compile(
    r"(?<!\d)(?:(?P<date>\d{4}-\d\d-\d\d)[ T])?(?P<time>\d\d:\d\d:\d\d)(?:(?P<sep>[.,])(?P<frac>\d{1,9}))?"
    r"(?P<zone>Z|[+-]\d\d:?\d\d)?(?![\d:])"
)
_PREFIX_RANK_RE = re.compile(r"(?<![\w])(?:[A-Z]+_)*(?:DP|TP|EP|PP|CP)\d+(?!\w)")
_PREFIX_LEVEL_RE = re.compile(r"\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b")


class Prefixed(NamedTuple):
    """A message found after another logging config's prefix: where it starts, and the stamp
    and rank tags the prefix carries (``date`` None for a time-only stamp, ``time`` None for none)."""

    at: int
    date: str | None
    time: str | None
    stamp_text: str
    rank: str


def find_message(text: str, *, after_header: bool = False) -> Prefixed | None:
    """A stats or ``server_args=`` message after a logging prefix other than SGLang's own.

    Deployments log SGLang's messages through their own formats (``SGLANG_LOGGING_CONFIG_PATH``,
    forks, launchers): ``2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.scheduler_metrics_mixin:
    Decode batch, ...``, ``2025-10-20 03:02:22 INFO 12345 [DP3 TP3 EP3 scheduler.py:1234] Decode
    batch. ...``, ``[2026-04-15 17:13:10][scheduler.py:88][INFO]: Prefill batch, ...``, a header
    that lost its leading ``[``. The prefix must be made of logging fields only (stamps, levels,
    logger names, ``file.py:LINE``, numbers, brackets, rank tags) and carry a stamp, a level or a
    rank tag (``after_header``: the text after SGLang's own header, whose stamp counts), so a
    sentence quoting a stats line is not one. None when there is no such message.
    """
    found = _MESSAGE_RE.search(text, 0, MAX_PREFIX + 16)
    if found is None or found.start() == 0 or found.start() > MAX_PREFIX:
        return None
    at = found.start()
    pos = 0
    match = _PREFIX_TOKEN_RE.match
    while pos < at:
        token = match(text, pos, at)
        if token is None or token.end() == pos:
            return None
        pos = token.end()
    prefix = text[:at]
    stamp = _PREFIX_STAMP_RE.search(prefix)
    rank = " ".join(_PREFIX_RANK_RE.findall(prefix))
    if stamp is None and not rank and not after_header and _PREFIX_LEVEL_RE.search(prefix) is None:
        return None
    if stamp is None:
        return Prefixed(at, None, None, "", rank)
    time = stamp.group("time")
    if stamp.group("frac"):
        time += stamp.group("sep") + stamp.group("frac")[:6]
    zone = stamp.group("zone")
    if zone and stamp.group("date"):  # an ISO stamp with its zone (``docker logs -t``): aware
        time += "+00:00" if zone == "Z" else zone[:3] + ":" + zone[-2:]
    return Prefixed(at, stamp.group("date"), time, stamp.group(0), rank)


# Messages only SGLang prints, besides ``server_args=`` and the stats lines: a header line with
# one of them (or with rank tags) makes header lines an SGLang launch's, not any program's
# ``[date time] text`` log. Uvicorn's lines under SGLang's ``[%(asctime)s] %(levelprefix)s``
# format (``set_uvicorn_logging_configs``, SGLang 0.3.4+: the level, a colon and blanks to nine
# characters, as uvicorn's ``ColourizedFormatter`` pads it); the startup and failure messages of
# the model runner, the scheduler and the launcher, every release from 0.2 on
# (https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/model_executor/model_runner.py,
# .../managers/scheduler.py, .../entrypoints/http_server.py).
_OWN_MESSAGE_RE = re.compile(
    r"(?:INFO:     |WARNING:  |ERROR:    |DEBUG:    |CRITICAL: |TRACE:    )\S"
    r"|The server is fired up and ready to roll!"
    r"|Load weight (?:begin|end)\. "
    r"|Init torch distributed (?:begin|ends)\."
    r"|KV Cache is allocated\. "
    r"|Memory pool end\. "
    r"|Capture [\w ]{0,40}graph (?:begin|end)\."
    r"|max_total_num_tokens="
    r"|(?:Scheduler|DetokenizerManager|TokenizerManager|TpModelWorkerClient|DataParallelController) hit an exception"
    r"|Received sigquit from a child process"
    r"|KV cache pool is full\. Retract requests\."
    r"|Decode out of memory\."
    r"|Start of (?:co-locate|pd disaggregation) warmup"
)


def own_message(message: str, rank: str) -> bool:
    """Is a header line with this message and these rank tags one only SGLang prints?"""
    return bool(rank.strip()) or _OWN_MESSAGE_RE.match(message) is not None


# Sample keys the parser sets itself; stats fields with these names get a "_field" suffix.
_RESERVED = frozenset({"time", "line", "rank", "forward_ct", "mixed"})

_SERIES_UNITS = {"decode_throughput": "tok/s", "accept_len": "tokens", "prefill_input_throughput": "tok/s"}


# --------------------------------------------------------------------------- stats lines


def stats_key(raw_key: str) -> str:
    """A stats field's key in a sample: normalised, with a ``_field`` suffix when it is one of the
    sample's own keys (``time``, ``line``, ``rank``, ``forward_ct``, ``mixed``: 0.4.7 PD prefill
    lines print a ``time:`` field)."""
    key = values.key(raw_key, drop_unit=True)
    return key + "_field" if key in _RESERVED else key


def stats_fields(body: str) -> dict[str, Any]:
    """Every ``key: value`` of a stats line body, keys normalised (``stats_key``), values typed."""
    return {stats_key(raw_key): stats_value(raw_value.strip()) for raw_key, raw_value in values.split_fields(body)}


_NUMBER_START = frozenset("0123456789+-.")


def stats_value(text: str) -> Any:
    """A stats field's value, typed (``values.value``); a number damaged in a paste (``1\ufffd2.50``,
    ``0.0.5``: it starts like a number and is none) is None, never text in a numeric field."""
    typed = values.value(text)
    if isinstance(typed, str) and typed[:1] in _NUMBER_START:
        return None
    return typed


def parse_stats_message(message: str) -> tuple[str, int | None, dict[str, Any]] | None:
    """``Decode batch, #running-req: 1, ...`` -> ``("decode", None, {"running_req": 1, ...})``.

    Returns None when the message is not a stats line. The middle item is the ``[N]`` forward
    counter when printed.
    """
    m = BATCH_RE.match(message)
    if m is None:
        return None
    fields = stats_fields(message[m.end() :])
    if m.group(2):
        fields = {"mixed": True, "running_req": int(m.group(2)), **fields}
    counter = int(m.group(3)) if m.group(3) else None
    return ("decode" if m.group(1) == "Decode" else "prefill"), counter, fields


_needles: dict[str, tuple[str, str]] = {}


def field_number(body: str, label: str) -> float | None:
    """The number printed for ``label`` in a stats line body, or None.

    Same result as ``split_fields`` + ``values.number`` for that label (the last occurrence wins;
    the value runs up to the next ``, key: `` or the end), without splitting the whole body.
    """
    needles = _needles.get(label)
    if needles is None:
        needles = _needles[label] = (", " + label + ": ", label + ": ")
    inner, head = needles
    i = body.rfind(inner)
    if i >= 0:
        start = i + len(inner)
    elif body.startswith(head):
        start = len(head)
    else:
        return None
    j = body.find(",", start)
    if j < 0:
        text = body[start:]
    else:
        text = body[start:j]
        if not values.starts_field(body, j) and body[j + 1 :].strip():
            # What follows the comma is not a new key: the value goes on. Rare; split fully.
            for raw_key, raw_value in reversed(values.split_fields(body)):
                if raw_key == label:
                    text = raw_value
                    break
    return values.number(text)


# --------------------------------------------------------------------------- time stamps


def _stamp(date: str | None, time: str) -> datetime | None:
    """Naive datetime for ``YYYY-MM-DD`` + ``HH:MM:SS[.fff]``; None without a date or if invalid.

    A time ending in an offset (``HH:MM:SS.ffffff+00:00``, from a docker stamp) gives an aware one.
    """
    if date is None:
        return None
    tz = None
    if time[-6:-5] in ("+", "-") and len(time) > 8:
        tz = _offset(time[-6:])
        time = time[:-6]
    try:
        frac = time[9:]
        return datetime(
            int(date[0:4]),
            int(date[5:7]),
            int(date[8:10]),
            int(time[0:2]),
            int(time[3:5]),
            int(time[6:8]),
            int(frac.ljust(6, "0")) if frac else 0,
            tzinfo=tz,
        )
    except ValueError:
        return None


def _offset(text: str) -> timezone | None:
    try:
        minutes = int(text[1:3]) * 60 + int(text[4:6])
        return timezone(timedelta(minutes=-minutes if text[0] == "-" else minutes))
    except ValueError:
        return None


def _rfc_stamp(m: re.Match[str]) -> tuple[str, str, str] | None:
    """``(date, time+offset, text)`` of the docker stamp of a header match, or None."""
    found = RFC3339_RE.match(m.group("rfc") + " ")
    when = rfc3339(found) if found is not None else None  # no zone: the bracket's time is used
    if when is None:
        return None
    return (
        when.date().isoformat(),
        when.time().isoformat(timespec="microseconds") + when.isoformat()[-6:],
        m.group("rfc"),
    )


def _seconds(time: str) -> int:
    return int(time[0:2]) * 3600 + int(time[3:5]) * 60 + int(time[6:8])


def _nearby(extreme: tuple[tuple[str, str], Any] | None, in_order: Any) -> Any:
    """The earliest (latest) stamp when it lies within ``OUT_OF_ORDER`` of the first (last) line's:
    ranks flushing out of order. Further apart, the wall clock itself went back (the autumn change,
    a clock step): the file order is the truth."""
    if extreme is None or in_order is None:
        return in_order
    a, b = (_stamp(*stamp_parts(stamp)[:2]) for stamp in (extreme[1], in_order))
    if a is None or b is None or a.tzinfo is not b.tzinfo and (a.tzinfo is None or b.tzinfo is None):
        return in_order
    return extreme[1] if abs(a - b) <= OUT_OF_ORDER else in_order


OUT_OF_ORDER = timedelta(minutes=10)  # ranks' lines this far out of order are still one moment's
SYNTHETIC_DAY0 = "0001-01-01"  # the first day of a log whose stamps have no date, until resolved
WRAP_S = 3600  # a time-only stamp this much earlier than the previous one is on the next day
# What a piece of a file read part-way (``SGLangLogParser.start_at_launch``) dates a time-only
# stamp from when the one before it is in another piece: a day after any counted from
# ``SYNTHETIC_DAY0`` in a piece, still before the year 1000 (the date then comes from the mtime),
# midnight (so none is counted before the first stamp); its text, empty, is no stamp's. (A
# log's own dates from 0500 to 0999 would be moved with them: no log has such dates.)
PIECE_DAY0 = "0500-01-01"
_PIECE_START = (PIECE_DAY0, "00:00:00", "")


# --------------------------------------------------------------------------- runs


_DP_TAG_RE = re.compile(r"(?<![A-Za-z_])DP\d+(?!\w)")
_dp_ranks: dict[str, str | None] = {}


def dp_rank(tags: str) -> str | None:
    """The DP rank tag of a line's rank tags (``DP3`` of ``DP3 TP3 EP3``; not ``MOE_DP0``), or None.
    With DP attention every DP rank logs its own decode lines (SGLang's scheduler: the stats
    logging rank is ``attn_tp_rank == 0``), as does each DP replica."""
    found = _dp_ranks.get(tags, "")
    if found != "":
        return found
    m = _DP_TAG_RE.search(tags)
    found = m.group(0) if m is not None else None
    if len(_dp_ranks) < 4096:
        _dp_ranks[tags] = found
    return found


def _config_text(message: str) -> str:
    """The repr text of a ``server_args=`` message, trailing blanks cut: what a run's config is read from
    and a repeat of it is told by (``_repeats``)."""
    return message[len("server_args=") :].rstrip()


def stamp_parts(stamp: Any) -> tuple[str | None, str, str]:
    """(date, time, original text) of a header match or of a ``(date, time, text)`` tuple."""
    if isinstance(stamp, tuple):
        return stamp
    date = stamp.group("date")
    return date, stamp.group("time"), stamp.string[stamp.start("date") : stamp.end("time")]


class Segment:
    """A run being built. The line-by-line reader and the block reader (``parsers.sglang_fast``)
    both add to it: lines through ``cover``, stats lines through ``count_stats`` and the series."""

    __slots__ = (
        "first_line",
        "last_line",
        "first_stamp",
        "last_stamp",
        "headers",
        "headers_since_config",
        "config",
        "config_text",
        "nccl",
        "drivers",
        "decode",
        "accept",
        "prefill_tp",
        "stats",
        "samples",
        "messages",
        "ranks",
        "speakers",
        "low",
        "high",
        "fatal",
        "error",
        "date_guess",
        "sglang",
    )

    def __init__(self, keep_samples: bool) -> None:
        self.first_line: int | None = None
        self.last_line: int | None = None
        # Header match objects (or (date, time, text) tuples for time-only stamps).
        self.first_stamp: Any = None
        self.last_stamp: Any = None
        self.headers = 0
        self.headers_since_config = 0
        self.config: dict[str, Any] | None = None
        self.config_text: str | None = None
        self.nccl: list[str] = []
        self.drivers: list[str] = []  # ParsedRun.cuda_driver_versions
        self.decode = array("d")
        self.accept = array("d")
        self.prefill_tp = array("d")
        self.stats = 0
        self.samples: dict[str, SampleRows] | None = (
            {"decode": SampleRows(), "prefill": SampleRows()} if keep_samples else None
        )
        self.messages: dict[str, None] = {}  # ParsedRun.messages, distinct in first-seen order
        self.ranks: dict[str, array] = {}  # ParsedRun.rank_series
        self.speakers: dict[str, str] = {}  # a DP rank -> the tags whose lines speak for it
        # The earliest and the latest stamp, with their keys (date, HH:MM:SS): ranks print out of
        # order, so the run starts at the earliest and ends at the latest, not at its first and last line.
        self.low: tuple[tuple[str, str], Any] | None = None
        self.high: tuple[tuple[str, str], Any] | None = None
        self.fatal: tuple[int, str] | None = None  # the last fatal message (parsers.failures), (line, text)
        self.error: tuple[int, str] | None = None  # the last exception line no normal line followed
        self.date_guess: DateSource | None = None  # where time-only stamps took their date from
        # A header line only SGLang prints (own_message): without one, or a server_args= or a stats
        # line, header lines are any program's "[date time] text" log, not an SGLang launch.
        self.sglang = False

    def has_content(self) -> bool:
        return self.config is not None or self.stats > 0 or bool(self.nccl)

    def rank_value(self, tags: str, value: float) -> None:
        """A decode line's throughput for its DP rank's series (``ParsedRun.rank_series``): the
        first tags seen for a DP rank speak for it; its TP peers repeating the line do not."""
        replica = dp_rank(tags)
        if replica is None:
            return
        if self.speakers.setdefault(replica, tags) == tags:
            series = self.ranks.get(replica)
            if series is None:
                series = self.ranks[replica] = array("d")
            series.append(value)

    def cover(self, first: int, last: int) -> None:
        """Lines ``first`` to ``last`` belong to the run."""
        if self.first_line is None:
            self.first_line = first
        self.last_line = last

    def count_stats(self, count: int, first_stamp: Any, last_stamp: Any) -> None:
        """``count`` stats lines with headers, the first and last real stamps as given (None: none)."""
        self.headers += count
        self.headers_since_config += count
        self.stats += count
        self.error = None  # the server went on after it
        if self.first_stamp is None:
            self.first_stamp = first_stamp
        if last_stamp is not None:
            self.last_stamp = last_stamp

    def see(self, stamp: Any) -> bool:
        """A line's stamp, for the first and the last, the earliest and the latest (ties: the first
        earliest, the last latest); False, and not kept, when it is no real date and time."""
        date, time = stamp[:2] if isinstance(stamp, tuple) else stamp.group("date", "time")
        if not real_clock(time) or (date is not None and not real_date(date)):
            return False
        if self.first_stamp is None:
            self.first_stamp = stamp
        self.last_stamp = stamp
        self.see_key((date or "", time[:8]), stamp)
        return True

    def see_key(self, key: tuple[str, str], stamp: Any) -> None:
        if self.low is None or key < self.low[0]:
            self.low = (key, stamp)
        if self.high is None or key >= self.high[0]:
            self.high = (key, stamp)

    def crashed(self) -> bool:
        return self.fatal is not None or self.error is not None

    def state(self) -> dict[str, Any]:
        """Every field, by name."""
        return {name: getattr(self, name) for name in self.__slots__}

    def to_run(self) -> ParsedRun:
        run = ParsedRun(kind=KIND, first_line=self.first_line, last_line=self.last_line)
        earliest = _nearby(self.low, self.first_stamp)
        latest = _nearby(self.high, self.last_stamp)
        if earliest is not None:
            date, time, run.start_text = stamp_parts(earliest)
            run.start = _stamp(date, time)
        if latest is not None:
            date, time, _ = stamp_parts(latest)
            run.end = _stamp(date, time)
        run.nccl_versions = list(self.nccl)
        run.cuda_driver_versions = list(self.drivers)
        run.config = self.config if self.config is not None else {}
        for name, series in (
            ("decode_throughput", self.decode),
            ("accept_len", self.accept),
            ("prefill_input_throughput", self.prefill_tp),
        ):
            if series:
                run.series[name] = series
                run.units[name] = _SERIES_UNITS[name]
        if len(self.ranks) >= 2:
            run.rank_series = dict(self.ranks)
        run.samples = self.samples
        run.messages = list(self.messages)
        run_status(run, self)
        if run.start is not None:
            run.date_source = "stamp" if run.start.tzinfo is not None else (self.date_guess or "stamp")
        return run


# Names a damaged paste may leave a quote on (``model_path="'/models/x"``): read without it.
_NAME_KEYS = ("model_path", "tokenizer_path", "served_model_name")
MAX_SHARED_CONFIGS = 64  # distinct server_args texts whose configs are remembered (all forgotten past it)
_OWN_NCCL_RE = re.compile(r"sglang\S* is using nccl==")  # pynccl.py's line, also sglang-diffusion's
MIN_WRAP_WIDTH = 60  # a server_args line this long or longer may have been wrapped by a terminal


class _Wrap:
    """A ``server_args=`` line being joined back: its line number, the terminal width it fills,
    its pieces so far, the last one's length, and the lines after the first as read."""

    __slots__ = ("line", "width", "pieces", "last_width", "held")

    def __init__(self, line: int, width: int, first: str) -> None:
        self.line = line
        self.width = width
        self.pieces = [first]
        self.last_width = width
        self.held: list[tuple[int, str]] = []


@dataclass
class Handover:
    """What a parser that read one piece of a file (``SGLangLogParser.hand_over``) passes on:
    its runs and diagnostics, and what it carries from one launch to the next."""

    runs: list[ParsedRun]
    diagnostics: list[Diagnostic]
    any_header: bool
    own_nccl_line: bool
    dateless_line: int | None
    dateless_first: str | None
    last_dateless: tuple[str, str, str] | None
    no_throughput_line: int | None
    no_throughput_count: int
    impossible: ImpossibleStamps

    def shift_lines(self, by: int) -> None:
        """Number the lines as the file does, the piece's having been numbered from 1: ``by``
        lines come before it."""
        for run in self.runs:
            run.first_line, run.last_line, run.error_line = (
                None if line is None else line + by for line in (run.first_line, run.last_line, run.error_line)
            )
            for rows in (run.samples or {}).values():
                rows.add_to_column("line", by)
        # (What a piece says names no line in its words: the one message that does, of lines without
        # a server_args= line, is said of a file's first lines only, and the first piece keeps its numbers.)
        self.diagnostics = [d if d.line is None else dataclasses.replace(d, line=d.line + by) for d in self.diagnostics]
        if self.dateless_line is not None:
            self.dateless_line += by
        if self.no_throughput_line is not None:
            self.no_throughput_line += by
        if self.impossible.line is not None:
            self.impossible.line += by


class SGLangLogParser:
    """Feed it ``(line_number, text)`` pairs, then call ``finish()`` for runs and diagnostics."""

    def __init__(
        self,
        source: str,
        *,
        keep_samples: bool = False,
        mtime: float | None = None,
        finish_run: Callable[[ParsedRun], None] | None = None,
        configs: dict[str, tuple[dict[str, Any], list[str]]] | None = None,
    ) -> None:
        self.source = source
        self.keep_samples = keep_samples
        self.mtime = mtime  # the file's mtime: dates for time-only stamps
        # called on each run as it ends (the caller digests its series: memory stays flat)
        self.finish_run = finish_run
        # server_args text: its config and problems (``_read_config``); the caller's to share among logs
        self._configs = {} if configs is None else configs
        self.restart()

    def restart(self) -> None:
        """Forget everything fed so far (a file read again from its start)."""
        self.runs: list[ParsedRun] = []
        self.diagnostics: list[Diagnostic] = []
        self.segment = Segment(self.keep_samples)
        self.wrapping: _Wrap | None = None  # a server_args line being joined back
        self._any_header = False
        self._own_nccl_line = False  # "sglang is using nccl==" (pynccl.py's line) seen
        self._dateless_line: int | None = None
        self._dateless_first: str | None = None  # the time of the stamp at _dateless_line
        self._last_dateless: tuple[str, str, str] | None = None
        self.no_throughput_line: int | None = None  # decode lines without a numeric gen throughput
        self.no_throughput_count = 0
        self._stamp_cache: tuple[str | None, str, datetime | None] = (None, "", None)
        self.impossible = ImpossibleStamps()  # stamps that are no real date and time (not read as times)
        self._messages: list[str] = []  # the last run's messages

    def state(self) -> dict[str, Any]:
        """Everything feeding may change, by name (the run's fields as ``segment.NAME``): the
        block reader compares it before and after a line to learn what the line did."""
        state = {name: value for name, value in vars(self).items() if name != "segment"}
        state.update(("segment." + name, value) for name, value in self.segment.state().items())
        return state

    @property
    def saw_header(self) -> bool:
        """Has a line of SGLang's been read: one with its header (or another logging prefix's
        stamp) in a run that holds a line only SGLang prints, or its own ``sglang is using
        nccl==`` (NCCL's library lines are anyone's)?"""
        seg = self.segment
        return self._any_header or (seg.headers > 0 and (seg.sglang or seg.has_content())) or self._own_nccl_line

    def missing_throughput(self, first_line: int, count: int = 1) -> None:
        """``count`` Decode lines without a numeric gen throughput, the first at ``first_line``."""
        self.no_throughput_count += count
        if self.no_throughput_line is None:
            self.no_throughput_line = first_line

    # -- helpers ------------------------------------------------------------------------

    def _diag(self, line: int | None, message: str, code: DiagnosticCode = "other") -> None:
        self.diagnostics.append(Diagnostic(self.source, line, message, code))

    def _close_segment(self, final: bool = False) -> None:
        """End the run being built. Header lines without any content, but with a line only SGLang
        prints (``Segment.sglang``), are a launch of their own (``no-stats``, or ``crashed``) when
        they end the file or a crash ends them; before a ``server_args=`` line, they are the
        launch's preamble (reported, not a run). Without such a line they are another program's
        ``[date time] text`` log: no run, nothing said of them here."""
        seg = self.segment
        if seg.headers and (seg.sglang or seg.has_content()):
            self._any_header = True
        if seg.has_content() or (seg.headers and seg.sglang and (final or seg.crashed())):
            run = seg.to_run()
            if run.messages == self._messages:  # a relaunch printing what the run before printed
                run.messages = self._messages  # one list for both, as the config (_read_config)
            self._messages = run.messages
            if self.finish_run is not None:
                self.finish_run(run)
            self.runs.append(run)
        elif seg.headers and seg.sglang:
            self._diag(
                seg.first_line,
                f"lines {seg.first_line}-{seg.last_line} hold SGLang log lines but no server_args, "
                "stats or NCCL lines; not counted as a run",
            )

    def sample_time(self, date: str | None, time: str) -> datetime | None:
        """A sample's time for a stamp's date and time (the last one's remembered)."""
        cached_date, cached_time, value = self._stamp_cache
        if cached_time == time and cached_date == date:
            return value
        value = _stamp(date, time)
        self._stamp_cache = (date, time, value)
        return value

    # -- the main loop ------------------------------------------------------------------

    def feed(self, lineno: int, text: str) -> None:
        self.feed_all(((lineno, text),))

    def feed_all(self, lines: Iterable[tuple[int, str]]) -> None:
        """The per-line loop, written for speed: cheap ``in`` tests before any regex."""
        fast_match = PLAIN_HEADER_RE.match
        full_match = HEADER_RE.match
        level_match = _LEVEL_RE.match
        level_words = _LEVEL_WORDS
        header_first = _HEADER_FIRST
        note = add_message
        seg = self.segment
        for lineno, text in lines:
            if self.wrapping is not None:
                if self._wrapped_piece(lineno, text):
                    continue
                seg = self.segment
            if not text:
                continue
            first = text[0]
            if first == "[":  # match_header(), inlined
                m = fast_match(text)
                if m is None or (text.startswith(level_words, m.end()) and level_match(text, m.end())):
                    m = full_match(text)
            elif first in header_first:
                m = full_match(text)
            elif first in " \t" and text.isspace():
                continue
            else:
                m = None
            if m is not None:
                message = text[m.end() :]
                rank = None
                if ("batch" in message or "server_args=" in message) and not message.startswith(_BARE_STARTS):
                    found = find_message(message, after_header=True)  # after a second prefix (a logger name, say)
                    if found is not None:
                        message = message[found.at :]
                        rank = " ".join(filter(None, (m.group("rank").strip(), found.rank))) or None
                seg, config = self._counted_in(seg, lineno, message, len(text))
                if first != "[" and m.group("rfc"):
                    stamp = _rfc_stamp(m) or m
                elif m.group("date") is None:
                    stamp = self._dateless_stamp(lineno, m.group("time"))
                else:
                    stamp = m
                if not seg.see(stamp):
                    self.impossible.note(lineno, stamp_parts(stamp)[2])
                seg.headers += 1
                seg.headers_since_config += 1
                stats = "batch" in message and self._stats_line(seg, lineno, stamp, m, message, rank)
                if not (stats or config):
                    note(seg.messages, message)
                    note_failure(seg, lineno, message, ordinary=True)
                    if not seg.sglang and own_message(message, m.group("rank")):
                        seg.sglang = True
            else:
                if seg.first_line is None:
                    seg.first_line = lineno
                seg.last_line = lineno
                if first in "DPs" and text.startswith(_BARE_STARTS):
                    seg = self._bare_line(seg, lineno, text)
                    continue
                if "batch" in text or "server_args=" in text:
                    found = find_message(text)
                    if found is not None:
                        seg = self._prefixed_line(seg, lineno, text, found)
                        continue
                error = exception_line(text)
                if error is not None:
                    seg.error = kept_error(seg.error, lineno, error)
                else:  # a fatal message under another logging config's prefix
                    fatal = fatal_message(text)
                    if fatal is not None:
                        seg.fatal = (lineno, fatal)
            if "NCCL" in text or "nccl==" in text:  # one test a line for the version and driver lines
                if "nccl==" in text or "NCCL version" in text:
                    version = values.nccl_version(text)
                    if version is not None and version not in seg.nccl:
                        seg.nccl.append(version)
                    if "sglang" in text and _OWN_NCCL_RE.search(text):
                        self._own_nccl_line = True
                elif "cudaDriverVersion" in text:
                    driver = values.cuda_driver_version(text)
                    if driver is not None and driver not in seg.drivers:
                        seg.drivers.append(driver)

    def previous_stamp(self) -> Any:
        """The stamp a time-only stamp takes its date from: the run's last, else the last time-only one."""
        seg = self.segment
        return seg.last_stamp if seg.last_stamp is not None else self._last_dateless

    def dateless_read(self, last: tuple[str, str, str], mtime_line: int | None, first: str | None = None) -> None:
        """Time-only stamps dated by the block reader as ``_dateless_stamp`` dates them: the last
        one, and the line of the first whose date is to come from the file's mtime (None: none)
        with its time (``first``; None: the last's)."""
        first = last[1] if first is None else first
        seg = self.segment
        self._last_dateless = last
        if mtime_line is not None:
            seg.date_guess = "mtime"
            if self._dateless_line is None:
                self._dateless_line = mtime_line
                self._dateless_first = first
        elif seg.date_guess is None:
            seg.date_guess = "dated-line"

    def _dateless_stamp(self, lineno: int, time: str) -> tuple[str, str, str]:
        """A time-only stamp (SGLang <= 0.3.2) at ``lineno`` of the run being read takes the date of
        the stamp before it (the run's, else the file's), a day later when the time went back more
        than an hour (midnight). With no date seen at all it counts days from a stand-in first day,
        resolved from the file's mtime in ``finish``. A time that is no time of day (25:61:00)
        changes nothing: it is no reading."""
        if not real_clock(time):
            return (SYNTHETIC_DAY0, time, time)
        date = None
        last = self.previous_stamp()
        if last is not None:
            date, last_time, _ = stamp_parts(last)
            if date is not None and _seconds(last_time) - _seconds(time) > WRAP_S:
                try:
                    date = (_date.fromisoformat(date) + timedelta(days=1)).isoformat()
                except (ValueError, OverflowError):  # not a date; the day after 9999-12-31
                    date = None
        if date is None:
            date = SYNTHETIC_DAY0
        stamp = (date, time, time)
        # a date before 1000: days counted from the stand-in, the date will come from the mtime
        self.dateless_read(stamp, lineno if date < "1000" else None)
        return stamp

    def _bare_line(self, seg: Segment, lineno: int, text: str) -> Segment:
        """A stats or ``server_args=`` line printed without any header (``%(message)s`` logging,
        or stamps cut off when pasting): its values count, with no time and no rank."""
        seg, config = self._counted_in(seg, lineno, text, len(text))
        if config:
            seg.headers_since_config += 1
        elif "batch" in text:
            self._stats_line(seg, lineno, None, None, text)
        return seg

    def _prefixed_line(self, seg: Segment, lineno: int, text: str, found: Prefixed) -> Segment:
        """A stats or ``server_args=`` line after another logging config's prefix (``find_message``):
        read as if it had SGLang's own header, with the stamp and rank tags that prefix carries."""
        message = text[found.at :]
        seg, config = self._counted_in(seg, lineno, message, len(text))
        stamp: Any = None
        if found.time is not None:
            stamp = (
                self._dateless_stamp(lineno, found.time)
                if found.date is None
                else (found.date, found.time, found.stamp_text)
            )
            if not seg.see(stamp):
                self.impossible.note(lineno, stamp[2])
            seg.headers += 1
            seg.headers_since_config += 1
        elif config:
            seg.headers_since_config += 1
        if not config:
            self._stats_line(seg, lineno, stamp, None, message, found.rank or None)
        return seg

    def _counted_in(self, seg: Segment, lineno: int, message: str, width: int) -> tuple[Segment, bool]:
        """The segment a line belongs to, with the line counted in it, and whether its message is a
        ``server_args=`` line, which starts a run (``_config_line``): whatever header, prefix or none
        the line had."""
        config = message.startswith("server_args=")
        if config:
            seg = self._config_line(lineno, message, width)
        if seg.first_line is None:
            seg.first_line = lineno
        seg.last_line = lineno
        return seg, config

    def _config_line(self, lineno: int, message: str, width: int) -> Segment:
        """A ``server_args=`` line (``width``: the whole line's length) starts a run. One whose repr
        is not closed and that fills ``MIN_WRAP_WIDTH`` or more columns may have been hard-wrapped by
        a terminal: it is read once the lines continuing it are joined back (``_wrapped_piece``)."""
        seg = self.segment
        raw = _config_text(message)
        if self._repeats(raw):
            return seg
        if seg.has_content() or seg.headers:
            self._close_segment()
            seg = self.segment = Segment(self.keep_samples)
        seg.headers_since_config = -1  # the server_args line itself is counted next
        if width >= MIN_WRAP_WIDTH and len(message) == len(message.rstrip()) and values.bracket_depth(raw) > 0:
            seg.config = {}
            self.wrapping = _Wrap(lineno, width, raw)
            return seg
        self._read_config(seg, lineno, raw)
        return seg

    def _repeats(self, raw: str) -> bool:
        """Is a ``server_args=`` line with this repr an identical repeat of the run's own, right after it?"""
        seg = self.segment
        return seg.config_text == raw and seg.headers_since_config == 0 and not seg.stats

    def _read_config(self, seg: Segment, lineno: int, raw: str) -> None:
        """The run's ``config`` from its ``server_args`` text: one dict for the runs of the same
        text (a server restarted a thousand times in a log holds one, not a thousand; and in a
        thousand logs given the same ``configs``), to be read, not changed, as the store's runs
        share theirs (``timeline.store.reading``)."""
        read = self._configs.get(raw)
        if read is None:
            fields, problems = parse_keyword_repr(raw)
            for key in _NAME_KEYS:
                if isinstance(fields.get(key), str):
                    fields[key] = values.unquoted(fields[key])
            if len(self._configs) >= MAX_SHARED_CONFIGS:
                self._configs.clear()
            read = self._configs[raw] = (fields, problems)
        fields, problems = read
        seg.config = fields
        seg.config_text = raw
        if problems:
            self._diag(lineno, "server_args: " + "; ".join(problems) + f" (read {len(fields)} fields)")

    def _wrapped_piece(self, lineno: int, text: str) -> bool:
        """Does ``text`` continue a ``server_args=`` line hard-wrapped at a terminal's width? It may
        when the piece before it filled that width and it has no header of its own; the pieces are
        joined when the repr closes. When a line does not continue it before that, the line was
        cut, not wrapped: the first piece is read alone and the lines after it as themselves."""
        wrap = self.wrapping
        assert wrap is not None
        continues = (
            wrap.last_width == wrap.width
            and bool(text)
            and match_header(text) is None
            and not text.startswith(_BARE_STARTS)
            and not (("batch" in text or "server_args=" in text) and find_message(text) is not None)
        )
        if continues:
            wrap.pieces.append(text)
            wrap.held.append((lineno, text))
            wrap.last_width = len(text)
            if (")" not in text and "}" not in text) or self._still_open():
                if len(text) == wrap.width:
                    return True
            else:  # closed: the pieces were one line
                self.wrapping = None
                self.segment.last_line = lineno
                self._read_config(self.segment, wrap.line, "".join(wrap.pieces).rstrip())
                return True
        self.wrapping = None
        self._read_config(self.segment, wrap.line, wrap.pieces[0])
        self.feed_all(wrap.held)
        return continues

    def _still_open(self) -> bool:
        return self.wrapping is not None and values.bracket_depth("".join(self.wrapping.pieces)) > 0

    def _stats_line(
        self, seg: Segment, lineno: int, stamp: Any, m: re.Match[str] | None, message: str, rank: str | None = None
    ) -> bool:
        """Read a ``Decode batch`` / ``Prefill batch`` line; False when ``message`` is no stats line.
        ``stamp`` None: no time; ``rank`` None: the header's (``m``), if any."""
        b = BATCH_RE.match(message)
        if b is None:
            return False
        body = message[b.end() :]
        seg.stats += 1
        seg.error = None  # the server went on after it
        decode = message[0] == "D"
        # Series come straight from the exact labels (fast: no full field split).
        if decode:
            value = field_number(body, "gen throughput (token/s)")
            if value is None:
                self.missing_throughput(lineno)
            else:
                seg.decode.append(value)
                tags = rank if rank is not None else (m.group("rank").strip() if m is not None else None)
                if tags and "DP" in tags:
                    seg.rank_value(tags, value)
            if "accept len: " in body:
                accept = field_number(body, "accept len")
                if accept is not None:
                    seg.accept.append(accept)
        elif "input throughput" in body:
            value = field_number(body, "input throughput (token/s)")
            if value is not None:
                seg.prefill_tp.append(value)
        if seg.samples is not None:
            if rank is None and m is not None:
                rank = m.group("rank").strip() or None
            when = None
            if stamp is not None:
                date, time, _ = stamp_parts(stamp)
                when = self.sample_time(date, time)
            sample: dict[str, Any] = {"time": when, "line": lineno, "rank": rank}
            if b.group(3):
                sample["forward_ct"] = int(b.group(3))
            if b.group(2):
                sample["mixed"] = True
                sample["running_req"] = int(b.group(2))
            sample.update(stats_fields(body))
            seg.samples["decode" if decode else "prefill"].append(sample)
        return True

    def _resolve_dateless(self) -> str:
        """Give the time-only stamps their dates from the file's mtime (``parsers.dates``), or
        leave their times empty without one; returns the diagnostic saying which."""
        what = "time stamps without a date (SGLang <= 0.3.2 format)"
        last = self._last_dateless
        # The mtime dates the file's last stamp only: a dated launch after the time-only stamps
        # leaves the days between them unknown.
        ends = [when for run in self.runs if (when := run.end or run.start) is not None]
        dated_after = bool(ends) and ends[-1].year >= 1000
        day = None
        if last is not None and self.mtime is not None and not dated_after:
            day = last_day(last[1], self.mtime)
        shift = None
        if day is not None and last is not None and last[0] < "1000":
            try:
                shift = day - _date.fromisoformat(last[0])
            except ValueError:
                shift = None

        def fix(value: Any) -> Any:
            if isinstance(value, datetime) and value.year < 1000:
                if shift is None:
                    return None
                try:
                    return value + shift
                except OverflowError:
                    return None
            return value

        for run in self.runs:
            run.start, run.end = fix(run.start), fix(run.end)
            if run.start is None:
                run.date_source = None
            for rows in (run.samples or {}).values():
                rows.map_column("time", fix)
        if shift is None or last is None or day is None:  # (shift is None when day is)
            if dated_after and self.mtime is not None:
                return what + ": times left empty (a dated launch follows them: the mtime dates only the last line)"
            return what + ": times left empty (no file mtime to date them)"
        wraps = (_date.fromisoformat(last[0]) - _date.fromisoformat(SYNTHETIC_DAY0)).days
        return (
            f"{what}: dates taken from the file's mtime ({describe_mtime(self.mtime or 0)}): the last stamp "
            f"{last[1]} is on {day.isoformat()}, at or before the mtime"
            + (f"; {wraps} midnight(s) counted back" if wraps else "")
        )

    # -- one file read in pieces (timeline.pieces) ---------------------------------------------

    def start_at_launch(self) -> None:
        """The lines fed start at a ``server_args=`` line part-way through the file, the lines
        before it read by another parser. Of what one launch passes to the next, only the date of
        the last time-only stamp (``previous_stamp``) changes how the lines are read: until one
        of the piece's own, time-only stamps are dated from ``PIECE_DAY0``, and shifted to their
        dates when the pieces are joined (``joined``)."""
        self._last_dateless = _PIECE_START

    def hand_over(self, next_launch: str | None) -> Handover | None:
        """The piece ends: its last run ended by the ``server_args=`` line the next piece starts at
        (``next_launch``: its message; None: the file ends here), what the parser carries over.
        None when that line would not end the run (a repeat of its ``server_args=``, a run of
        lines without any header so far): the line must then be read with the run."""
        if self.wrapping is not None:
            self._wrapped_piece(0, "")  # as the next line, with a header, ends it
        if next_launch is not None:
            seg = self.segment
            if self._repeats(_config_text(next_launch)) or not (seg.has_content() or seg.headers):
                return None
        self._close_segment(final=next_launch is None)
        self.segment = Segment(self.keep_samples)
        return Handover(
            self.runs,
            self.diagnostics,
            self._any_header,
            self._own_nccl_line,
            self._dateless_line,
            self._dateless_first,
            self._last_dateless,
            self.no_throughput_line,
            self.no_throughput_count,
            self.impossible,
        )

    @classmethod
    def joined(
        cls, source: str, pieces: Sequence[Handover], *, keep_samples: bool = False, mtime: float | None = None
    ) -> SGLangLogParser | None:
        """A parser as it would be after reading the pieces' lines in one go, to ``finish``; None
        when a piece's time-only stamps cannot be dated as they would have been (their date came
        from a time-only stamp dated from a dated line: the mtime would not date them)."""
        parser = cls(source, keep_samples=keep_samples, mtime=mtime)
        for number, piece in enumerate(pieces):
            if number and piece.dateless_line is not None:
                days = _piece_days(parser._last_dateless, piece.dateless_first or "")
                if days is None:
                    return None
                _shift_piece(piece, days)
            last = piece.last_dateless
            parser.runs.extend(piece.runs)
            parser.diagnostics.extend(piece.diagnostics)
            parser._any_header |= piece.any_header
            parser._own_nccl_line |= piece.own_nccl_line
            if parser._dateless_line is None:
                parser._dateless_line, parser._dateless_first = piece.dateless_line, piece.dateless_first
            if last != _PIECE_START:
                parser._last_dateless = last
            if parser.no_throughput_line is None:
                parser.no_throughput_line = piece.no_throughput_line
            parser.no_throughput_count += piece.no_throughput_count
            if piece.impossible.count:
                first = piece.impossible
                parser.impossible.note(first.line or 0, first.text or "", first.count)
        return parser

    def finish(self) -> tuple[list[ParsedRun], list[Diagnostic]]:
        if self.wrapping is not None:
            self._wrapped_piece(0, "")  # the file ends: read the pieces so far
        self._close_segment(final=True)
        self.segment = Segment(self.keep_samples)
        if self._dateless_line is not None:
            self._diag(self._dateless_line, self._resolve_dateless())
        if self.no_throughput_count:
            self._diag(
                self.no_throughput_line,
                f"{self.no_throughput_count} Decode batch line(s) without a numeric gen throughput"
                f" (first at line {self.no_throughput_line})",
            )
        if not self.runs and not self._any_header:
            self._diag(None, "no SGLang server log lines found", "no-sglang-lines")
        self.diagnostics.sort(key=lambda d: (d.line is None, d.line or 0))
        return self.runs, self.diagnostics


def _piece_days(carried: tuple[str, str, str] | None, first: str) -> int | None:
    """How many days the time-only stamps a piece dated from ``PIECE_DAY0`` move, the stamp before
    them being ``carried`` (None: there was none) and the first of them at ``first``; None when
    that stamp's date is a real one (a date then comes from it, not from the mtime)."""
    piece_day = _date.fromisoformat(PIECE_DAY0)
    if carried is None:
        return (_date.fromisoformat(SYNTHETIC_DAY0) - piece_day).days
    if carried[0] >= "1000":
        return None
    wrapped = _seconds(carried[1]) - _seconds(first) > WRAP_S
    return (_date.fromisoformat(carried[0]) - piece_day).days + wrapped


def _shift_piece(piece: Handover, days: int) -> None:
    """Move the times a piece dated from ``PIECE_DAY0`` (those from it to the year 1000) by ``days``."""
    since = datetime.fromisoformat(PIECE_DAY0)
    step = timedelta(days=days)

    def moved(value: Any) -> Any:
        if isinstance(value, datetime) and value.tzinfo is None and since <= value and value.year < 1000:
            return value + step
        return value

    for run in piece.runs:
        run.start, run.end = moved(run.start), moved(run.end)
        if run.date_source == "mtime":  # (its stamps were dated from the mtime's stand-in)
            for rows in (run.samples or {}).values():
                rows.map_column("time", moved)
    last = piece.last_dateless
    if last is not None and PIECE_DAY0 <= last[0] < "1000" and last != _PIECE_START:
        day = (_date.fromisoformat(last[0]) + step).isoformat()
        piece.last_dateless = (day, last[1], last[2])
