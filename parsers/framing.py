"""Line framing shared by every log family.

``LogLines`` opens a log file (plain, or gzip/bzip2/xz recognised by magic bytes; zstd too when the
``zstandard`` package is installed, see ``parsers.compression``), checks that
it holds text, and yields ``(line_number, text)`` pairs:

* the file is streamed in blocks, never read whole (logs can be gigabytes);
* bytes are decoded as UTF-8 with ``errors="replace"`` (a leading UTF-8 BOM is dropped; a file
  that starts with a UTF-16 BOM is decoded as UTF-16);
* ANSI escape sequences are removed (only on lines that contain an ESC);
* a CRLF line ending loses its ``\\r``; any other ``\\r`` splits the physical line into its
  progress-update segments (tqdm), each yielded with the same line number, empty ones dropped;
* line numbers are 1-based physical line numbers (``\\n``-terminated).

Opening raises ``OSError`` for I/O problems, ``NotTextError`` for binary or unsupported
compressed data, and one of ``STREAM_ERRORS`` for a compressed stream that is corrupt from the
start; iterating raises ``ReadError`` when reading fails part-way (say, a cut .gz file), after
yielding every line read before. ``parsers.parse_file`` turns all of these into diagnostics.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import lzma
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator
from itertools import count
from typing import BinaryIO, Protocol

from timeline.parsers.compression import ZSTD_MISSING, open_zstd
from timeline.records import DiagnosticCode

__all__ = [
    "LogLines",
    "NotTextError",
    "ReadError",
    "ExpansionLimit",
    "MAX_EXPANSION",
    "STREAM_ERRORS",
    "strip_ansi",
    "split_progress",
    "clean_line",
    "joined_notes",
]

HEAD_BYTES = 64 * 1024
BLOCK_BYTES = 1 << 20
# A physical line longer than this is not read (it is read as an empty line, with a note): the
# longest real ones, a ``server_args`` line, are 10-20 kB, and parsing one line of megabytes
# cost minutes and hundreds of MB (a 7 MB stats line: 570 MB; a 7 MB ``server_args``: 6 minutes).
MAX_LINE_CHARS = 64 << 10
MAX_LONG_LINE_NOTES = 10  # over-long lines noted one by one; the others counted in one more note
# A compressed log that expands more than this many times its size is read up to that point, with
# a note (a decompression bomb: 16 MB of gzip made 4 GB of lines). Real logs: gzip 12x, xz 16x
# (the benchmark log). Small files may always expand to MIN_EXPANSION_BYTES.
MAX_EXPANSION = 50.0
MIN_EXPANSION_BYTES = 64 << 20
# Share of U+FFFD replacement characters in the first 64 KiB above which a file is not text.
MAX_UNDECODABLE_SHARE = 0.30

# Errors a decompressing stream can raise part-way through a file.
STREAM_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError)

_ANSI_RE = re.compile(
    r"\x1b(?:"
    r"\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves (ESC [ ... letter)
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window titles, hyperlinks
    r"|[@-Z\\-_]"  # two-character escapes
    r")?"  # a lone ESC is dropped too
)

_COMPRESSED = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),  # with the zstandard package (parsers.compression)
)
_UNSUPPORTED = (
    (b"PK\x03\x04", "a zip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
)


class NotTextError(Exception):
    """The file does not hold a text log (binary data or an unsupported container), or one that
    cannot be read here; ``code`` is the ``Diagnostic.code`` that says which."""

    def __init__(self, message: str, code: DiagnosticCode = "not-text") -> None:
        super().__init__(message)
        self.code: DiagnosticCode = code


class ReadError(Exception):
    """Reading failed part-way through the file; ``__cause__`` holds the underlying error."""


class ExpansionLimit(ReadError):
    """A compressed log expanded past its budget (``LogLines.max_expansion``): the rest is not read."""


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (colours, cursor moves, OSC titles)."""
    return _ANSI_RE.sub("", text) if "\x1b" in text else text


def split_progress(text: str) -> list[str]:
    """Split one physical line (without its ``\\n``) into its ``\\r``-separated segments."""
    if text.endswith("\r"):
        text = text[:-1]
    if "\r" not in text:
        return [text]
    return [seg for seg in text.split("\r") if seg]


def _is_bzip2(head: bytes) -> bool:
    return len(head) >= 4 and head[:3] == b"BZh" and 0x31 <= head[3] <= 0x39


