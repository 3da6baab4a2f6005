"""A tolerant, bytes-based reflog parser (files backend) that never raises.

Line grammar (git's ``logs/`` format, https://git-scm.com/docs/git-update-ref#_logging_updates;
the reader is ``show_one_reflog_ent`` in
https://github.com/git/git/blob/master/refs/files-backend.c)::

    old SP new SP name SP '<' email '>' SP unixseconds SP (+|-)HHMM [TAB message] LF

Deliberate differences from git, which silently skips what it cannot use (a line it cannot
parse, timestamp 0, an unterminated last line; ``git reflog`` also hides entries whose objects
are missing):

- lines with timestamp 0 are kept (with a diagnostic);
- entries whose objects are missing are kept (the object layer reports them);
- an entry glued onto an unterminated previous line is recovered (with a diagnostic);
- an unterminated last line is kept when it parses (with a diagnostic; git ignores it);
- unparseable and empty lines are reported, with their 1-based line number.

Messages keep undecodable bytes via ``surrogateescape`` (``ReflogEntry.message``) so nothing is
lost; ``ReflogEntry.display_message`` is the printable form (U+FFFD replacement).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import NamedTuple, cast

from timeline.collector import uncollected
from timeline.git.locate import MAX_REFLOG_BYTES, UnsafeFile, read_file_safely, resolve_inside
from timeline.records import Diagnostic

__all__ = ["ReflogEntry", "ReflogParse", "parse_reflog", "load_reflog", "tz_offset"]

_HEX = rb"(?:[0-9a-f]{64}|[0-9a-f]{40})"
_LINE = re.compile(
    rb"(?P<old>" + _HEX + rb") (?P<new>" + _HEX + rb") "
    rb"(?P<ident>.*?) (?P<ts>\d+) (?P<tz>[+-]\d{4})"
    rb"(?:\t(?P<msg>.*))?\Z",
    re.S,
)
# Where an entry may start inside a physical line (overlapping, zero-width): used to recover
# entries glued onto an unterminated previous line, and entries after a torn partial write.
# Built per id length (40 or 64): a message ending in a full SHA-1 glued to the next entry
# yields an 80-hex run, and only the file's own id length finds the right boundary.
_CANDIDATES = {n: re.compile(rb"(?=[0-9a-f]{%d} [0-9a-f]{%d} )" % (n, n)) for n in (40, 64)}
_HEXDIGITS = "0123456789abcdef"
# hex digit -> "h", "h" -> "." (other bytes stay): one C pass tells whether an id's bytes are
# n lowercase hex digits, much faster than str.strip
_ID_MARKS = bytes.maketrans(b"0123456789abcdefh", b"h" * 16 + b".")
# "old new " of a possibly glued entry (anywhere but at the very start of a line)
_PAIRS = {n: re.compile(rf"[0-9a-f]{{{n}}} [0-9a-f]{{{n}}} ") for n in (40, 64)}
_FIRST_ID = re.compile(rb"^([0-9a-f]{64}|[0-9a-f]{40}) ", re.M)
MAX_LINE_BYTES = 1024 * 1024
_CHUNK_BYTES = 256 * 1024

_SNIPPET_CHARS = 60


class ReflogEntry(NamedTuple):
    """One reflog entry. Immutable (a named tuple: cheap to build for 100,000-line logs)."""

    old: str
    new: str
    name: str
    email: str
    ts: int  # epoch seconds (UTC)
    tz: str  # "+HHMM" / "-HHMM" exactly as written
    message: str | None  # None = the line had no TAB; undecodable bytes kept (surrogateescape)
    line: int  # 1-based line number in the file (glued entries share their line)
    glued: bool = False
    terminated: bool = True

    @property
    def offset(self) -> timedelta:
        """East of UTC is positive (GitPython's ``altz`` is the opposite sign)."""
        return tz_offset(self.tz)

    @property
    def display_message(self) -> str:
        """The message for people: undecodable bytes become U+FFFD; '' when there was none."""
        message = self.message
        if message is None:
            return ""
        if message.isascii():
            return message
        return message.encode("utf-8", "surrogateescape").decode("utf-8", "replace")

    @property
    def message_is_utf8(self) -> bool:
        if self.message is None:
            return True
        try:
            self.message.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True

    def when(self) -> datetime:
        """Aware datetime in the writer's own offset. May raise (absurd ts or tz)."""
        return datetime.fromtimestamp(self.ts, timezone(self.offset))


@dataclass
class ReflogParse:
    entries: list[ReflogEntry] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    lines: int = 0


def tz_offset(tz: str) -> timedelta:
    """``"+0530"`` -> 5 h 30 min; ``"-0000"`` -> 0 (UTC). Minutes are not normalised or clamped."""
    sign = -1 if tz[:1] == "-" else 1
    return sign * timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5]))


