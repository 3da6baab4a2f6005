"""Log parsers: turn log files into plain records (``parsers.records``).

Public API: ``parse_file(path, *, source=None, keep_samples=False) -> ParsedFile``.

Modules: ``framing`` (line framing shared by all log families: decompression, decoding, ANSI and
``\\r`` clean-up), ``sglang`` (SGLang server logs), ``pyrepr`` (reading Python reprs such as
``server_args=ServerArgs(...)`` without eval), ``records`` (the output contract).

Rules: no git, no pandas, no printing. Bad input never raises: it becomes ``Diagnostic``s.
"""

from __future__ import annotations

import os

from parsers import sglang_fast
from parsers.framing import STREAM_ERRORS, LogLines, NotTextError, ReadError
from parsers.records import Diagnostic, ParsedFile, ParsedRun
from parsers.sglang import SGLangLogParser

__all__ = ["parse_file", "Diagnostic", "ParsedFile", "ParsedRun"]


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


def parse_file(path: str | os.PathLike, *, source: str | None = None, keep_samples: bool = False) -> ParsedFile:
    """Parse one SGLang server log (plain, .gz, .bz2 or .xz) into runs and diagnostics.

    ``source`` is the path as the user gave it (used in ``ParsedFile.source`` and diagnostics;
    default ``str(path)``). ``keep_samples`` also keeps every field of every stats line in
    ``ParsedRun.samples``. Never raises for I/O problems or bad input: an unreadable or binary
    file gives no runs and one diagnostic without a line number; a read error part-way keeps the
    runs read so far and adds a diagnostic.
    """
    src = str(path) if source is None else source
    result = ParsedFile(source=src)
    try:
        log = LogLines(path)
    except NotTextError as exc:
        result.diagnostics.append(Diagnostic(src, None, str(exc)))
        return result
    except STREAM_ERRORS as exc:
        if isinstance(exc, OSError) and exc.errno is not None:
            message = _os_problem(exc)
        else:
            message = f"cannot read: corrupt compressed data ({exc}), skipped"
        result.diagnostics.append(Diagnostic(src, None, message))
        return result

    parser = SGLangLogParser(src, keep_samples=keep_samples)
    problems: list[Diagnostic] = []
    with log:
        try:
            sglang_fast.dispatch(log, parser, (), path, _feed_all)  # fast path: issue 7
        except ReadError as exc:
            where = log.line_number
            what = f"{log.compression} stream" if log.compression else "file"
            problems.append(
                Diagnostic(src, where or None, f"read error in the {what} after line {where}: {exc}; the rest is skipped")
            )
        except Exception as exc:  # a parser bug must not lose the whole file  # noqa: BLE001
            problems.append(_internal_error(src, log.line_number, exc))
    try:
        runs, diagnostics = parser.finish()
    except Exception as exc:  # noqa: BLE001
        runs, diagnostics = list(parser.runs), list(parser.diagnostics)
        problems.append(_internal_error(src, log.line_number, exc))
    result.runs = runs
    result.diagnostics = [Diagnostic(src, line, message) for line, message in log.notes] + diagnostics + problems
    return result


def _feed_all(log: LogLines, parser: SGLangLogParser) -> None:
    """The line-by-line reading (``sglang_fast.dispatch`` falls back to it)."""
    parser.feed_all(log)


def _internal_error(src: str, where: int, exc: Exception) -> Diagnostic:
    return Diagnostic(src, where or None, f"internal parser error near line {where}: {type(exc).__name__}: {exc}")