def _encoding(head: bytes) -> str:
    """UTF-16 when the file starts with its byte-order mark, else UTF-8 (BOM dropped)."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    return "utf-8-sig"


def _binary_reason(head: bytes, encoding: str) -> str | None:
    """Why the first bytes of a (decompressed) file are not a text log, or None."""
    if not head:
        return None
    if head.isascii():  # every byte one character, none undecodable (UTF-8 and its BOM are not ASCII)
        return "not a text log (binary data), skipped" if b"\x00" in head else None
    decoded = codecs.getincrementaldecoder(encoding)("replace").decode(head, False)
    if "\x00" in decoded:
        return "not a text log (binary data), skipped"
    bad = decoded.count("\ufffd")
    if bad and bad > MAX_UNDECODABLE_SHARE * len(decoded):
        return "not a text log (mostly undecodable bytes), skipped"
    return None


class _ByteStream(Protocol):
    """What ``LogLines`` reads from: the file, a decompressor over it, or the zstd reader."""

    def read(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


def _open_regular(path: str | os.PathLike) -> tuple[BinaryIO, os.stat_result]:
    """``open(path, "rb")`` of a regular file only, and its ``fstat``: opened non-blocking and
    checked first, so a FIFO (even one swapped in after the caller looked) never blocks the read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        mode = st.st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket or device"
            raise NotTextError(f"not a regular file ({kind}), skipped, never read", "not-a-file")
        os.set_blocking(fd, True)
        # A buffer the size of the head: the magic bytes read, then the head, from one read (a
        # small log: all of it); the later reads, of a block, go to the file directly.
        return os.fdopen(fd, "rb", buffering=HEAD_BYTES), st
    except BaseException:
        os.close(fd)
        raise