def _dec(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "surrogateescape")


def _snippet(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    if len(text) > _SNIPPET_CHARS:
        text = text[:_SNIPPET_CHARS] + "…"
    return repr(text)


def _split(raw: bytes, candidates: re.Pattern) -> list[tuple]:
    """One physical line -> ``[(match | None, msg | None, piece, glued, torn)]`` in order.

    Linear: the line is cut at every place an entry could start; each segment that parses as
    a whole entry (``_LINE``) is one (glued when not at offset 0); a segment that does not
    parse continues the previous entry's message (the cut was a false alarm inside a message),
    or is garbage (``torn`` when an entry follows it on the same line).
    """
    cuts = [m.start() for m in candidates.finditer(raw) if m.start() > 0]
    bounds = [0, *cuts, len(raw)]
    out: list[list] = []  # [match, msg_start, msg_end, piece_start, piece_end, glued, is_entry]
    for a, b in zip(bounds, bounds[1:], strict=False):
        m = _LINE.match(raw, a, b)
        if m is not None:
            out.append([m, m.start("msg") if m["msg"] is not None else -1, b, a, b, a > 0, True])
            continue
        prev = out[-1] if out else None
        if prev is not None and prev[6] and prev[1] >= 0:
            prev[2] = prev[4] = b  # the message simply goes on
        elif prev is not None and not prev[6]:
            prev[4] = b  # more of the same garbage
        else:
            out.append([None, -1, -1, a, b, a > 0, False])
    result = []
    for i, (m, ms, me, ps, pe, glued, is_entry) in enumerate(out):
        if is_entry:
            result.append((m, raw[ms:me] if ms >= 0 else None, raw[ps:pe], glued, False))
        else:
            torn = i + 1 < len(out)
            result.append((None, None, raw[ps:pe], glued, torn))
    return result


def _entry(m: re.Match, msg: bytes | None, line: int, glued: bool, terminated: bool) -> ReflogEntry:
    ident = m["ident"]
    lt, gt = ident.rfind(b" <"), ident.rfind(b">")
    if 0 <= lt < gt:
        name, email = ident[:lt], ident[lt + 2 : gt]
    elif ident.startswith(b"<") and gt > 0:
        name, email = b"", ident[1:gt]
    else:
        name, email = ident, b""
    return ReflogEntry(
        old=m["old"].decode("ascii"),
        new=m["new"].decode("ascii"),
        name=_dec(name) or "",
        email=_dec(email) or "",
        ts=int(m["ts"]),
        tz=m["tz"].decode("ascii"),
        message=_dec(msg),
        line=line,
        glued=glued,
        terminated=terminated,
    )


def parse_reflog(data: bytes, source: str, sha_length: int | None = None) -> ReflogParse:
    """Parse reflog bytes in file order. Never raises; problems become diagnostics."""
    with uncollected():  # many small objects, no cycles
        return _parse_reflog(data, source, sha_length)


def _read_ident(ident: str, n: int) -> tuple[str, str, bool]:
    """``"Name <email>"`` -> (name, email, odd), split as ``_entry`` splits it. ``odd``: an
    "old new " pair (where ``_split`` cuts a line) may start at ``new`` or inside the identity,
    so the line needs the careful path."""
    lt, gt = ident.rfind(" <"), ident.rfind(">")
    if 0 <= lt < gt:
        name, email = ident[:lt], ident[lt + 2 : gt]
    elif ident[:1] == "<" and gt > 0:
        name, email = "", ident[1:gt]
    else:
        name, email = ident, ""
    # at ``new``: the identity starts with n hex digits and then ends or has a space
    text = ident + " "
    odd = (not text[:n].strip(_HEXDIGITS) and text[n : n + 1] == " ") or (_PAIRS[n].search(text) is not None)
    return name, email, odd


def _read_tz(tz: str) -> str | None:
    """``tz`` when it is "+HHMM" or "-HHMM", else None."""
    return tz if len(tz) == 5 and tz[0] in "+-" and tz[1:].isdigit() and tz.isascii() else None


class _Memo(dict):
    """A dict that reads a missing key with ``read(key)`` once and keeps the result."""

    __slots__ = ("read",)

    def __init__(self, read: Callable[[str], object]):
        super().__init__()
        self.read = read

    def __missing__(self, key: str) -> object:
        value = self[key] = self.read(key)
        return value


def _decoded_chunks(data: bytes, end: int) -> Iterator[tuple[list[str], bool, bool]]:
    """The lines of ``data[:end]`` (which ends with LF), decoded, a chunk of about
    ``_CHUNK_BYTES`` at a time; each chunk with whether its bytes were valid UTF-8 (else
    undecodable bytes are kept as lone surrogates: ``surrogateescape``) and whether they
    were all ASCII.

    Why chunks: decoding and splitting a large log at once makes two more copies of it in
    fresh memory (about twice as slow, on a 100,000-entry log, as a chunk at a time, whose
    memory is reused while it is still in the cache). Decoding never crosses an ASCII byte
    such as LF, so each field comes out exactly as decoding it alone would.
    """
    view = memoryview(data)
    start = 0
    while start < end:
        stop = data.rfind(b"\n", start, min(start + _CHUNK_BYTES, end)) + 1
        if stop <= start:  # one line longer than a chunk
            stop = data.find(b"\n", start, end) + 1
        chunk = view[start:stop]
        try:
            text, utf8 = str(chunk, "utf-8"), True
        except UnicodeDecodeError:
            text, utf8 = str(chunk, "utf-8", "surrogateescape"), False
        lines = text.split("\n")
        lines.pop()  # "" after the chunk's last LF
        yield lines, utf8, text.isascii()
        start = stop


def _parse_reflog(data: bytes, source: str, sha_length: int | None = None) -> ReflogParse:
    """Parse reflog bytes in file order. Never raises; problems become diagnostics.

    ``sha_length`` (40 or 64) is the repository's id length, used to find glued entries;
    by default it is taken from the file's first line that starts with an id.

    Speed: the file is decoded a chunk at a time (``_decoded_chunks``), and each plain line
    takes the fast path (``_PlainLines``); the lines it does not take (damaged, glued, or
    merely unusual) and an unterminated last line take the careful path (``_CarefulLines``).
    Both paths give identical results for the lines the fast one takes.
    """
    out = ReflogParse()
    if not data:
        out.diagnostics.append(Diagnostic(source, None, "reflog is empty (expired by gc?)", "reflog-empty"))
        return out
    n = _id_length(data, sha_length)
    careful = _CarefulLines(source, out, _CANDIDATES[n])
    plain = _PlainLines(n, b"\r" in data, source, out, careful)
    no = 0
    body = data.rfind(b"\n") + 1  # the LF-terminated lines; after them, the tail
    for lines, utf8, ascii_text in _decoded_chunks(data, body):
        no = plain.read(lines, utf8, ascii_text, no)
    if body < len(data):
        no += 1
        careful.read(no, data[body:], False)
    out.lines = no
    return out


def _id_length(data: bytes, sha_length: int | None) -> int:
    """``sha_length`` when it is 40 or 64; else the length of the file's first id (40 if none)."""
    if sha_length in (40, 64):
        return cast(int, sha_length)
    first = _FIRST_ID.search(data)
    return len(first.group(1)) if first else 40


def _ascii_digits(text: str) -> bool:
    """``str.isdigit`` accepts other scripts' digits too; a timestamp has ASCII ones only."""
    return text.isdigit() and text.isascii()


class _PlainLines:
    """The fast path: the well-formed lines of the file's own id length, a decoded chunk at a
    time, each taken apart with ``partition``, ``rsplit`` and ``split`` and a few checks at C
    speed (ids through a translation table; no regex unless the message is long enough to hide
    a glued entry; identities and offsets, which repeat, are read once). A line that fails a
    check goes to the careful path instead.

    The per-line loop (``read``) keeps everything in locals and calls no Python function for a
    plain line of an ASCII chunk: it runs 100,000 times for a 100,000-entry log."""

    def __init__(self, n: int, crlf: bool, source: str, out: ReflogParse, careful: _CarefulLines):
        self.n = n
        self.crlf = crlf
        self.source = source
        self.out = out
        self.careful = careful
        # identities and offsets repeat: each distinct one is read (and checked) once
        self.idents = _Memo(partial(_read_ident, n=n))
        self.tzs = _Memo(_read_tz)
        # an entry's old id is nearly always the previous entry's new one (then it needs no check)
        self.prev_new: str | None = None

    def read(self, lines: list[str], utf8: bool, ascii_text: bool, no: int) -> int:
        """Read one chunk's ``lines`` (see ``_decoded_chunks``), the first being line ``no + 1``;
        returns the number of the last one."""
        n, crlf, idents, tzs, prev_new = self.n, self.crlf, self.idents, self.tzs, self.prev_new
        source, diag, append = self.source, self.out.diagnostics.append, self.out.entries.append
        careful = self.careful.read
        # a line of more characters than this may be longer than MAX_LINE_BYTES (4 bytes a char)
        long_line = MAX_LINE_BYTES // 4
        # a message shorter than this cannot hold an "old new " pair (a glued entry's start)
        pair_min = 2 * n + 2
        search_pair = _PAIRS[n].search
        id_shape = b"h" * n  # an id through _ID_MARKS
        new_entry = tuple.__new__
        encode, is_ts, check_below = _chunk_checks(utf8, ascii_text)
        for line in lines:
            no += 1
            msg: str | None
            head, tab, msg = line.partition("\t")
            try:
                ids_ident, ts, tz = head.rsplit(" ", 2)
                old, new, ident = ids_ident.split(" ", 2)
            except ValueError:  # fewer fields than an entry has
                careful(no, line.encode("utf-8", "surrogateescape"), True)
                continue
            name, email, odd = idents[ident]
            tz = tzs[tz]
            known = old == prev_new
            if (
                tz is not None
                and not odd
                and (known or encode(old).translate(_ID_MARKS) == id_shape)
                and encode(new).translate(_ID_MARKS) == id_shape
                and is_ts(ts)
                and len(ts) < n  # n digits could end an "old new " pair
                and len(line) <= long_line
                and not (crlf and line[-1] == "\r")
                and (len(msg) < pair_min or search_pair(msg) is None)
            ):
                if not tab:
                    msg = None
                if known:
                    old = cast(str, prev_new)  # one string for both ids: less memory (known: old == prev_new)
                seconds = int(ts)
                entry = new_entry(ReflogEntry, (old, new, name, email, seconds, tz, msg, no, False, True))
                append(entry)
                prev_new = new
                if seconds < check_below:
                    _entry_diagnostics(entry, source, no, diag)
                continue
            careful(no, line.encode("utf-8", "surrogateescape"), True)
        self.prev_new = prev_new
        return no


def _chunk_checks(utf8: bool, ascii_text: bool) -> tuple[Callable[[str], bytes], Callable[[str], bool], float]:
    """For a chunk's lines: how to encode an id for its check (plain UTF-8, unless the chunk
    has undecodable bytes: lone surrogates, which "replace" turns into "?", never a hex
    digit); whether a timestamp is ASCII digits (``isdigit`` alone when the chunk is all
    ASCII); and below which timestamp an entry may need a diagnostic (``_entry_diagnostics``):
    1 (timestamp 0) when the chunk is valid UTF-8, else every entry (its message may not be)."""
    if utf8:
        return str.encode, str.isdigit if ascii_text else _ascii_digits, 1
    return partial(str.encode, encoding="ascii", errors="replace"), _ascii_digits, math.inf


class _CarefulLines:
    """The careful path, one physical line at a time: CR, empty, over-long, unterminated and
    unparseable lines are reported, and entries glued onto an unterminated previous line (or
    following a torn partial write) are recovered (``_split``)."""

    def __init__(self, source: str, out: ReflogParse, candidates: re.Pattern):
        self.source = source
        self.out = out
        self.candidates = candidates
        self.cr = False  # a CRLF line was reported (once a file)

    def _damaged(self, no: int, text: str) -> None:
        self.out.diagnostics.append(Diagnostic(self.source, no, text, "reflog-damaged-line"))

    def read(self, no: int, raw: bytes, terminated: bool) -> None:
        """Line ``no`` (``raw``: its bytes without the LF; ``terminated``: it had one)."""
        if raw.endswith(b"\r"):
            raw = raw[:-1]
            if not self.cr:
                self.cr = True
                self._damaged(no, "CRLF line ending (git never writes one); tolerated")
        if not raw.strip():
            self._damaged(no, "empty line skipped")
            return
        if len(raw) > MAX_LINE_BYTES:
            self._damaged(no, f"line longer than {MAX_LINE_BYTES} bytes skipped")
            return
        if not terminated:
            self._damaged(
                no,
                "last line has no trailing newline: kept, but git ignores "
                "it (a write in progress, or a truncated file)",
            )
        self._recover(no, raw, terminated)

    def _recover(self, no: int, raw: bytes, terminated: bool) -> None:
        """The entries of one line, glued ones included, and what could not be read of it."""
        for m, msg, piece, glued, torn in _split(raw, self.candidates):
            if m is None:
                what = (
                    "garbage before an entry dropped" if torn else "unparseable reflog line skipped (git skips it too)"
                )
                self._damaged(no, f"{what}: {_snippet(piece)}")
                continue
            entry = _entry(m, msg, no, glued, terminated)
            self.out.entries.append(entry)
            if glued:
                self._damaged(no, "entry glued onto the previous one (that line lost its newline); recovered")
            _entry_diagnostics(entry, self.source, no, self.out.diagnostics.append)


def _entry_diagnostics(entry: ReflogEntry, source: str, no: int, diag) -> None:
    if entry.ts == 0:
        diag(Diagnostic(source, no, "timestamp 0: kept, but git ignores this entry"))
    if not entry.message_is_utf8:
        diag(Diagnostic(source, no, "message is not valid UTF-8; shown with replacement characters"))
    if len(entry.old) != len(entry.new):
        diag(Diagnostic(source, no, "old and new ids have different lengths (SHA-1 mixed with SHA-256)"))


def load_reflog(path: Path, roots: tuple[Path, ...]) -> tuple[bytes | None, list[Diagnostic]]:
    """Read a reflog file safely: its directory must resolve inside ``roots``; the file itself
    must be a regular file (no symlink, FIFO or device) of at most 256 MiB.

    Returns ``(None, diagnostics)`` when the file is missing or refused.
    """
    source = str(path)
    try:
        safe = resolve_inside(roots, path.parent, path.name)
        return read_file_safely(safe, limit=MAX_REFLOG_BYTES), []
    except FileNotFoundError:
        return None, [
            Diagnostic(
                source,
                None,
                "no reflog file (reflogs disabled by core.logAllRefUpdates, a bare repository, or deleted)",
                "no-reflog",
            )
        ]
    except UnsafeFile as exc:
        return None, [Diagnostic(source, None, f"reflog {exc}", "reflog-unreadable")]
    except OSError as exc:  # pragma: no cover - defensive (e.g. a path component vanished)
        return None, [Diagnostic(source, None, f"reflog cannot be read ({exc.strerror or exc})", "reflog-unreadable")]
