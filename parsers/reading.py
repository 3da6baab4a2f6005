"""``parsers.parse_file`` itself (``parsers/__init__.py`` imports this module on first use: start-up)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice
from operator import itemgetter
from typing import Any

from timeline.parsers import framing, sglang_fast
from timeline.parsers.bench import MARKERS_RE, BenchParser
from timeline.parsers.dates import ImpossibleStamps
from timeline.parsers.framing import (
    MAX_EXPANSION,
    STREAM_ERRORS,
    ExpansionLimit,
    LogLines,
    NotTextError,
    ReadError,
    joined_notes,
)
from timeline.parsers.sglang import Handover, SGLangLogParser, match_header
from timeline.parsers.vllm import HEADER_RE as VLLM_HEADER_RE
from timeline.parsers.vllm import HEADER_SEARCH_RE as VLLM_SEARCH_RE
from timeline.parsers.vllm import VLLMLogParser
from timeline.parsers.wrappers import Detector, needs_normalizing, normalize, strip_outer
from timeline.records import DateSource, Diagnostic, ParsedFile, ParsedRun

__all__ = [
    "parse_file",
    "launch_message",
    "parse_piece",
    "join_pieces",
    "Piece",
    "Diagnostic",
    "ParsedFile",
    "ParsedRun",
]


def _os_problem(exc: BaseException) -> str:
    if isinstance(exc, IsADirectoryError):
        return "cannot read: is a directory, skipped"
    if isinstance(exc, PermissionError):
        return "cannot read: permission denied, skipped"
    if isinstance(exc, FileNotFoundError):
        return "cannot read: no such file, skipped"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read: {exc.strerror}, skipped"
    return f"cannot read: {type(exc).__name__}: {exc}, skipped"


def parse_file(
    path: str | os.PathLike,
    *,
    source: str | None = None,
    keep_samples: bool = False,
    progress=None,
    max_expansion: float | None = None,
    finish_run: Callable[[ParsedRun], None] | None = None,
    configs: dict[str, tuple[dict[str, Any], list[str]]] | None = None,
) -> ParsedFile:
    """``parsers.parse_file``, which documents it (that module stays light to import)."""
    src = str(path) if source is None else source
    result = ParsedFile(source=src)
    try:
        log = LogLines(path, MAX_EXPANSION if max_expansion is None else max_expansion)
    except NotTextError as exc:
        result.diagnostics.append(Diagnostic(src, None, str(exc), exc.code))
        return result
    except STREAM_ERRORS as exc:
        if isinstance(exc, OSError) and exc.errno is not None:
            message = _os_problem(exc)
        else:
            message = f"cannot read: corrupt compressed data ({exc}), skipped"
        result.diagnostics.append(Diagnostic(src, None, message, "unreadable"))
        return result
    log.progress = progress
    mtime = log.stat.st_mtime
    sglang = SGLangLogParser(src, keep_samples=keep_samples, mtime=mtime, finish_run=finish_run, configs=configs)
    vllm = VLLMLogParser(src, keep_samples=keep_samples, mtime=mtime)
    bench = BenchParser(src, is_server_record=is_server_record, keep_samples=keep_samples)
    problems: list[Diagnostic] = []
    with log:
        try:
            sglang_fast.dispatch(log, sglang, (vllm, bench), path, _dispatch, SGLANG_SHAPES)
        except ExpansionLimit as exc:
            problems.append(
                Diagnostic(
                    src,
                    log.line_number or None,
                    f"{exc}, {log.line_number} lines; the rest is skipped (TIMELINE_MAX_EXPANSION raises the limit)",
                    "expansion-limit",
                )
            )
        except ReadError as exc:
            where = log.line_number
            what = f"{log.compression} stream" if log.compression else "file"
            problems.append(
                Diagnostic(
                    src,
                    where or None,
                    f"read error in the {what} after line {where}: {exc}; the rest is skipped",
                    "read-error",
                )
            )
        except Exception as exc:  # a parser bug must not lose the whole file  # noqa: BLE001
            problems.append(_internal_error(src, log.line_number, exc))
    return _result(src, log.notes, log.line_number, sglang, vllm, bench, problems)


def launch_message(line: bytes) -> str | None:
    """The message of a ``server_args=`` line (the bytes of one physical line, without its newline)
    that a piece of the file can start at (``parse_piece``): one read alone, as it is, with SGLang's
    own header (``[date time TAGS] server_args=...``); None for any other line."""
    if len(line) > framing.MAX_LINE_CHARS or not line.startswith(b"[") or not line.isascii():
        return None
    text = line.decode("ascii")
    if text.endswith("\r"):  # CRLF
        text = text[:-1]
    if "\r" in text or "\x1b" in text or needs_normalizing(text):
        return None
    m = match_header(text)
    if m is None or not text.startswith("server_args=", m.end()):
        return None
    return text[m.end() :]


@dataclass
class Piece:
    """One piece of a file read on its own (``parse_piece``), its lines numbered from 1: the SGLang
    parser's ``Handover``, the reading's notes and count of over-long lines, the file's mtime and
    how many lines it holds."""

    sglang: Handover
    notes: list[tuple[int | None, str]]
    long_lines: int
    mtime: float
    line_number: int


def parse_piece(
    path: str | os.PathLike,
    span: tuple[int, int | None],
    next_launch: str | None,
    *,
    source: str | None = None,
    keep_samples: bool = False,
    finish_run: Callable[[ParsedRun], None] | None = None,
    stamp: tuple[int, int] | None = None,
) -> Piece | None:
    """Read the lines ``span`` holds (the first byte, at the start of the file or of a
    ``server_args=`` line, and the byte after) of an uncompressed UTF-8 log as ``parse_file`` reads
    them, numbered from 1 (``join_pieces`` numbers them as the file does: a piece need not count
    the lines before it), for ``join_pieces``; ``next_launch``: the message of the
    ``server_args=`` line at the byte after (None: the end of the file). None when the lines
    cannot be read apart from the others: not the block reader's (another family's lines, an
    encoding), a read error, the file changed (``stamp``: its size and mtime in ns as planned),
    or a launch line that would not start a run of its own there (``SGLangLogParser.hand_over``):
    the whole file is then read in one go, which says what it has to say."""
    src = str(path) if source is None else source
    try:
        log = LogLines(path, MAX_EXPANSION, span=(*span, 0))
    except (NotTextError, *STREAM_ERRORS):
        return None
    with log:
        if log.compression is not None or (stamp is not None and stamp != (log.stat.st_size, log.stat.st_mtime_ns)):
            return None
        sglang = SGLangLogParser(src, keep_samples=keep_samples, finish_run=finish_run)  # (dated on joining)
        if span[0]:
            sglang.start_at_launch()
        try:
            if not sglang_fast.feed_blocks(sglang, log, SGLANG_SHAPES):
                return None
            handover = sglang.hand_over(next_launch)
        except Exception:  # noqa: BLE001 - another family's lines, a read error, a parser bug: read whole
            return None
    if handover is None or (span[0] and (not handover.runs or handover.runs[0].first_line != 1)):
        return None  # (a piece after the first starts with its launch's run)
    return Piece(handover, log.notes, log.long_lines, log.stat.st_mtime, log.line_number)


def join_pieces(pieces: list[Piece], *, source: str, keep_samples: bool = False) -> ParsedFile | None:
    """What ``parse_file`` gives for the file the ``pieces`` (``parse_piece``, in order) cover;
    None when they cannot be joined into it (``SGLangLogParser.joined``)."""
    before = 0  # the lines of the pieces before this one
    for piece in pieces:
        if before:
            piece.sglang.shift_lines(before)
            piece.notes = [(None if line is None else line + before, note) for line, note in piece.notes]
        before += piece.line_number
    mtime = pieces[0].mtime
    sglang = SGLangLogParser.joined(source, [piece.sglang for piece in pieces], keep_samples=keep_samples, mtime=mtime)
    if sglang is None:
        return None
    notes = joined_notes([(piece.notes, piece.long_lines) for piece in pieces])
    vllm = VLLMLogParser(source, keep_samples=keep_samples, mtime=mtime)
    bench = BenchParser(source, is_server_record=is_server_record, keep_samples=keep_samples)
    return _result(source, notes, before, sglang, vllm, bench, [])


def _result(
    src: str,
    notes: list[tuple[int | None, str]],
    line_number: int,
    sglang: SGLangLogParser,
    vllm: VLLMLogParser,
    bench: BenchParser,
    problems: list[Diagnostic],
) -> ParsedFile:
    """The file's runs and diagnostics, once its lines are read: ``notes`` the reading's, and
    ``line_number`` the last line read."""
    result = ParsedFile(source=src)
    families = []
    for parser in (sglang, vllm, bench):
        try:
            families.append(parser.finish())
        except Exception as exc:  # noqa: BLE001
            families.append((list(parser.runs), list(parser.diagnostics)))
            problems.append(_internal_error(src, line_number, exc))
    (sg_runs, sg_diags), (vl_runs, vl_diags), (bench_runs, bench_diags) = families
    others = vl_runs or bench_runs
    if others or vllm.headers:
        # A file of another family: SGLang's parser found no SGLang header, only (say) NCCL lines
        # (vLLM's workers print them too).
        sg_runs = [r for r in sg_runs if r.config or r.series]
        if sg_runs:
            sg_diags = [d for d in sg_diags if d.code != "no-sglang-lines"]
        else:  # what it says is about lines of the other family (an NCCL "[date]" warning, say)
            sg_diags = []
    elif not sglang.saw_header and sg_runs and not any(r.config or r.series for r in sg_runs):
        # NCCL's own lines (NCCL_DEBUG) and nothing of a server's: no run.
        versions = sorted({v for r in sg_runs for v in r.nccl_versions})
        sg_runs = []
        sg_diags = [Diagnostic(src, None, NCCL_ONLY.format(", ".join(versions)), "nothing-found")]
    elif not sg_runs:
        sg_diags = [
            Diagnostic(d.source, d.line, NOTHING_FOUND, "nothing-found") if d.code == "no-sglang-lines" else d
            for d in sg_diags
        ]
    if sg_runs:  # vLLM's logger lines inside an SGLang log (SGLang <= 0.4.1 imported vllm.distributed)
        vl_diags = [d for d in vl_diags if d.code != "no-vllm-run"]
    try:
        _time_bench_runs(bench, bench_runs, sg_runs + vl_runs)
    except Exception as exc:  # noqa: BLE001
        problems.append(_internal_error(src, line_number, exc))
    result.runs = sorted(sg_runs + vl_runs + bench_runs, key=lambda r: r.first_line or 0)
    found = sg_diags + vl_diags + bench_diags
    timeless = [r for r in result.runs if r.start is None and r.start_text is None]
    if timeless:
        found.append(
            Diagnostic(
                src,
                timeless[0].first_line,
                (
                    f"{len(timeless)} run(s) without any time stamp ({', '.join(sorted({r.kind for r in timeless}))}; "
                    f"first at line {timeless[0].first_line}): values kept, but no commit can be tied to them "
                    "(attribution no-time)"
                ),
            )
        )
    # SGLang's parser's tally too, unless the file is another family's (an NCCL "[date]" line of vLLM's).
    tallies = [vllm.impossible, sglang.impossible] if sg_runs or not (others or vllm.headers) else [vllm.impossible]
    found.extend(_impossible_stamps(src, tallies))
    found.sort(key=lambda d: (d.line is None, d.line or 0))
    result.diagnostics = [Diagnostic(src, line, message) for line, message in notes] + found + problems
    return result


def _impossible_stamps(src: str, tallies: list[ImpossibleStamps]) -> list[Diagnostic]:
    """One line for every stamp of the file that is no real date and time (2026-02-30, month 13,
    25:61), at the first one: the parsers read none of them as a time (before, a run's last
    one, and any line's when samples were not kept, were dropped without a word)."""
    count = sum(t.count for t in tallies)
    if not count:
        return []
    line, text = min((t.line, t.text) for t in tallies if t.line is not None)
    if count == 1:
        what, read = f"time stamp {text!r} is no real date and time", "not read as a time"
    else:
        what, read = (
            f"{count} time stamps are no real date and time (the first, {text!r}, at this line)",
            "not read as times",
        )
    return [
        Diagnostic(
            src,
            line,
            (
                f"{what}: {read} (a run's start and end come from its other stamps; a stats line's sample "
                "has no time then)"
            ),
            "impossible-date",
        )
    ]


def _client_line(line: str) -> bool:
    """A line the benchmark parser reads: its markers, on a line that is no server's logger line
    (it skips those: SGLang's ``max_total_num_tokens=`` startup line is one)."""
    if not MARKERS_RE.search(line):
        return False
    text = strip_outer(line).text.strip()
    return bool(text) and not is_server_record(text)


OTHER_FAMILIES = (Detector(lambda text: any(map(_client_line, text.split("\n")))), VLLM_SEARCH_RE)
"""What the vLLM and benchmark parsers read: the block reader leaves a file holding any of it to
``_dispatch`` (lines for the wrapper normaliser it reads the generic way itself)."""
SGLANG_SHAPES = sglang_fast.Shapes(OTHER_FAMILIES)
"""The line shapes the block reader learned, for every file of the process."""

NOTHING_FOUND = "no SGLang or vLLM server log lines and no benchmark results found"
NCCL_ONLY = "only NCCL library lines (NCCL {}), no SGLang or vLLM server log lines: not a run"

_BLOCK_MIN, _BLOCK_MAX = 16, 1024
_BLOCK_CHARS = 1 << 20  # a block this large: the next one starts small again (long lines)


def _dispatch(log, sglang: SGLangLogParser, vllm: VLLMLogParser, bench: BenchParser) -> None:
    """Hand the file to the parsers block by block (see the module docstring)."""
    lines = iter(log)
    size = _BLOCK_MIN
    anchor: tuple[int, str] | None = None  # the last time-stamped line before the block
    text_of = itemgetter(1)
    while True:
        block: list[tuple[int, str]] = []
        broken = None
        try:
            block.extend(islice(lines, size))
        except ReadError as exc:  # a cut archive: the lines read before still count
            broken = exc
        if not block:
            if broken is not None:
                raise broken
            break
        blob = "\n".join(map(text_of, block))
        size = _BLOCK_MIN if len(blob) > _BLOCK_CHARS else min(size * 2, _BLOCK_MAX)
        if needs_normalizing(blob, {text[:1] for _, text in block}):  # line by line, as the block reader does
            block = [(n, record) for n, text in block for record in _normalized(text)]
        sglang.feed_all(block)
        if vllm.open or VLLM_SEARCH_RE.search(blob):
            vllm.feed_all(block)
        if bench.busy or MARKERS_RE.search(blob):
            bench.feed_all(block, anchor=anchor, is_stamped=is_stamped)
        for item in reversed(block):
            if is_stamped(item[1]):
                anchor = item
                break
        if broken is not None:
            raise broken


def _normalized(text: str) -> list[str] | tuple[str]:
    return normalize(text) if needs_normalizing(text) else (text,)


def is_stamped(text: str) -> bool:
    """Does this line carry a time stamp (SGLang or vLLM header, docker stamp)?"""
    first = text[:1]
    if first == "[":
        return match_header(text) is not None
    if not first or first in " \t=-#" or first.islower():
        return False
    if match_header(text) is not None:
        return True
    outer = strip_outer(text)
    return outer.time is not None or VLLM_HEADER_RE.match(outer.text) is not None


def is_server_record(text: str) -> bool:
    """An SGLang or vLLM logger line (after the outer wrappers)."""
    first = text[0]
    if first == "[":
        return match_header(text) is not None
    if first in "DIWEC(" or first.isdigit():
        return VLLM_HEADER_RE.match(text) is not None
    return False


def _time_bench_runs(bench: BenchParser, runs: list[ParsedRun], servers: list[ParsedRun]) -> None:
    """Benchmark results take the time of the last time-stamped line before them, and are tied
    to the server run whose lines hold them (``ParsedRun.measures``)."""
    for run in runs:
        first, last = bench.anchors.get(id(run), (None, None))
        where = first[0] if first is not None else run.first_line
        server = _holder(servers, where)
        if (
            server is not None
            and server.first_line is not None
            and server.last_line is not None
            and (server.first_line <= (run.first_line or 0) <= server.last_line)
        ):
            run.measures = server.first_line
        if run.start is not None:
            run.date_source = "stamp"  # its own docker stamps
            continue
        if first is not None:
            run.start, run.start_text, run.date_source = _anchor_time(first, servers)
        if last is not None:
            run.end = _anchor_time(last, servers)[0]
        if run.end is None:
            run.end = run.start
        if run.samples is not None and "result" in run.samples:
            run.samples["result"].map_column("time", lambda _: run.end)  # noqa: B023 - called at once


def _holder(servers: list[ParsedRun], line: int | None) -> ParsedRun | None:
    """The server run whose line range holds ``line``, else the last one before it."""
    if line is None:
        return None
    best = None
    for server in servers:
        if (
            server.first_line is not None
            and server.first_line <= line
            and (best is None or server.first_line >= (best.first_line or 0))
        ):
            best = server
    return best


def _anchor_time(
    anchor: tuple[int, str], servers: list[ParsedRun]
) -> tuple[datetime | None, str | None, DateSource | None]:
    """The time a stamped line stands for, its text, and where its date comes from; a stamp
    missing its date or year takes it from the server run holding the line (and its source)."""
    lineno, text = anchor
    outer = strip_outer(text)
    if outer.time is not None:
        return outer.time, outer.time_text, "stamp"
    server = _holder(servers, lineno)
    base = server.start if server is not None else None
    borrowed = server.date_source if server is not None else None
    m = match_header(text)
    if m is not None:
        date, clock = m.group("date"), m.group("time")
        stamp_text = (date + " " if date else "") + clock
        if date is None:
            if base is None:
                return None, stamp_text, None
            date = base.date().isoformat()
        try:
            moment = datetime.fromisoformat(f"{date} {clock}")
        except ValueError:
            return None, stamp_text, None
        if m.group("date") is None and base is not None and moment < base.replace(tzinfo=None):
            moment += timedelta(days=1)
        return moment, stamp_text, ("stamp" if m.group("date") else borrowed)
    v = VLLM_HEADER_RE.match(outer.text)
    if v is not None:
        stamp_text = outer.text[v.start("month") : v.end("time")]
        if base is None:
            return None, stamp_text, None
        try:
            hour, minute, second = (int(x) for x in v.group("time").split(":"))  # HEADER_RE: \d\d:\d\d:\d\d
            moment = datetime(base.year, int(v.group("month")), int(v.group("day")), hour, minute, second)
        except ValueError:
            return None, stamp_text, None
        if moment < base.replace(tzinfo=None) - timedelta(days=180):
            moment = moment.replace(year=base.year + 1)
        return moment, stamp_text, borrowed
    return None, None, None


def _internal_error(src: str, where: int, exc: Exception) -> Diagnostic:
    return Diagnostic(
        src, where or None, f"internal parser error near line {where}: {type(exc).__name__}: {exc}", "internal-error"
    )
