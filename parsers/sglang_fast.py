"""The fast path of the SGLang parser: whole blocks of ``Decode batch`` / ``Prefill batch`` lines at once.

A busy server's log is almost all stats lines, and the stats lines of one server differ only in their
digits: the same header layout, the same batch prefix, the same keys in the same order. So each line
is reduced to its *shape*, the line with every digit turned into ``0`` (``_zeroed``: numpy over a
whole block), and each shape is judged once, on the first line that has it, by the generic parser's
own rules (``Shapes.judge``). Every rule the generic parser applies to a line treats all ASCII digits alike
(``\\d`` in the header regexes, ``float()``'s grammar, the ``key: value`` split), so every line of a
shape is read the same way: a stats line's values sit at the same offsets, and are read from the
bytes with numpy, for a whole block at once (plain decimals of up to eight bytes exactly, eight
bytes at a time by ``_decimals``; anything else through the generic rules). Where a rule does look
at which digits there are (keys such as ``p99 itl``, the wrappers' "2026-..." detection), the shape
defers to the line (``_field_layout``, ``_MAYBE_WRAPPED``).

Shapes judged *generic* - startup lines, ``server_args=``, NCCL lines, lines with ANSI codes, a
``\\r``, non-ASCII bytes, wrappers (Ray, docker, Slurm), odd stats lines - go through
``SGLangLogParser.feed_all`` in file order, one line at a time, so headers, run splitting and
diagnostics stay the generic parser's own. Lines with no header that cannot matter (a uvicorn
access line of SGLang 0.2-0.3.2, say) only move the run's line range, in bulk; lines whose header
is all the generic parser reads of them (a uvicorn access line of SGLang 0.3.4+, ``[date time]
INFO: ... "POST /generate HTTP/1.1" 200 OK``, one line in twenty of a served benchmark:
``_probe_header``) are headers of the run, counted in bulk with the stats lines around them.
Time-only stamps (``[08:00:00 TP0]``, SGLang 0.2-0.3.2) are read in bulk too, dated all at once
as the generic parser dates them one by one (``_Stamps``: the date of the stamp before, a day
later past midnight). ``tests/parsers/test_sglang_fast.py`` checks that both paths give
identical results, on the fixtures and on generated logs.

The per-byte work of a block - finding its lines, making each one's shape and looking it up,
reading the series' plain decimals, checking the stamps' clocks and order, dating time-only stamps -
is done by a compiled scanner (``_scan.c``: ``Shapes.index``, ``Shapes.series``, ``_compiled_decimals``,
``_unreal``, ``_Stamps.extremes``, ``_Stamps._date``) when the install built it (an optional
extension: without a C compiler, numpy and ``bytes.split`` do it, the reference; both read every
block the same, which the tests check).
``parse_file`` of ``benchmarks/gen.py``'s 400 MB log: 1.45 s of CPU with numpy, 0.66 s with the
scanner (lowest of 5 interleaved rounds on 2 busy cores, load 7); a dict look-up of each line's
shape, one bytes object a line, was most of the difference.

``feed_blocks(parser, log)`` is the entry point; ``parsers.parse_file`` uses it for UTF-8 logs of at
least ``FAST_MIN_BYTES`` (numpy is imported only then), and for smaller ones too once numpy is
imported (``prepare``: ``timeline.build`` imports it when its logs are that big in all, so a
folder of a thousand small logs is read as their lines in one file are). Without numpy it
returns False.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable
from datetime import date as _date
from datetime import datetime, timedelta
from itertools import repeat
from typing import Any, NamedTuple, cast

from timeline.collector import uncollected
from timeline.columns import SampleBatch, SampleRows
from timeline.parsers import framing, values
from timeline.parsers.dates import real_date
from timeline.parsers.framing import LogLines, clean_line
from timeline.parsers.sglang import (
    BATCH_RE,
    PLAIN_HEADER_RE,
    SYNTHETIC_DAY0,
    WRAP_S,
    SGLangLogParser,
    find_message,
    match_header,
    stamp_parts,
    stats_key,
    stats_value,
)
from timeline.parsers.wrappers import NEEDS_NORMALIZING_RE, needs_normalizing, normalize

# The compiled line scanner (_scan.c), built at install when there is a C compiler; else numpy alone.
SCANNER_INTERFACE = 5  # _scan.c's INTERFACE: raise both with any change to its functions
try:
    from timeline.parsers import _scan
except ImportError:
    _scan = None  # type: ignore[assignment]
if getattr(_scan, "INTERFACE", None) != SCANNER_INTERFACE:
    # Built from another _scan.c (an editable install keeps the module it built until it is
    # installed again): its functions would fail at their first call or read blocks otherwise.
    _scan = None  # type: ignore[assignment]
COMPILED_SCANNER = _scan is not None  # (benchmarks/run.py says which one it measured)

__all__ = ["COMPILED_SCANNER", "FAST_MIN_BYTES", "dispatch", "feed_blocks", "hand_back_memory", "prepare"]

FAST_MIN_BYTES = 64 << 10  # smaller files are read line by line, unless numpy is imported already:
LOADED_MIN_BYTES = 0  # then files of this size or more take the block path too (``prepare``)
MAX_SHAPES = 1 << 16  # shapes remembered (all are forgotten when there are more)
WORD = 8  # plain decimals this wide or narrower are read as one 64-bit word; the others by values.number
# Fewer stats lines than this in a row (between lines the generic parser reads) have their samples
# read line by line: reading columns costs about a millisecond however few the lines.
SAMPLES_AT_ONCE = 64
SERIES = ("gen", "accept", "input")  # the values read from stats lines (their spans' names)
_SERIES_COLUMNS = ("int64", "int64", "int64", "float64", "bool")  # Shapes.series: rows, at, width, numbers, plain
_GEN = "gen throughput (token/s)"
_ACCEPT = "accept len"
_INPUT = "input throughput (token/s)"
# A line starting with one of these may have a header (or is a bare stats / server_args line, or
# whitespace): it is a template line or goes through the generic parser. Any other line, with no
# ANSI code, no \r, no non-ASCII byte and no NCCL text, has no header and only moves the line range.
_MAYBE_MEANINGFUL_FIRST = b"[(0123456789 \t\x0b\x0c\x1c\x1d\x1e\x1f\x85DPs"

np: Any = None


def _numpy() -> Any:
    global np
    if np is None:
        try:
            with uncollected():  # numpy's objects live as long as the process (timeline.collector)
                import numpy
        except ImportError:  # pragma: no cover - numpy comes with pandas
            return None
        np = numpy
        _decimal_tables()
        global _NO_LINES, _STAMP_BYTES, _DAY_BYTES
        _NO_LINES = np.zeros(0, np.int64)
        _STAMP_BYTES = np.arange(19)
        _DAY_BYTES = np.arange(10)
    return np


_SKIP, _TRIVIAL, _STATS, _GENERIC, _HEADER = 0, 1, 2, 3, 4
_WALL_ZERO = datetime.min
_ZERO = bytes.maketrans(b"123456789", b"000000000")
_MAYBE_FIRST = _MAYBE_MEANINGFUL_FIRST.decode("latin-1")


def _judge_sglang(raw: bytes) -> tuple[int, dict[str, Any]]:
    if not raw:
        return _SKIP, {}
    if not raw.isascii() or b"\x1b" in raw:
        return _GENERIC, {}
    text = raw.decode("ascii")
    if "\r" in text:
        if text.count("\r") != 1 or not text.endswith("\r"):
            return _GENERIC, {}
        text = text[:-1]  # CRLF
        if not text:
            return _SKIP, {}
    if "nccl==" in text or "NCCL version" in text:
        return _GENERIC, {}
    if text[0] not in _MAYBE_FIRST:
        return (_TRIVIAL, {}) if _probe_trivial(text) else (_GENERIC, {})
    spans = _stats_spans(text)
    if spans is None:
        header = _header_spans(text)
        if header is not None and _probe_header(text, header):
            del header["at"]
            return _HEADER, header
        return _GENERIC, {}
    if not _probe_stats(text, spans):
        return _GENERIC, {}
    spans["text"] = text  # the representative line (plain decimals are told from it)
    return _STATS, spans


_ONE_CLOCK_RE = re.compile(r"\d\d:\d\d:\d\d")


def _header_spans(text: str) -> dict[str, Any] | None:
    """Where the message starts, and the date, time, stamp and rank spans, of a stats line with a
    plain ``[date time TAGS] `` header (``date`` None for a time-only one: SGLang 0.2-0.3.2) or
    another logging config's prefix (``find_message``) that starts with a dated stamp, holds no
    other clock reading and has its rank tags side by side."""
    m = PLAIN_HEADER_RE.match(text) if text.startswith("[") else None
    if m is not None:
        if text[m.end() - 2 : m.end()] != "] ":
            return None
        full = match_header(text)
        parts = ("date", "time", "rank")
        if full is None or full.span() != m.span() or full.group(*parts) != m.group(*parts):
            return None
        dated = m.group("date") is not None
        return {
            "at": m.end(),
            "date": m.span("date") if dated else None,
            "time": m.span("time"),
            "stamp": (m.start("date") if dated else m.start("time"), m.end("time")),
            "rank": m.span("rank"),
        }
    if match_header(text) is not None:
        return None
    found = find_message(text)
    if found is None or found.date is None or found.time is None:
        return None
    start = 1 if text.startswith("[") else 0
    clock = text.find(found.time, start)
    if (
        not text.startswith(found.stamp_text, start)
        or len(_ONE_CLOCK_RE.findall(text, 0, found.at)) != 1
        or clock != start + len(found.date) + 1
        or not text.startswith(found.time, clock)  # no zone, the fraction printed whole
    ):
        return None
    first = text.find(found.rank, start) if found.rank else found.at
    if found.rank and (first < 0 or first >= found.at):
        return None
    return {
        "at": found.at,
        "date": (start, start + len(found.date)),
        "time": (clock, clock + len(found.time)),
        "stamp": (start, start + len(found.stamp_text)),
        "rank": (first, first + len(found.rank)),
        "prefixed": True,
    }


def _stats_spans(text: str) -> dict[str, Any] | None:
    """Where the fields of a clean ASCII stats line (``_header_spans``) are."""
    header = _header_spans(text)
    if header is None:
        return None
    end = header.pop("at")
    message = text[end:]
    b = BATCH_RE.match(message)
    if b is None or b.group(2):
        return None
    width = end + b.end()
    body = text[width:]
    pairs = values.split_fields(body)
    if not pairs or any("," in v for _, v in pairs):
        return None
    joined = ", ".join(f"{k}: {v}" for k, v in pairs)
    if not body.startswith(joined) or body[len(joined) :] not in ("", ",", ", "):
        return None
    kind = "decode" if message[0] == "D" else "prefill"
    spans: dict[str, Any] = {
        "kind": kind,
        "width": width,
        "message": end,
        **header,
        "forward": (end + b.start(3), end + b.end(3)) if b.group(3) else None,
        "dp": "DP" in text[slice(*header["rank"])],  # a DP rank's line: its rank series (Segment.rank_value)
    }
    offset = width
    where: dict[str, tuple[int, int]] = {}
    for key, value in pairs:
        offset += len(key) + 2
        where[key] = (offset, len(value))  # the last occurrence wins, as in field_number
        offset += len(value) + 2
    labels = (("gen", _GEN), ("accept", _ACCEPT)) if kind == "decode" else (("input", _INPUT),)
    for name, label in labels:
        if label in where:
            spans[name] = where[label]
    if kind == "decode" and "gen" not in spans:
        spans["no_gen"] = True
    return spans


def _fresh() -> SGLangLogParser:
    return SGLangLogParser("probe")


def _changes(text: str) -> tuple[set[str], SGLangLogParser]:
    """What feeding one line to a fresh parser changes (``SGLangLogParser.state`` names), and the parser."""
    before = _fresh().state()
    probe = _fresh()
    probe.feed(1, text)
    if probe.impossible.count:  # a stamp that is no real date and time tells nothing of the shape's other lines
        raise ValueError("judged again on another line")
    after = probe.state()
    return {k for k in after if after[k] != before.get(k)}, probe


# What a line that only counts as a header of the run may change (the earliest and the latest
# stamp are read in bulk: ``extremes``); a stats line also adds to the series; a time-only stamp
# also dates itself (``SGLangLogParser.dateless_read``); a decode line without a throughput also
# counts itself as such.
_SEGMENT_HEADER = {
    "segment." + name
    for name in ("first_line", "last_line", "first_stamp", "last_stamp", "headers", "headers_since_config")
} | {"segment.low", "segment.high"}
_SEGMENT_STATS = _SEGMENT_HEADER | {
    "segment." + name for name in ("stats", "decode", "accept", "prefill_tp", "ranks", "speakers")
}
_DATELESS = {"_last_dateless", "_dateless_line", "_dateless_first", "segment.date_guess"}
_NO_THROUGHPUT = {"no_throughput_line", "no_throughput_count"}


def _probe_stamp(text: str, spans: dict[str, Any]) -> tuple[str, str, str]:
    """The stamp a fresh parser gives this line: a time-only one is dated from the stand-in first day."""
    date = text[slice(*spans["date"])] if spans["date"] is not None else SYNTHETIC_DAY0
    return date, text[slice(*spans["time"])], text[slice(*spans["stamp"])]


def _allowed(spans: dict[str, Any], changes: set[str]) -> set[str]:
    return changes | _DATELESS if spans["date"] is None else changes


def _probe_header(text: str, spans: dict[str, Any]) -> bool:
    """The generic parser only counts this line as a header of the run, stamped as ``spans``
    say: a uvicorn access line (``[date time] INFO:     ip:port - "POST ..." 200 OK``, which the
    run's messages leave out), say. Such lines are read in bulk with the stats lines; whether
    the line is one only SGLang prints (``Segment.sglang``: uvicorn's under SGLang's format, yes;
    another program's ``[date time] GET /health 200``, no) goes in ``spans["sglang"]``."""
    changed, probe = _changes(text)
    seg = probe.segment
    if not changed <= _allowed(spans, _SEGMENT_HEADER | {"segment.sglang"}) or seg.headers != 1 or seg.stats != 0:
        return False
    spans["sglang"] = seg.sglang
    stamp = _probe_stamp(text, spans)
    return stamp_parts(seg.first_stamp) == stamp and stamp_parts(seg.last_stamp) == stamp


def _probe_trivial(text: str) -> bool:
    """The generic parser does nothing with this line but count it in the run's line range."""
    changed, probe = _changes(text)
    return changed <= {"segment.first_line", "segment.last_line"} and probe.segment.last_line == 1


def _probe_stats(text: str, spans: dict[str, Any]) -> bool:
    """The generic parser reads this line's series and stamp exactly as the fast path would (its
    sample: ``_samples_match``, once samples are kept)."""
    changed, probe = _changes(text)
    seg = probe.segment
    expected: dict[str, list[float]] = {"decode": [], "accept": [], "prefill_tp": []}
    for name, target in (("gen", "decode"), ("accept", "accept"), ("input", "prefill_tp")):
        if name in spans:
            off, width = spans[name]
            number = values.number(text[off : off + width])
            if number is not None:
                expected[target].append(number)
            elif name == "gen":
                spans["no_gen"] = True
    allowed = _allowed(spans, _SEGMENT_STATS | _NO_THROUGHPUT if spans.get("no_gen") else _SEGMENT_STATS)
    if not changed <= allowed or seg.stats != 1 or seg.headers != 1:
        return False
    if any(list(getattr(seg, k)) != v and not _same_floats(list(getattr(seg, k)), v) for k, v in expected.items()):
        return False
    return stamp_parts(seg.first_stamp) == _probe_stamp(text, spans)


def _samples_match(text: str, spans: dict[str, Any]) -> bool:
    """The generic parser's sample of this stats line is the dict the fast path reads (``_sample``)."""
    probe = SGLangLogParser("probe", keep_samples=True)
    probe.feed(1, text)
    rows = cast("dict[str, SampleRows]", probe.segment.samples)[spans["kind"]]  # keep_samples=True
    mine = _sample(probe, text, spans, 1, _probe_stamp(text, spans)[0])
    return len(rows) == 1 and list(rows[0].items()) == list(mine.items())


def _same_floats(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b, strict=False))


def _sample(parser: SGLangLogParser, text: str, spans: dict[str, Any], lineno: int, date: str) -> dict[str, Any]:
    """The sample of a stats line (``date``: its stamp's date, for a time-only one the date it was given)."""
    time = text[slice(*spans["time"])]
    rank = text[slice(*spans["rank"])].strip() or None
    sample: dict[str, Any] = {"time": parser.sample_time(date, time), "line": lineno, "rank": rank}
    if spans["forward"] is not None:
        sample["forward_ct"] = int(text[slice(*spans["forward"])])
    layout = spans.get("fields")
    if layout is None:  # where each field's key and value are: the same in every line of the shape
        layout = spans["fields"] = _field_layout(text, spans["width"])
    sample.update(
        (key or stats_key(text[key_start:key_end]), stats_value(text[start:end]))
        for key, key_start, key_end, start, end in layout
    )
    return sample


def _sample_plan(spans: dict[str, Any]) -> dict[str, tuple[str, Any]] | None:
    """How to read the sample of every line of a shape, column by column: ``{key: (how, where)}``
    in the sample's key order (``_sample``'s). ``how``: ``time`` (the header's date and time
    spans), ``line``, ``rank`` (its span), ``int`` / ``decimal`` (digits, or a plain decimal,
    of at most ``WORD`` bytes: ``where`` is (offset, width, point) for ``_decimals``), ``const``
    (a value without digits, the same in every line: ``where`` is the value), ``value``
    (``values.value`` of each line's text at ``where`` = (start, end)). None for a shape with a
    key holding digits: its lines are read one by one."""
    plan = spans.get("plan", False)
    if plan is not False:
        return plan
    text = spans["text"]
    layout = spans.get("fields")
    if layout is None:
        layout = spans["fields"] = _field_layout(text, spans["width"])
    plan = {"time": ("time", (spans["date"], spans["time"])), "line": ("line", None), "rank": ("rank", spans["rank"])}
    fields = [("forward_ct", *spans["forward"])] if spans["forward"] is not None else []
    fields += [(key, start, end) for key, _, _, start, end in layout]
    for key, start, end in fields:
        if key is None:
            plan = None
            break
        value = text[start:end]
        point = _decimal_point(value)
        if not any(c.isdigit() for c in value):
            plan[key] = ("const", stats_value(value))
        elif point >= 0:  # values.value makes digits an int, digits with a point a float
            plan[key] = ("int" if point == 0 else "decimal", (start, len(value), point))
        else:
            plan[key] = ("value", (start, end))
    spans["plan"] = plan
    return plan


def _decimal_point(value: str) -> int:
    """How ``_decimals`` reads ``value``: -1 not a plain decimal of at most ``WORD`` bytes, 0 digits
    only, ``k + 1`` digits with a point and ``k`` digits after it."""
    if len(value) > WORD or value.count(".") > 1 or not value.replace(".", "").isdigit():
        return -1
    point = value.find(".")
    return 0 if point < 0 else len(value) - point


def _sample_batch(buf: bytes, decimals, first: int, lines, shape_ids, starts, plans, days) -> SampleBatch:
    """``_sample`` of the stats lines ``lines`` (block line numbers, their shapes and starts, and
    their dates' ``days`` from ``_Stamps`` or None), as a ``SampleBatch``: each key's values read
    for all the lines at once (``_sample_column``)."""
    distinct = sorted(plans)
    local = np.searchsorted(distinct, shape_ids)  # each line's shape, as an index in distinct
    shapes = list(dict.fromkeys(tuple(plans[s]) for s in distinct))
    row_shapes = np.array([shapes.index(tuple(plans[s])) for s in distinct])[local].tolist()
    keys = dict.fromkeys(key for s in distinct for key in plans[s])
    lines = lines + first
    return SampleBatch(
        shapes,
        row_shapes,
        {
            key: _sample_column(buf, decimals, lines, starts, local, [plans[s].get(key) for s in distinct], days)
            for key in keys
        },
    )


_NUMERIC = {"int": "int", "decimal": "float"}  # how a value is read -> its kind
_CONST_KINDS = {int: "int", float: "float", bool: "bool"}  # constants that go in numpy arrays


def _sample_column(buf: bytes, decimals, lines, starts, local, specs: list[Any], days) -> tuple[str, Any]:
    """One key's values for every line (``local``: its shape's index in ``specs``, each that
    shape's ``(how, where)`` for the key, or None where it has no such key): ``(kind, values)``,
    kinds as in ``SampleBatch``; ``int``, ``float``, ``bool`` and ``time`` in a numpy array
    (``time``: wall-clock microseconds since ``datetime.min``, as ``SampleRows.extend`` takes
    them), a placeholder where a line has no such key; any other kind in a list."""
    hows = {spec[0] for spec in specs if spec is not None}
    if hows == {"line"}:
        return "int", lines
    kinds = {
        (_NUMERIC.get(how) or _CONST_KINDS.get(where.__class__)) if how in ("int", "decimal", "const") else None
        for how, where in filter(None, specs)
    }
    if len(kinds) == 1 and None not in kinds:  # numbers of one kind: all the lines at once
        kind = cast(str, kinds.pop())  # None is not in kinds
        values = np.zeros(len(starts), np.float64 if kind == "float" else np.int64)
        read = np.array([spec is not None and spec[0] in _NUMERIC for spec in specs])
        if read.any():
            rows = np.flatnonzero(read[local])
            offset, width, point = (
                np.array([spec[1][k] if spec is not None and spec[0] in _NUMERIC else 0 for spec in specs])
                for k in range(3)
            )
            which = local[rows]
            values[rows] = decimals(starts[rows] + offset[which], width[which], point[which])
        for index, spec in enumerate(specs):
            if spec is not None and spec[0] == "const":
                values[local == index] = spec[1]
        return kind, values
    if hows == {"time"} and len({spec for spec in specs if spec is not None}) == 1:
        date, time = next(spec for spec in specs if spec is not None)[1]
        return _walls(buf, starts, date, time, days)
    listed: list[Any] = [None] * len(starts)
    for index, spec in enumerate(specs):
        if spec is None:
            continue
        rows = np.flatnonzero(local == index)
        got = _sample_values(buf, starts[rows], spec, None if days is None else days[rows])
        for row, value in zip(rows.tolist(), got, strict=False):
            listed[row] = value
    return ("text" if hows == {"rank"} else "object"), listed


def _words(buf: bytes) -> Any:
    """The 64-bit little-endian word at every byte offset of ``buf`` (overlapping, unaligned: no
    copy), for ``_read_decimals``; None for a block shorter than a word."""
    return np.ndarray((len(buf) - WORD + 1,), "<u8", buffer=buf, strides=(1,)) if len(buf) >= WORD else None


def _compiled_decimals(buf: bytes, value_at, width, point) -> Any:
    """``_read_decimals`` by the compiled scanner (``_scan.decimals``): the same floats."""
    columns = (np.ascontiguousarray(column, np.int64) for column in (value_at, width, point))
    return np.frombuffer(_scan.decimals(buf, *columns), np.float64)


def _read_decimals(buf: bytes, words, value_at, width, point) -> Any:
    """``_decimals`` of the values at ``value_at``; one within a word of the block's end by ``float``."""
    inside = value_at + WORD <= len(buf)
    if inside.all():
        return _decimals(words[value_at], width, point)
    numbers = np.zeros(len(value_at))
    if inside.any():
        numbers[inside] = _decimals(words[value_at[inside]], width[inside], point[inside])
    for j in np.flatnonzero(~inside).tolist():
        numbers[j] = float(buf[int(value_at[j]) : int(value_at[j] + width[j])])
    return numbers


def _sample_values(buf: bytes, starts, spec: tuple[str, Any], days) -> list[Any]:
    """One key's values, as Python objects, for lines of one shape (their starts in ``buf``, their dates' ``days``)."""
    how, where = spec
    if how == "const":
        return [where] * len(starts)
    if how == "time":
        kind, walls = _walls(buf, starts, where[0], where[1], days)
        return [_WALL_ZERO + timedelta(microseconds=w) for w in walls.tolist()] if kind == "time" else walls
    if how in _NUMERIC:
        offset, width, _ = where
        where = (offset, offset + width)
    texts = [buf[s + where[0] : s + where[1]].decode("ascii") for s in starts.tolist()]
    if how == "rank":
        return [text.strip() or None for text in texts]
    return [stats_value(text) for text in texts]


def _walls(buf: bytes, at, date: tuple[int, int] | None, time: tuple[int, int], given_days) -> tuple[str, Any]:
    """``_stamp`` of the header of lines starting at ``at``, as wall-clock microseconds since
    ``datetime.min`` (``time``), all at once; a list of datetimes and None (an impossible date or
    time) if there is one. ``date`` None: time-only stamps, on ``given_days`` (``_Stamps``)."""
    a = np.frombuffer(buf, np.uint8)

    def digits(offset: int, width: int) -> Any:
        value = np.zeros(len(at), np.int64)
        for k in range(width):
            value = value * 10 + (a[at + offset + k].astype(np.int64) - 48)
        return value

    hour, minute, second = digits(time[0], 2), digits(time[0] + 3, 2), digits(time[0] + 6, 2)
    fraction = time[1] - time[0] - 9  # digits after the point (none: -1)
    micro = digits(time[0] + 9, fraction) * 10 ** (6 - fraction) if fraction > 0 else 0
    valid = (hour < 24) & (minute < 60) & (second < 60)
    if date is None:
        days = given_days
    else:
        codes = digits(date[0], 4) * 10000 + digits(date[0] + 5, 2) * 100 + digits(date[0] + 8, 2)
        days = _day_numbers(codes)
        valid &= days >= 0
    walls = ((days * 86400 + hour * 3600 + minute * 60 + second) * 1_000_000) + micro
    if valid.all():
        return "time", walls
    return "object", [
        _WALL_ZERO + timedelta(microseconds=w) if ok else None
        for w, ok in zip(walls.tolist(), valid.tolist(), strict=False)
    ]


def _field_layout(text: str, width: int) -> list[tuple[str | None, int, int, int, int]]:
    """``stats_fields``' reading of a stats line as (key, key start, key end, value start, value
    end) in the line, values stripped. Only digits differ between the lines of a shape, and the
    splitting, the stripping and the typing (``values.value``) treat all digits alike, so one
    layout reads every line of it; a key with digits in it (``p99 itl``) is None: read from
    each line."""
    body = text[width:]
    layout = []
    for key_start, key_end, start, end in values.field_spans(body):
        value = body[start:end]
        start += len(value) - len(value.lstrip())
        end -= len(value) - len(value.rstrip())
        raw_key = body[key_start:key_end]
        key = None if any(c.isdigit() for c in raw_key) else stats_key(raw_key)
        layout.append((key, width + key_start, width + key_end, width + start, width + max(start, end)))
    return layout


def _zeroed(buf: bytes) -> bytes:
    """``buf.translate(_ZERO)`` (every digit made ``0``), several times as fast on big blocks:
    a digit 1-9 (0x31-0x39) keeps its high nibble (0x30), every other byte all its bits."""
    if len(buf) < 4096:
        return buf.translate(_ZERO)
    a = np.frombuffer(buf, np.uint8)
    mask = np.subtract(a, 0x31, dtype=np.uint8)  # 0-8 for 1-9, the others wrap around to 9 and more
    np.greater_equal(mask, 9, out=mask.view(bool))  # 1: not a digit 1-9, 0: one (in place, as bytes)
    mask *= 0xFF
    mask |= 0xF0  # 0xFF: keep the byte; 0xF0: keep its high nibble
    np.bitwise_and(a, mask, out=mask)
    return mask.tobytes()


def _decimals(words, width, point):
    """Plain decimals read from 64-bit little-endian words (each starting at its value's first
    byte; ``width`` bytes of it are the value, ``point`` as in ``decimal_table``), all at once.

    SWAR ("SIMD within a register") digit parsing, after Lemire, "Quickly parsing eight digits"
    (2022): the value is moved to the word's top bytes (zero bytes in front read as leading
    zeros), the point's byte is squeezed out, and three multiply-shift steps fold the eight digit
    bytes into one integer. The mantissa (at most eight digits) and the power of ten are exact
    doubles, so the quotient is correctly rounded: ``float(text)`` exactly."""
    u64 = np.uint64
    x = (words & u64(0x0F0F0F0F0F0F0F0F)) << ((u64(WORD) - width.astype(u64)) * u64(8))
    below, above = _POINT_MASKS[0][point], _POINT_MASKS[1][point]
    x = (x & above) | ((x & below) << u64(8))  # the bytes after the point move up over it
    x = x * u64(10) + (x >> u64(8))
    x = (
        (x & u64(0x000000FF000000FF)) * u64(100 + (1000000 << 32))
        + ((x >> u64(16)) & u64(0x000000FF000000FF)) * u64(1 + (10000 << 32))
    ) >> u64(32)
    return x / _POW10[np.maximum(point - 1, 0)]


_POINT_MASKS: Any = None
_POW10: Any = None


def _decimal_tables() -> None:
    """``_decimals``' masks by ``point`` code: the bytes below the point's byte (which sits at byte
    ``WORD - code`` once the value fills the word's top), and those above it; no point: all above."""
    global _POINT_MASKS, _POW10
    full = (1 << 64) - 1
    below = [0] + [(1 << (8 * (WORD - code))) - 1 for code in range(1, WORD + 1)]
    above = [full] + [full & ~((1 << (8 * (WORD - code + 1))) - 1) for code in range(1, WORD + 1)]
    _POINT_MASKS = (np.array(below, np.uint64), np.array(above, np.uint64))
    _POW10 = np.array([10.0**k for k in range(WORD + 1)])


class Shapes:
    """What the block reader learned of line shapes: judged by content alone, so one ``Shapes``
    serves every file a process reads (``parsers.reading`` keeps one). ``others`` are the other
    log families' detectors (``search(text)``): a shape of which a line would interest one of them
    sends the file the generic way. ``block_stats_lines`` and ``block_header_lines`` count the
    stats lines and the header-only lines read on the block path, for tests and benchmarks to see
    that they were."""

    def __init__(self, others: tuple[Any, ...] = (), compiled: bool = True) -> None:
        self.others = others
        self.compiled = compiled and _scan is not None
        self.block_stats_lines = 0
        self.block_header_lines = 0
        self.forget()

    def forget(self) -> None:
        """Forget every shape (they are judged again, on their next line)."""
        self.shapes: dict[bytes, int] = {}  # shape (digits zeroed) -> number
        self.index = _scan.ShapeIndex() if self.compiled else None  # the same, for the compiled scanner
        self.kinds: list[int] = []
        self.spans: list[dict[str, Any]] = []
        self.tables: _ShapeTable | None = None
        self.shape_lengths: Any = None
        self.decimals: Any = None  # decimal_table()

    def judge(self, raw: bytes) -> tuple[int, dict[str, Any]]:
        """How to read every line of this line's shape: ``(_SKIP|_TRIVIAL|_STATS|_HEADER|_GENERIC, spans)``.

        ``spans["other"]`` is set when another log family's parser would look at the line: then
        the block reader hands the file back. A line the wrapper normaliser may change (for some
        digits) is read the generic way, normalised; a stats line after a logging prefix
        (``spans["prefixed"]``) only when its message may be changed: the normaliser leaves the
        rest of such a line alone whatever its digits (``wrappers.as_sglang_bracket``)."""
        try:
            kind, spans = _judge_sglang(raw)
        except Exception:  # noqa: BLE001 - a probe that fails: the generic parser meets the line itself
            kind, spans = _GENERIC, {"unsure": True}
        if kind == _SKIP:
            return kind, spans
        text = raw.decode("utf-8", "replace")
        if self.for_others(text):
            return kind, dict(spans, other=True)
        if kind == _STATS and spans.get("prefixed"):
            wrapped = _maybe_wrapped(text[spans["message"] :])
        else:
            wrapped = _maybe_wrapped(text)
        if wrapped:
            return _GENERIC, {"unsure": spans.get("unsure", False)}
        return kind, spans

    def for_others(self, line: str) -> bool:
        """Would another family's detection find this line, as iterating gives it (cleaned, split at \\r)?"""
        if not self.others:
            return False
        text = "\n".join(segment for _, segment in clean_line(1, line))
        return any(r.search(text) for r in self.others)

    def shape(self, zeroed: bytes, raw: bytes) -> int:
        """Judge a new shape on one of its lines; returns its number."""
        kind, spans = self.judge(raw)
        spans = dict(spans, length=len(zeroed))
        number = len(self.kinds)
        self.kinds.append(kind)
        self.spans.append(spans)
        if not spans.get("unsure"):
            self.shapes[zeroed] = number
            if self.index is not None:
                self.index.add(zeroed, number)
        return number

    def series(self, buf: bytes, starts, ids) -> list[tuple[Any, Any, Any, Any, Any]]:
        """Each of ``SERIES`` in the lines of a block (their starts, their shape numbers): the lines
        with such a value, where it is and its width, its number when it is a plain decimal
        (``decimal_table``; 0 for the others), and which are. By the compiled scanner
        (``_scan.series``, all of them in one pass) when this book uses it, else by numpy, a series
        at a time: the same arrays."""
        points = self.decimal_table()
        table = self.table()
        if self.compiled:
            offsets, widths, points = (
                np.ascontiguousarray(column, np.int64) for column in (table.offset, table.width, points)
            )
            return [
                tuple(np.frombuffer(column, kind) for column, kind in zip(columns, _SERIES_COLUMNS, strict=True))
                for columns in _scan.series(buf, ids, starts, offsets, widths, points, len(SERIES))
            ]
        return [self._series_by_numpy(buf, starts, ids, table, points[k], k) for k in range(len(SERIES))]

    @staticmethod
    def _series_by_numpy(buf: bytes, starts, ids, table: _ShapeTable, points, k: int) -> tuple[Any, Any, Any, Any, Any]:
        """The ``k``-th of ``SERIES`` by numpy (its decimal point codes ``points``): the reference
        that ``_scan.series`` is tested against."""
        width = table.width[k][ids]  # the value's width, -1 where none
        rows = np.flatnonzero(width >= 0)
        if not len(rows):
            return rows, rows, rows, np.zeros(0), np.zeros(0, bool)
        shape_ids = ids[rows]
        at = starts[rows] + table.offset[k][shape_ids]
        width = width[rows]
        point = points[shape_ids]
        plain = point >= 0
        if plain.all():
            return rows, at, width, _read_decimals(buf, _words(buf), at, width, point), plain
        numbers = np.zeros(len(rows))
        if plain.any():
            numbers[plain] = _read_decimals(buf, _words(buf), at[plain], width[plain], point[plain])
        return rows, at, width, numbers, plain

    def classify(self, ids) -> tuple[Any, Any, Any, Any]:
        """Each line's kind (its shape's: ``_STATS``...) and the lines, ascending, of a stats or a
        header line, of a stats line, and of a generic one, for the lines of a block (their shape
        numbers). By the compiled scanner (``_scan.classify``, one pass) when this book uses it,
        else by numpy (``_kind_rows``): the same arrays."""
        kinds = self.table().kind
        if self.compiled:
            code, stamped, stats, generic = _scan.classify(ids, kinds, _STATS, _HEADER, _GENERIC)
            return tuple(np.frombuffer(column, np.int64) for column in (code, stamped, stats, generic))
        code = kinds[ids]
        return (code, *_kind_rows(code))

    def decimals_of(self, buf: bytes) -> Callable[[Any, Any, Any], Any]:
        """How to read the plain decimals of the block ``buf`` (``read(value_at, width, point)``):
        by the compiled scanner when this book uses it, else by numpy (``_read_decimals``)."""
        if self.compiled:
            return functools.partial(_compiled_decimals, buf)
        return functools.partial(_read_decimals, buf, _words(buf))

    def check_samples(self) -> None:
        """Judge the samples of the stats shapes judged without them (``_samples_match``), before
        a parser that keeps samples reads their lines: one that keeps none never reads them, and
        their probe was 60% of judging a shape (147 shapes, 23 ms, on benchmarks/gen.py's log). A
        shape whose sample the fast path would read otherwise becomes generic: its lines are
        read line by line from then on."""
        table = self.table()
        for number in np.flatnonzero(table.unchecked).tolist():
            spans = self.spans[number]
            try:
                same = _samples_match(spans["text"], spans)
            except Exception:  # noqa: BLE001 - a probe that fails: the generic parser reads the lines
                same = False
            if not same:
                self.kinds[number] = _GENERIC
                table.kind[number] = _GENERIC
            table.unchecked[number] = False

    def lengths(self) -> Any:
        """Each shape's line length (without its newline), by shape number."""
        done = 0 if self.shape_lengths is None else len(self.shape_lengths)
        if self.shape_lengths is None or done != len(self.kinds):  # shapes only get added: measure the new ones
            new = np.array([spans["length"] for spans in self.spans[done:]], np.int64)
            self.shape_lengths = new if self.shape_lengths is None else np.concatenate([self.shape_lengths, new])
        return self.shape_lengths

    def table(self) -> _ShapeTable:
        """What the block needs of every shape, as arrays by shape number (``_ShapeTable``); the
        new shapes' rows added to it (a log of many shapes: not all of them again each block)."""
        done = 0 if self.tables is None else len(self.tables.kind)
        if done != len(self.kinds):
            spans = self.spans[done:]
            where = [[s.get(name, (0, -1)) for s in spans] for name in SERIES]
            new = _ShapeTable(
                np.array(self.kinds[done:], np.int64),
                np.array([[off for off, _ in series] for series in where], np.int64).reshape(len(SERIES), -1),
                np.array([[width for _, width in series] for series in where], np.int64).reshape(len(SERIES), -1),
                np.array([bool(s.get("no_gen")) for s in spans], bool),
                np.array([bool(s.get("other")) for s in spans], bool),
                np.array([bool(s.get("dp")) for s in spans], bool),
                np.array([bool(s.get("sglang")) for s in spans], bool),
                np.array([_date_at(s) for s in spans], np.int64),
                np.array([s["time"][0] if "time" in s else 0 for s in spans], np.int64),
                np.array(self.kinds[done:], np.int64) == _STATS,
            )
            old = self.tables
            self.tables = (
                new
                if old is None
                else _ShapeTable(*(np.concatenate([a, b], axis=-1) for a, b in zip(old, new, strict=False)))
            )
        return cast(_ShapeTable, self.tables)  # set: a block's lines have given the book its shapes

    def decimal_table(self) -> Any:
        """Per series and shape, ``_decimal_point`` of its value (-1: none, or read by
        ``values.number``). A shape fixes where the digits and the point are, so the shape decides."""
        done = 0 if self.decimals is None else self.decimals.shape[1]
        if done == len(self.kinds):
            return self.decimals
        points = np.full((len(SERIES), len(self.kinds)), -1, np.int64)
        if done:  # shapes only ever get added: judge the new ones
            points[:, :done] = self.decimals
        for k, name in enumerate(SERIES):
            for number in range(done, len(self.kinds)):
                spans = self.spans[number]
                where = spans.get(name)
                text = spans.get("text", "")
                if where is None or not text:
                    continue
                points[k, number] = _decimal_point(text[where[0] : where[0] + where[1]])
        self.decimals = points
        return points


class _FastFeeder:
    """Reads one log's blocks into ``parser``, with what ``book`` knows of line shapes."""

    def __init__(self, parser: SGLangLogParser, log: LogLines, book: Shapes) -> None:
        self.parser = parser
        self.log = log
        self.book = book

    # -- generic lines --------------------------------------------------------------------

    def generic(self, lineno: int, raw: bytes | str) -> None:
        """One line the generic way: cleaned, and normalised when the wrappers would change it
        (as ``parsers.reading``'s dispatch does, line by line)."""
        text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
        self.log.line_number = lineno
        for n, segment in clean_line(lineno, text):
            if needs_normalizing(segment):
                self.parser.feed_all((n, record) for record in normalize(segment))
            else:
                self.parser.feed(n, segment)

    # -- one block --------------------------------------------------------------------------

    def block(self, first: int, buf: bytes) -> None:
        book = self.book
        if len(book.kinds) >= MAX_SHAPES:  # forget them all (bounded memory for logs of all-new lines)
            book.forget()
        ids, starts, ends, zeroed = self.lines(buf)
        n = len(ids)
        shapes = book.shapes
        for i, shape in zeroed.items():
            self.log.line_number = first + i
            number = shapes.get(shape)
            if number is None:
                number = book.shape(shape, buf[int(starts[i]) : int(ends[i])])
            ids[i] = number
        self.log.block_lines = n  # byte_blocks need not count them again
        table = self.book.table()
        if self.parser.keep_samples and table.unchecked.any():
            book.check_samples()
        if table.other.any() and table.other[ids].any():
            raise _HandBack
        code, stamped, stats, generic = book.classify(ids)
        unreal = _unreal(buf, stamped, ids, starts, table, book.compiled)
        if len(unreal):  # their stamps are no real date and time: the generic parser tallies them
            code[unreal] = _GENERIC
            stamped, stats, generic = _kind_rows(code)
        values = self.values(buf, starts, ids)
        if table.no_gen.any():  # decode lines without a throughput: counted as such
            without = np.flatnonzero(table.no_gen[ids])
            if len(without):
                rows, numbers, missing = values.get("gen", (_NO_LINES, _NO_LINES, _NO_LINES))
                values["gen"] = (rows, numbers, np.union1d(missing, without))
        lo = 0
        parser = self.parser
        for g in generic.tolist() + [n]:
            while parser.wrapping is not None and lo < n:  # lines that may continue a wrapped server_args
                self.generic(first + lo, buf[int(starts[lo]) : int(ends[lo])])
                lo += 1
            if g < lo:
                continue
            if g > lo:
                self.bulk(first, buf, lo, g, code, stamped, stats, ids, starts, ends, values)
            if g < n:
                self.generic(first + g, buf[int(starts[g]) : int(ends[g])])
            lo = g + 1
        self.log.line_number = first + n - 1

    def lines(self, buf: bytes) -> tuple[Any, Any, Any, dict[int, bytes]]:
        """The lines of a block: each one's shape number (-1: a shape not judged yet), start and
        end (its newline's offset), and the shapes of the lines of unknown shape by block line
        number. By the compiled scanner (``Shapes.index``: ``_scan.c``) when there is one, else by
        numpy and ``bytes.split`` (the reference: both give the same). Raises ``_HandBack`` for a
        line too long to be read."""
        book = self.book
        if book.index is not None:
            ids, starts, ends = (np.frombuffer(column, np.int64) for column in book.index.scan(buf))
            zeroed = {i: buf[int(starts[i]) : int(ends[i])].translate(_ZERO) for i in np.flatnonzero(ids < 0).tolist()}
        else:
            lines = _zeroed(buf).split(b"\n")
            lines.pop()  # after the last newline
            n = len(lines)
            ids = np.fromiter(map(book.shapes.get, lines, repeat(-1)), np.int64, n)
            zeroed = {i: lines[i] for i in np.flatnonzero(ids < 0).tolist()}
            known = book.lengths()  # line lengths: a known shape's own, the others' measured
            ends = known[ids] if len(known) else np.zeros(n, np.int64)
            for i, shape in zeroed.items():
                ends[i] = len(shape)
            ends += 1
            np.cumsum(ends, out=ends)
            ends -= 1
            starts = np.empty(n, np.int64)
            starts[:1] = 0
            starts[1:] = ends[:-1] + 1
        for shape in zeroed.values():
            if len(shape) > framing.MAX_LINE_CHARS and len(shape.decode("utf-8", "replace")) > framing.MAX_LINE_CHARS:
                raise _HandBack  # a line not to be read: the line-by-line reader leaves it out
        return ids, starts, ends, zeroed

    def values(self, buf, starts, ids) -> dict[str, tuple[Any, Any, Any]]:
        """``{series: (lines with a number, their numbers, lines whose value is no number)}`` for
        the lines of a block (their shape numbers ``ids``; line numbers from 0, ascending):
        plain decimals of up to ``WORD`` bytes by ``Shapes.series``, the other values by ``values.number``."""
        out = {}
        for name, (rows, vs, width, numbers, plain) in zip(SERIES, self.book.series(buf, starts, ids), strict=True):
            if not len(rows):
                continue
            if plain.all():
                out[name] = (rows, numbers, _NO_LINES)
                continue
            numbers = numbers.copy()
            found = plain.copy()
            for j in np.flatnonzero(~plain).tolist():
                value = values.number(buf[int(vs[j]) : int(vs[j] + width[j])].decode("ascii", "replace"))
                if value is not None:
                    numbers[j] = value
                    found[j] = True
            out[name] = (rows[found], numbers[found], rows[~found])
        return out

    # -- a run of stats lines and header-less lines ------------------------------------------

    def bulk(self, first, buf, lo, hi, code, stamped, stats, ids, starts, ends, values) -> None:
        """Lines ``lo`` to ``hi`` (block line numbers) with no generic one among them, at once:
        ``stamped`` and ``stats`` are the block's stats and header lines and its stats lines."""
        sub = code[lo:hi]
        seen = np.flatnonzero(sub)
        if not len(seen):
            return
        parser = self.parser
        seg = parser.segment
        stamped = stamped[slice(*stamped.searchsorted((lo, hi)).tolist())]
        stamps = _Stamps(self, buf, stamped, ids, starts) if len(stamped) else None
        if stamps is not None and not stamps.datable:
            for i in (lo + seen).tolist():
                self.generic(first + i, buf[int(starts[i]) : int(ends[i])])
            return
        self.log.line_number = first + lo + int(seen[0])
        seg.cover(first + lo + int(seen[0]), first + lo + int(seen[-1]))
        if stamps is None:
            return
        rows = stats[slice(*stats.searchsorted((lo, hi)).tolist())]
        count = len(rows)
        first_stamp = stamps.stamp(0) if seg.first_stamp is None else None
        seg.count_stats(count, first_stamp, stamps.stamp(len(stamped) - 1))
        stamps.extremes()
        stamps.date_time_only(first)
        headers = len(stamped) - count  # header-only lines: headers of the run, as the generic parser counts them
        seg.headers += headers
        seg.headers_since_config += headers
        self.book.block_header_lines += headers
        if headers and not seg.sglang and self.book.table().sglang[ids[stamped]].any():
            seg.sglang = True  # an SGLang launch's lines, not another program's log
        if not count:
            return
        self.book.block_stats_lines += count
        dp_shapes = self.book.table().dp
        for name, target in (("gen", seg.decode), ("accept", seg.accept), ("input", seg.prefill_tp)):
            got = values.get(name)
            if got is None:
                continue
            rows_with, numbers, missing = got
            a, b = rows_with.searchsorted((lo, hi)).tolist()
            if b > a:
                target.frombytes(numbers[a:b].tobytes())
                if name == "gen" and dp_shapes.any():  # a shape of a DP rank's lines: which lines
                    dp = dp_shapes[ids[rows_with[a:b]]]
                    if dp.any():
                        self.rank_values(buf, rows_with[a:b][dp], numbers[a:b][dp], ids, starts)
            if name == "gen" and len(missing):
                a, b = missing.searchsorted((lo, hi)).tolist()
                if b > a:
                    parser.missing_throughput(first + int(missing[a]), b - a)
        if seg.samples is not None:
            days = None if stamps.days is None else stamps.days[np.searchsorted(stamped, rows)]
            self.samples(buf, first, rows, ids, starts, ends, days)

    def rank_values(self, buf: bytes, rows, numbers, ids, starts) -> None:
        """The decode throughputs of DP ranks' lines (block line numbers ``rows``), each to its
        rank's series, as the generic parser adds them (``Segment.rank_value``)."""
        seg = self.parser.segment
        spans = self.book.spans
        for i, value in zip(rows.tolist(), numbers.tolist(), strict=True):
            r0, r1 = spans[int(ids[i])]["rank"]
            s = int(starts[i])
            seg.rank_value(buf[s + r0 : s + r1].decode("ascii").strip(), value)

    def samples(self, buf: bytes, first: int, rows, ids, starts, ends, days) -> None:
        """The samples of a block's stats lines ``rows`` (block line numbers, ascending), a column
        at a time per shape (``_sample_plan``); a shape without a plan: line by line (``_sample``).
        ``days``: each line's date as days since ``datetime.min`` (``_Stamps``), None when all are dated."""
        parser = self.parser
        shape_ids = ids[rows]
        distinct = np.unique(shape_ids).tolist()
        decode = np.array([self.book.spans[s]["kind"] == "decode" for s in distinct])[
            np.searchsorted(distinct, shape_ids)
        ]
        for kind, mask in (("decode", decode), ("prefill", ~decode)):
            of_kind = rows[mask]
            if not len(of_kind):
                continue
            kind_days = None if days is None else days[mask]
            target = cast("dict[str, SampleRows]", parser.segment.samples)[kind]  # bulk() checked
            shape_ids = ids[of_kind]
            distinct = np.unique(shape_ids).tolist()
            plans = {s: _sample_plan(self.book.spans[s]) for s in distinct}
            if len(of_kind) < SAMPLES_AT_ONCE or any(plan is None for plan in plans.values()):
                for j, i in enumerate(of_kind.tolist()):
                    spans = self.book.spans[int(ids[i])]
                    text = buf[int(starts[i]) : int(ends[i])].decode("ascii").rstrip("\r")
                    # (with days, a dated line's day is its own date's)
                    date = text[slice(*spans["date"])] if kind_days is None else _day_text(int(kind_days[j]))
                    target.append(_sample(parser, text, spans, first + i, date))
                continue
            read = self.book.decimals_of(buf)
            target.extend(_sample_batch(buf, read, first, of_kind, shape_ids, starts[of_kind], plans, kind_days))


class _Stamps:
    """The stamps of the stamped lines (block line numbers ``rows``) of a stretch read in bulk,
    dated as the generic parser dates them (``SGLangLogParser._dateless_stamp``), all at once: a
    dated header by its own date; a time-only one (SGLang 0.2-0.3.2) by the date of the stamp
    before it, a day later when its time went back more than ``WRAP_S``. ``days``: each line's
    date as days since ``datetime.min``, None when all the stamps are dated. Not ``datable``
    when a date would not carry over as a day (an impossible date before a time-only stamp, the
    last day of the calendar): the stretch is then read line by line."""

    def __init__(self, feeder: _FastFeeder, buf: bytes, rows, ids, starts) -> None:
        self.feeder, self.buf, self.rows, self.ids, self.starts = feeder, buf, rows, ids, starts
        table = feeder.book.table()
        self.days: Any = None
        self.datable = True
        # every stamp dated (the common case): the earliest and the latest found at once, by the
        # compiled scanner (_scan.extremes; None: a time-only stamp among them)
        self.extreme = _scan.extremes(buf, rows, ids, starts, table.date) if feeder.book.compiled else None
        if self.extreme is not None:
            return
        shapes = ids[rows]
        self.date_at = table.date[shapes]
        self.time_only = self.date_at < 0
        if self.time_only.any():
            self._date(starts[rows] + table.clock[shapes])

    def _date(self, clock) -> None:
        """``days`` and ``clock_key`` of the stamps whose "HH:MM:SS" are at ``clock``: by the compiled
        scanner (``_scan.dates``) when the book uses it, else by numpy, the reference: the same."""
        previous = self.feeder.parser.previous_stamp()
        if previous is None:  # no date yet: days counted from the stand-in first day
            base, before = _date.fromisoformat(SYNTHETIC_DAY0).toordinal() - 1, None
        else:
            date, time, _ = stamp_parts(previous)
            day, seconds = _day_number(date), _clock_seconds(time)
            if day is None or seconds is None:
                self.datable = False
                return
            base, before = day, seconds
        if self.feeder.book.compiled:
            dates = np.where(self.time_only, -1, self.starts[self.rows] + self.date_at)
            got = _scan.dates(self.buf, clock, dates, base, -1 if before is None else before, WRAP_S, _LAST_DAY)
            if got is None:
                self.datable = False
                return
            self.days, self.clock_key = (np.frombuffer(column, np.int64) for column in got)
            return
        a = np.frombuffer(self.buf, np.uint8)
        hour, minute, second = (_two_digits(a, clock + k) for k in (0, 3, 6))
        self.clock_key = hour * 10000 + minute * 100 + second  # compares as "HH:MM:SS" does
        seconds = hour * 3600 + minute * 60 + second
        n = len(self.rows)
        known = ~self.time_only
        days = np.zeros(n, np.int64)
        if known.any():
            at = self.starts[self.rows[known]] + self.date_at[known]
            codes = _four_digits(a, at) * 10000 + _two_digits(a, at + 5) * 100 + _two_digits(a, at + 8)
            days[known] = _day_numbers(codes)
        if (days < 0).any():
            self.datable = False
            return
        earlier = np.empty(n, np.int64)
        earlier[0] = seconds[0] if before is None else before
        earlier[1:] = seconds[:-1]
        wraps = np.cumsum(self.time_only & (earlier - seconds > WRAP_S))  # midnights, so far
        reset = np.maximum.accumulate(np.where(known, np.arange(n), -1))  # the last dated line
        since = np.maximum(reset, 0)
        days = np.where(known, days, np.where(reset >= 0, days[since] - wraps[since], base) + wraps)
        if days.max() > _LAST_DAY:
            self.datable = False
            return
        self.days = days

    def stamp(self, k: int) -> tuple[str, str, str]:
        """The stamp of the ``k``-th line, as the generic parser keeps it: (date, time, its text)."""
        i = int(self.rows[k])
        spans = self.feeder.book.spans[int(self.ids[i])]
        s = int(self.starts[i])
        buf = self.buf
        time = buf[s + spans["time"][0] : s + spans["time"][1]].decode("ascii")
        if spans["date"] is None:
            return (_day_text(int(self.days[k])), time, time)
        date = buf[s + spans["date"][0] : s + spans["date"][1]].decode("ascii")
        return (date, time, buf[s + spans["stamp"][0] : s + spans["stamp"][1]].decode("ascii"))

    def extremes(self) -> None:
        """The earliest and the latest stamp (``Segment.see``, all at once): with time-only stamps,
        by day and time numbers; dated ones by their ``YYYY-MM-DD HH:MM:SS`` bytes compared as
        strings (``_scan.extremes``, or numpy: the first of the least, the last of the greatest)."""
        seg = self.feeder.parser.segment
        if self.extreme is not None:
            picked = self.extreme
        elif self.days is not None:
            keys = self.days * 1_000_000 + self.clock_key
            picked = (int(np.argmin(keys)), len(keys) - 1 - int(np.argmax(keys[::-1])))
        else:
            picked = self._dated_extremes()
        for k in picked:
            stamp = self.stamp(k)
            seg.see_key((stamp[0], stamp[1][:8]), stamp)

    def _dated_extremes(self) -> tuple[int, int]:
        """``_scan.extremes`` by numpy: the first and the last stamp when they are in order (the
        common case: ``in_order``), else the first of the least and the last of the greatest."""
        buf, rows = self.buf, self.rows
        at = self.starts[rows] + self.date_at
        if len(rows) > 1 and self.in_order(at):
            return 0, len(rows) - 1
        keys = np.frombuffer(buf, np.uint8)[at[:, None] + _STAMP_BYTES].view("S19").ravel()
        return int(np.argmin(keys)), len(keys) - 1 - int(np.argmax(keys[::-1]))

    def in_order(self, at) -> bool:
        """Are the dated stamps at ``at`` (the offsets of their "YYYY-MM-DD HH:MM:SS") in order?
        "YYYY-MM-", "YY-MM-DD" and "HH:MM:SS" as big-endian words compare as text (the first for
        the century: "2000-01-01" comes after "1999-12-31")."""
        words = _words(self.buf)
        if words is None:
            return False
        head, day, clock = (words[at + offset].byteswap() for offset in (0, 2, 11))
        same = head[1:] == head[:-1]
        later = (head[1:] > head[:-1]) | (same & (day[1:] > day[:-1]))
        later |= same & (day[1:] == day[:-1]) & (clock[1:] >= clock[:-1])
        return bool(later.all())

    def date_time_only(self, first: int) -> None:
        """Tell the parser of the time-only stamps read (``SGLangLogParser.dateless_read``)."""
        if self.days is None:
            return
        time_only = np.flatnonzero(self.time_only)
        guessed = time_only[self.days[time_only] < _YEAR_1000]  # dates to come from the file's mtime
        self.feeder.parser.dateless_read(
            self.stamp(int(time_only[-1])),
            first + int(self.rows[guessed[0]]) if len(guessed) else None,
            self.stamp(int(guessed[0]))[1] if len(guessed) else None,
        )


def _unreal(buf: bytes, rows, ids, starts, table: _ShapeTable, compiled: bool) -> Any:
    """Which of the stamped lines ``rows`` (block line numbers) have a stamp that is no real date
    and time (``dates.real_clock``, ``dates.real_date``), all at once: the clocks by their digits'
    bytes, the dates by each distinct one (a block has a day or two). ``compiled``: the clocks,
    and whether the block has one day, by the compiled scanner (``_scan.stamps``)."""
    if not len(rows):
        return rows
    if compiled:
        bad, first, one_day = _scan.stamps(buf, rows, ids, starts, table.clock, table.date)
        if first < 0 or (one_day and real_date(buf[first : first + 10].decode("ascii"))):
            return rows[np.frombuffer(bad, bool)]
        # dates of several days, or an impossible one: numpy's reading below tells which lines
    a = np.frombuffer(buf, np.uint8)
    shapes = ids[rows]
    clock = starts[rows] + table.clock[shapes]
    hour = a[clock]  # the bytes of "HH:MM:SS": under "24", "6", "6"
    ok = ((hour < 0x32) | ((hour == 0x32) & (a[clock + 1] < 0x34))) & (a[clock + 3] < 0x36) & (a[clock + 6] < 0x36)
    dated = np.flatnonzero(table.date[shapes] >= 0)
    if len(dated):
        at = starts[rows[dated]] + table.date[shapes[dated]]
        words = _words(buf)  # "YYYY-MM-" and "YY-MM-DD" as words: one day in the block (the common case)?
        head, tail = words[at], words[at + 2]
        if ((head == head[0]) & (tail == tail[0])).all():
            if not real_date(buf[int(at[0]) : int(at[0]) + 10].decode("ascii")):
                ok[dated] = False
        else:
            days = a[at[:, None] + _DAY_BYTES].view("S10").ravel()
            for day in _distinct(days):
                if not real_date(day.decode("ascii")):
                    ok[dated[days == day]] = False
    return rows[~ok]


def _kind_rows(code) -> tuple[Any, Any, Any]:
    """The lines of a stats or a header line, of a stats line, and of a generic one, by their kinds."""
    stats = code == _STATS
    return np.flatnonzero(stats | (code == _HEADER)), np.flatnonzero(stats), np.flatnonzero(code == _GENERIC)


def _two_digits(a, at) -> Any:
    return (a[at].astype(np.int64) - 48) * 10 + (a[at + 1].astype(np.int64) - 48)


def _four_digits(a, at) -> Any:
    return _two_digits(a, at) * 100 + _two_digits(a, at + 2)


def _day_numbers(codes) -> Any:
    """Days since ``datetime.min`` of dates coded ``YYYYMMDD`` (-1: no real date); a block has a day or two."""
    days = np.full(len(codes), -1, np.int64)
    for code in _distinct(codes):
        with contextlib.suppress(ValueError):
            days[codes == code] = _date(code // 10000, code // 100 % 100, code % 100).toordinal() - 1
    return days


def _distinct(values) -> list[Any]:
    """The distinct values of an array of a day or two (a block's dates), as Python objects: the
    first of each stretch of equal ones, in no set order. Not ``numpy.unique``, which in numpy 2.x
    imports ``numpy.ma`` (``numpy/lib/_arraysetops_impl.py``: ``np.ma.is_masked``), 8 to 26 ms of
    each worker's first blocks."""
    if not len(values):
        return []
    firsts = np.flatnonzero(values[1:] != values[:-1]) + 1
    return list(dict.fromkeys(values[np.concatenate(([0], firsts))].tolist()))


def _day_number(date: str | None) -> int | None:
    try:
        return _date.fromisoformat(date or "").toordinal() - 1
    except ValueError:
        return None


def _clock_seconds(time: str) -> int | None:
    try:
        return int(time[0:2]) * 3600 + int(time[3:5]) * 60 + int(time[6:8])
    except ValueError:
        return None


def _day_text(day: int) -> str:
    return _date.fromordinal(day + 1).isoformat()


_LAST_DAY = _date.max.toordinal() - 1
_YEAR_1000 = _date(1000, 1, 1).toordinal() - 1  # a date before it was counted from the stand-in first day

_NO_LINES: Any = None  # an empty array of line numbers (set with numpy)
_STAMP_BYTES: Any = None  # 0..18: the bytes of "YYYY-MM-DD HH:MM:SS" from the date's start (set with numpy)
_DAY_BYTES: Any = None  # 0..9: those of "YYYY-MM-DD"


class _ShapeTable(NamedTuple):
    """By shape number: its kind (``_SKIP``...), per series (``SERIES``) the offset and width of
    its value in the line (width -1: none), whether a decode line has no throughput,
    whether another log family's parser would look at it, whether its rank tags name a DP rank,
    whether it is a header line only SGLang prints (``Segment.sglang``), where its stamp's date
    starts (-1: a time-only stamp), where its time starts, and whether it is a stats line's whose
    sample is not judged yet (``Shapes.check_samples``)."""

    kind: Any
    offset: Any
    width: Any
    no_gen: Any
    other: Any
    dp: Any
    sglang: Any
    date: Any
    clock: Any
    unchecked: Any


def _date_at(spans: dict[str, Any]) -> int:
    date = spans.get("date", (0, 0))
    return -1 if date is None else date[0]


class _HandBack(Exception):
    """Lines for another log family: the file is read again the generic way."""


# The other families' detectors (parsers.reading passes them) use \\d and literals only, so a shape
# decides; the wrappers' (wrappers.needs_normalizing) also looks at which digits there are (a line
# starting "2", "[20", a real month and time), so _MAYBE_WRAPPED, which does not, flags any shape
# of which some line might be a wrapped one (a "1999-..." Python-logging line, say).
_MAYBE_WRAPPED = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[\s,.]"  # Python logging, whatever the year
    r"|.\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"  # an SGLang stamp after the line's start, whatever the date
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d "  # a vLLM stamp, whatever the date
    r"|.\[\d\d:\d\d:\d\d(?: [A-Z_]+\d+)+\] "  # a time-only stamp after the line's start
)


def _maybe_wrapped(line: str) -> bool:
    """Might the wrapper normaliser change this line, or a line of its shape (other digits)?"""
    segments = [segment for _, segment in clean_line(1, line)]
    return NEEDS_NORMALIZING_RE.search("\n".join(segments)) is not None or any(
        _MAYBE_WRAPPED.search(segment) for segment in segments
    )


_MALLOC_TUNED = False
_TUNED_LIBC: Any = None  # the C library whose malloc _tune_malloc tuned


def _tune_malloc() -> None:
    """Keep freed memory for the next block (glibc): each 1 MiB block allocates and frees buffers
    of about its size, which glibc by default hands back to the system and faults in again (a
    third of the time of a big file went to page faults). Once a process; peak RSS stays about the
    same (``hand_back_memory`` returns it when the logs are read)."""
    global _MALLOC_TUNED, _TUNED_LIBC
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    try:
        import ctypes

        if os.uname().sysname != "Linux":
            return
        # The process's own symbols, the C library's among them (dlopen(NULL)): ctypes.util's
        # find_library would run ldconfig in a subprocess, 8 ms of a build's start.
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError, ImportError):
        return
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    mallopt(m_mmap_threshold, 32 << 20)  # blocks of a few MiB come from the heap...
    mallopt(m_trim_threshold, 128 << 20)  # ...which is not shrunk after each one
    mallopt(m_top_pad, 16 << 20)
    _TUNED_LIBC = libc