class LogLines:
    """An open text log: iterate to get ``(line_number, text)``. Use as a context manager."""

    def __init__(
        self,
        path: str | os.PathLike,
        max_expansion: float = MAX_EXPANSION,
        span: tuple[int, int | None, int] | None = None,
    ) -> None:
        raw, self.stat = _open_regular(path)  # the file read, as it was when opened (its size, its mtime)
        self._raw = raw
        # Only part of an uncompressed UTF-8 file read by ``byte_blocks``: (its first byte, the byte
        # after it or None for the end, the lines before it), the first byte starting a line.
        self.span = span
        self.max_expansion = max_expansion
        self._budget: int | None = None  # the decompressed bytes a compressed log may expand to
        self.long_lines = 0  # lines longer than MAX_LINE_CHARS met so far (not read)
        self.compression: str | None = None
        self.notes: list[tuple[int | None, str]] = []  # (line, message) worth a diagnostic
        self.line_number = 0  # last physical line number yielded so far
        self.progress: Callable[[int], None] | None = None  # told the bytes of the file read so far
        self.block_lines: int | None = None  # set by a reader of byte_blocks(): the lines of the last block
        try:
            magic = raw.read(8)
            raw.seek(0)
            stream: _ByteStream = raw
            for prefix, what in _UNSUPPORTED:
                if magic.startswith(prefix):
                    raise NotTextError(f"not a text log ({what}), skipped")
            for prefix, name in _COMPRESSED:
                if magic.startswith(prefix):
                    self.compression = name
            if self.compression is None and _is_bzip2(magic):
                self.compression = "bzip2"
            if self.compression == "gzip":
                stream = gzip.GzipFile(fileobj=raw, mode="rb")
            elif self.compression == "xz":
                stream = lzma.LZMAFile(raw, mode="rb")  # noqa: SIM115 - closed in close()
            elif self.compression == "bzip2":
                stream = bz2.BZ2File(raw, mode="rb")
            elif self.compression == "zstd":
                zstd = open_zstd(raw)
                if zstd is None:
                    raise NotTextError(ZSTD_MISSING, "zstd-missing")
                stream = zstd
            if self.compression is not None:
                self._budget = max(MIN_EXPANSION_BYTES, int(max_expansion * self.stat.st_size))
            self._stream = stream
            self._broken: BaseException | None = None  # a decompression error met in the head
            self._head = self._read_head(stream)
            self.encoding = _encoding(self._head)
            reason = _binary_reason(self._head, self.encoding)
            if reason is not None:
                raise NotTextError(reason)
        except BaseException:
            raw.close()
            raise

    def fileno(self) -> int:
        """The descriptor of the file itself (compressed or not)."""
        return self._raw.fileno()

    def close(self) -> None:
        try:
            if self._stream is not self._raw:
                self._stream.close()
        finally:
            self._raw.close()

    def __enter__(self) -> LogLines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_head(self, stream: _ByteStream) -> bytes:
        """Up to HEAD_BYTES; a corrupt or cut compressed stream keeps what came before."""
        read = getattr(stream, "read1", stream.read)
        parts: list[bytes] = []
        size = 0
        while size < HEAD_BYTES:
            try:
                part = read(HEAD_BYTES - size)
            except STREAM_ERRORS as exc:
                if self.compression is None or not parts:
                    raise
                self._broken = exc
                break
            if not part:
                break
            parts.append(part)
            size += len(part)
        return b"".join(parts)

    def _blocks(self) -> Iterator[str]:
        """Decoded text blocks; the decoder is flushed at the end."""
        decoder = codecs.getincrementaldecoder(self.encoding)("replace")
        for block in self._reads(self._head):
            text = decoder.decode(block, False)
            if text:
                yield text
        tail = decoder.decode(b"", True)
        if tail:
            yield tail

    def byte_blocks(self) -> Iterator[tuple[int, bytes | str]]:
        """The raw UTF-8 text in blocks of whole lines, for the fast parsers: ``(first line number, data)``.

        ``data`` is ``bytes`` holding whole physical lines, each ending in ``\\n`` (one is added to
        an unterminated last line), neither decoded nor cleaned: the caller decodes them with
        ``errors="replace"`` and cleans them (``clean_line``) exactly as iterating would. From an
        uncompressed file a block is the read itself, and the bytes after its last newline, the
        start of the next line, are no part of it: the file is sought back to that line's start
        and read again with the next read (joining them to the next read instead, as a compressed
        stream's are, copied every block: 3% of a 400 MB log's build). A line
        longer than ``MAX_LINE_CHARS`` comes alone as ``""`` (not read; the same note is added); one
        that ends inside a block is left to the reader, which calls ``too_long``. The reads are the
        size iterating reads (the first 64 KiB, then 1 MiB at a time), and the lines, their numbers,
        the notes and ``ReadError`` are the ones iterating gives. Only for UTF-8 files (``self.encoding
        == "utf-8-sig"``); a leading BOM is dropped.
        """
        if self.encoding != "utf-8-sig":
            raise ValueError("byte_blocks() reads UTF-8 logs only")
        pending = b""
        skipping = False  # the rest of an over-long line is being dropped, up to its newline
        n = 0 if self.span is None else self.span[2]
        seekable = self.compression is None  # (a regular file: _open_regular)
        unread = b""  # the bytes sought back over, until a read gives them again
        for data in self._raw_blocks():
            unread = b""
            if skipping:
                cut = data.find(b"\n")
                if cut < 0:
                    continue
                data = data[cut + 1 :]
                skipping = False
            cut = data.rfind(b"\n") + 1  # (pending holds no newline)
            block = None
            if cut:
                if seekable and cut < len(data):
                    self._raw.seek(cut - len(data), os.SEEK_CUR)  # the last line's start: read again next
                    unread = data[cut:]
                # the line begun in the reads before and this read up to its last newline: one copy
                whole = not pending and (seekable or cut == len(data))  # (bytes after the last newline: no part)
                block = data if whole else b"".join((pending, memoryview(data)[:cut]))
                pending = b"" if seekable else data[cut:]
            else:
                pending += data
            long_line = None
            if len(pending) > MAX_LINE_CHARS:
                text = codecs.getincrementaldecoder("utf-8")("replace").decode(pending, False)
                if len(text) > MAX_LINE_CHARS:
                    long_line = ""  # not read: an empty line in its place
                    pending = b""
                    skipping = True
            if block is not None:
                start = n + 1
                self.block_lines = None
                yield start, block
                # The reader may say how many lines the block held (it split it): no count then.
                n += block.count(b"\n") if self.block_lines is None else self.block_lines
            if long_line is not None:
                n += 1
                self.too_long(n)
                yield n, long_line
        pending = unread or pending  # (the reads ended where the file was sought back to)
        if pending:
            n += 1
            yield n, pending + b"\n"
        self.line_number = n  # every line read: the last one's number (a span's lines, when read from 1)
        self._count_long_lines()

    def too_long(self, n: int) -> None:
        """Line ``n`` is longer than MAX_LINE_CHARS: not read; noted (the first MAX_LONG_LINE_NOTES)."""
        self.long_lines += 1
        if self.long_lines <= MAX_LONG_LINE_NOTES:
            self.notes.append((n, f"line longer than {MAX_LINE_CHARS} characters: not read"))

    def _count_long_lines(self) -> None:
        more = self.long_lines - MAX_LONG_LINE_NOTES
        if more > 0:
            self.notes.append((None, _more_long_lines(more)))

    def _raw_blocks(self) -> Iterator[bytes]:
        """``_blocks`` without the decoding: the head (its UTF-8 BOM dropped), then the reads."""
        if self.span is not None:
            return self._span_reads(*self.span[:2])
        head = self._head
        if head.startswith(codecs.BOM_UTF8):
            head = head[len(codecs.BOM_UTF8) :]
        return self._reads(head)

    def _span_reads(self, start: int, end: int | None) -> Iterator[bytes]:
        """The bytes from ``start`` to ``end`` (None: the end), a leading UTF-8 BOM dropped."""
        if self.compression is not None:
            raise ValueError("only part of an uncompressed log can be read")
        try:
            self._raw.seek(start)
            while True:  # (the position: byte_blocks may seek back between reads)
                size = BLOCK_BYTES if end is None else min(BLOCK_BYTES, end - self._raw.tell())
                block = self._raw.read(size) if size > 0 else b""
                if not block:
                    break
                if start == 0 and block.startswith(codecs.BOM_UTF8):
                    block = block[len(codecs.BOM_UTF8) :]
                start = -1
                yield block
        except OSError as exc:
            raise ReadError(str(exc)) from exc

    def _reads(self, head: bytes) -> Iterator[bytes]:
        """``head``, then the rest of the stream in blocks, reporting progress and read errors."""
        if head:
            yield head
        if self._broken is not None:
            raise ReadError(str(self._broken)) from self._broken
        if len(self._head) >= HEAD_BYTES:
            read = getattr(self._stream, "read1", self._stream.read)
            progress = self.progress
            budget = self._budget
            expanded = len(self._head)
            while True:
                if progress is not None:
                    progress(self._raw.tell())
                try:
                    block = read(BLOCK_BYTES)
                except STREAM_ERRORS as exc:
                    raise ReadError(str(exc)) from exc
                if not block:
                    break
                expanded += len(block)
                if budget is not None and expanded > budget:
                    raise ExpansionLimit(
                        f"the {self.compression} stream expands more than {self.max_expansion:g} times the file's "
                        f"{self.stat.st_size:,} bytes (a decompression bomb?): read up to "
                        f"{budget:,} bytes of it"
                    )
                yield block

    def __iter__(self) -> Iterator[tuple[int, str]]:
        if self.span is not None:  # a part is read by byte_blocks only; this would read it all from line 1
            raise ValueError("a span of a log is read by byte_blocks(), not line by line")
        pending = ""
        skipping = False  # the rest of an over-long line is being dropped, up to its newline
        n = 0
        for text in self._blocks():
            if skipping:
                cut = text.find("\n")
                if cut < 0:
                    continue
                text = text[cut + 1 :]
                skipping = False
            if pending:
                text = pending + text
            lines = text.split("\n")
            pending = lines.pop()
            if len(text) > MAX_LINE_CHARS and lines and max(map(len, lines)) > MAX_LINE_CHARS:
                for i, line in enumerate(lines):
                    if len(line) > MAX_LINE_CHARS:
                        lines[i] = ""  # not read: an empty line in its place
                        self.too_long(n + i + 1)
            if len(pending) > MAX_LINE_CHARS:
                lines.append("")
                pending = ""
                skipping = True
                self.too_long(n + len(lines))
            if not lines:
                continue
            if "\r" not in text and "\x1b" not in text:
                # Fast path: nothing to clean anywhere in this block.
                start = n + 1
                n += len(lines)
                self.line_number = n
                yield from zip(count(start), lines)
                continue
            ansi_sub = _ANSI_RE.sub
            for line in lines:
                n += 1
                self.line_number = n
                if "\x1b" in line:
                    line = ansi_sub("", line)
                if "\r" in line:
                    for seg in split_progress(line):
                        yield n, seg
                else:
                    yield n, line
        if pending:
            n += 1
            self.line_number = n
            yield from _clean(n, pending)
        self._count_long_lines()


def clean_line(n: int, line: str) -> Iterator[tuple[int, str]]:
    """``(n, segment)`` for each piece of one decoded physical line (no ``\\n``), cleaned as iterating
    cleans it: ANSI sequences removed, ``\\r`` progress updates split, empty segments dropped."""
    return _clean(n, line)


def _clean(n: int, line: str) -> Iterator[tuple[int, str]]:
    if "\x1b" in line:
        line = _ANSI_RE.sub("", line)
    if "\r" in line:
        for seg in split_progress(line):
            yield n, seg
    else:
        yield n, line


def _more_long_lines(more: int) -> str:
    return f"{more} more lines longer than {MAX_LINE_CHARS} characters: not read"


def joined_notes(parts: list[tuple[list[tuple[int | None, str]], int]]) -> list[tuple[int | None, str]]:
    """The notes of a file read in parts (``LogLines.span``), from each part's notes and count of
    over-long lines, in order: as reading the whole file makes them."""
    notes = [note for part, _ in parts for note in part if note[0] is not None][:MAX_LONG_LINE_NOTES]
    more = sum(count for _, count in parts) - MAX_LONG_LINE_NOTES
    if more > 0:
        notes.append((None, _more_long_lines(more)))
    return notes