def hand_back_memory() -> None:
    """Return the heap's free memory, kept for the blocks by ``_tune_malloc``, to the system
    (glibc's ``malloc_trim``), once every log is read. What comes after the reading (the table and
    the JSON of hundreds of runs) is made of Python's small objects, which never reuse it: they
    came on top of it, and a 1.6 GB log's peak RSS was 1.09x a 400 MB log's (the same runs,
    more of them), 1.05x once returned."""
    if _TUNED_LIBC is not None:
        with contextlib.suppress(AttributeError):  # a C library without malloc_trim
            _TUNED_LIBC.malloc_trim(0)


TUNE_MALLOC_MIN_BYTES = 8 << 20


def prepare(total_bytes: int) -> None:
    """Import numpy when the logs about to be read are ``FAST_MIN_BYTES`` or more in all, so that
    each of them, however small, takes the block path (a folder of a thousand 46 KB logs read line
    by line took twice the time of their lines in one file)."""
    if total_bytes >= FAST_MIN_BYTES:
        _numpy()


def feed_blocks(parser: SGLangLogParser, log: LogLines, book: Shapes) -> bool:
    """Feed ``log`` to ``parser`` through the fast path, with the shapes ``book`` knows; False
    (nothing read) when it does not apply.

    Raises ``_HandBack`` (after feeding part of the log) when a line for another family shows up.
    """
    if log.encoding != "utf-8-sig" or _numpy() is None:
        return False
    feeder = _FastFeeder(parser, log, book)
    if log.stat.st_size >= TUNE_MALLOC_MIN_BYTES:
        _tune_malloc()
    for first, data in log.byte_blocks():
        if isinstance(data, str):
            if book.for_others(data):
                raise _HandBack
            feeder.generic(first, data)
        else:
            feeder.block(first, data)
    return True


def dispatch(log: LogLines, sglang: SGLangLogParser, others: tuple, path: Any, generic: Any, book: Shapes) -> None:
    """``parsers.parse_file``'s reading: the fast path (with the shapes ``book`` knows) for UTF-8
    logs of ``FAST_MIN_BYTES`` or more (compressed ones count four times their size) holding SGLang
    lines only; else, or when another family's line shows up part-way, ``generic(log, sglang,
    *others)`` from the start (``sglang`` restarted)."""
    size = log.stat.st_size * (4 if log.compression else 1)
    limit = FAST_MIN_BYTES if np is None else min(FAST_MIN_BYTES, LOADED_MIN_BYTES)  # (numpy imported: by prepare)
    if size < limit or log.encoding != "utf-8-sig" or _numpy() is None:
        generic(log, sglang, *others)
        return
    try:
        if feed_blocks(sglang, log, book):
            return
    except _HandBack:
        pass
    sglang.restart()
    again = LogLines(path, log.max_expansion)
    again.progress = log.progress
    try:
        with again:
            generic(again, sglang, *others)
    finally:
        log.notes[:] = again.notes
        log.line_number = again.line_number
