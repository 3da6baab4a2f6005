"""The parse cache: each log's ``ParsedFile`` kept in the user's cache folder, reused while the file
is unchanged, so a second ``build`` over the same logs skips the parsing (README, "The parse
cache").

Where: ``$TIMELINE_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/timeline``, else
``~/.cache/timeline`` (from the environment given, ``timeline.environment``; none of them set: no
cache). Never next to the logs or in a repository. The folder is made with mode 0700.

One entry a (log, ``source`` label, ``keep_samples``): a file named by a digest of the three,
holding a header then the pickled ``ParsedFile``, then the SHA-256 of both (``DIGEST_BYTES``:
checked before anything is unpickled, so a cut, bit-flipped or spliced entry is a miss and is
written anew, never a parse with wrong numbers). The header says which file state it was parsed
from (size, mtime and ctime in ns, inode, device, and this machine's UTC offset at the mtime, which
the parsers use to date time-only stamps) and which code parsed it (the package version, a digest of
the ``parsers`` package's sources, the Python version). An entry is used only when all of it
matches; anything else (an entry of another file state or another version, a foreign or corrupt
file, an unreadable one) is a miss, never an error. A log that is re-parsed overwrites its entry,
so a log still being written keeps one entry, not one a size.

Not stored: a file that changed while it was parsed, a file modified less than ``RACY_S`` seconds
ago (its mtime could still move within the same tick: a log being written), and a parse that met
a problem that may go away without the file changing (unreadable file, read error, zstd without
``zstandard``, a parser error). Entries are written atomically (temp file, ``os.replace``); the
folder is kept under ``max_bytes`` and ``max_entries`` by removing the least recently used.

The same folder holds the import-graph entries of ``timeline.git.code.read_code`` (``load_reach``,
``store_reach``): one a (commit, entry modules, walk code), a file named by a digest of its key,
holding ``REACH_MAGIC``, the key on one line, then the ``Reach`` as JSON, which the reader checks
field by field before using it, then the SHA-256 of the key and the JSON; and its parse tables
(``load_parses``, ``store_parses``): one a (commit, walk code), holding ``PARSES_MAGIC``, the
key, then what each file of that commit parsed gave, by git blob id (a blob id names a content
exactly, so the table of an earlier commit serves a later one for every file the two share).
Written, checked and pruned as the parse entries are.

A cache folder that cannot be made or used disables the cache for the build; ``problem`` says why.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

if TYPE_CHECKING:
    from timeline.records import DiagnosticCode

__all__ = [
    "ParseCache",
    "Lookup",
    "cache_folder",
    "MAX_BYTES",
    "MAX_ENTRIES",
    "MIN_LOG_BYTES",
    "RACY_S",
    "REACH_MAGIC",
    "PARSES_MAGIC",
]

MAX_BYTES = 1 << 30  # 1 GiB in all
MAX_ENTRIES = 20_000
# Smaller logs are parsed every time: parsing one takes about as long as writing its entry (1,000
# logs of 100 KB: storing them cost 1.5 s more than parsing them again, benchmarks/run.py).
MIN_LOG_BYTES = 1 << 20
RACY_S = 2.0  # a file modified this recently is parsed, not stored (mtime ticks, logs being written)
SUFFIX = ".parsed"
MAGIC = b"timeline-parse-cache 2\n"  # a new number when the layout of an entry changes
REACH_SUFFIX = ".reach"
REACH_MAGIC = b"timeline-reach-cache 2\n"
PARSES_SUFFIX = ".parses"
PARSES_MAGIC = b"timeline-parses-cache 2\n"
# Every entry ends with the SHA-256 of all it holds after its magic: a cut, a flipped bit or a
# spliced entry is a miss (parsed anew and rewritten), never wrong numbers.
DIGEST_BYTES = 32
_MAGIC_OF = {SUFFIX: MAGIC, REACH_SUFFIX: REACH_MAGIC, PARSES_SUFFIX: PARSES_MAGIC}
_STALE_TEMP_S = 3600.0  # temp files left by a killed build: removed by the next prune after an hour

# Diagnostics that may go away without the file changing: such a parse is not stored. Codes
# (``Diagnostic.code``) of parsers.reading and parsers.framing.
_TRANSIENT: frozenset[DiagnosticCode] = frozenset(
    {"unreadable", "read-error", "internal-error", "zstd-missing", "expansion-limit"}  # the limit may be raised
)


def cache_folder(environ: Mapping[str, str]) -> Path | None:
    """The cache folder the environment names, or None (no cache) when it names none."""
    given = environ.get("TIMELINE_CACHE_DIR", "").strip()
    if given:
        return Path(given).expanduser()
    xdg = environ.get("XDG_CACHE_HOME", "").strip()
    if xdg and os.path.isabs(xdg):  # the XDG spec: a relative path is ignored
        return Path(xdg) / "timeline"
    home = environ.get("HOME", "").strip()
    if home:
        return Path(home) / ".cache" / "timeline"
    return None


class Lookup(NamedTuple):
    """What the cache knows about one log: where its entry is, the header it must have, whether
    the entry there has that header (``hit``)."""

    path: str  # the log, resolved
    entry: str  # the entry's file
    header: tuple
    hit: bool


class ParseCache:
    """The parse cache in ``folder`` (see the module docstring). Cheap to make: the folder is
    made and checked on first use. Picklable: worker processes store their parses themselves."""

    def __init__(
        self, folder: Path | None, *, max_bytes: int = MAX_BYTES, max_entries: int = MAX_ENTRIES, racy_s: float = RACY_S
    ) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.racy_s = racy_s
        self.problem: str | None = None  # why the cache is off for this build, if it had to be turned off
        self._state = "new"  # new, ready, off
        self._version = ""

    def __repr__(self) -> str:
        return f"ParseCache({self.folder!r}, state={self._state!r})"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], **options: Any) -> ParseCache:
        return cls(cache_folder(environ), **options)

    # ------------------------------------------------------------------ opening

    def ready(self) -> bool:
        """Make and check the folder once; False (and ``problem``) when it cannot be used."""
        if self._state == "new":
            self._state = "off"
            if self.folder is None:
                return False
            try:
                self._open()
            except OSError as exc:
                self.problem = f"parse cache off: {self.folder}: {exc.strerror or exc}"
            except ValueError as exc:
                self.problem = f"parse cache off: {exc}"
            else:
                self._state = "ready"
        return self._state == "ready"

    def _open(self) -> None:
        folder = self.folder
        assert folder is not None
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(folder)
        getuid = getattr(os, "getuid", None)
        if getuid is not None:
            # Entries are unpickled: only from a folder of this user's that nobody else can write to.
            if st.st_uid != getuid():
                raise ValueError(f"{folder} belongs to another user")
            if st.st_mode & 0o022:
                raise ValueError(f"{folder} can be written by other users (chmod 700 it)")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise OSError(13, "not writable")
        self._version = code_version()

    # ------------------------------------------------------------------ reading

    def look(self, path: os.PathLike | str, source: str, keep_samples: bool) -> Lookup | None:
        """Where the entry of this log is and whether it holds the file as it is now; None when the
        cache is off, the file cannot be stat'ed or is smaller than ``MIN_LOG_BYTES``."""
        if not self.ready():
            return None
        try:
            st = os.stat(path)
            if st.st_size < MIN_LOG_BYTES:  # before resolving the path: most logs of a folder stop here
                return None
            resolved = os.path.realpath(path)
        except (OSError, ValueError):
            return None
        header = self._header(resolved, source, keep_samples, st)
        entry = os.path.join(self.folder, _entry_name(resolved, source, keep_samples))  # type: ignore[arg-type]
        hit = False
        try:
            with _open_entry(entry) as f:
                hit = _read_header(f) == header
        except Exception:  # noqa: BLE001 - no entry, a foreign or corrupt one: a miss
            pass
        return Lookup(resolved, entry, header, hit)

    def load(self, lookup: Lookup):
        """The ``ParsedFile`` of a hit, or None if the entry cannot be read after all (a miss)."""
        from timeline.records import ParsedFile

        try:
            with _open_entry(lookup.entry) as f:
                body_end = _checked_length(f)  # the digest first: nothing unpickled from a damaged entry
                f.seek(0)
                if body_end is None or _read_header(f) != lookup.header:
                    return None
                # pickle: the entry comes from this user's own folder, which nobody else can write
                # to (checked in _open; the entry is opened without following links and must be
                # this user's file). Whoever can write there can already run code as this user.
                import pickle

                parsed = pickle.load(f)
                if f.tell() != body_end:
                    return None
        except Exception:  # noqa: BLE001 - corrupt, truncated, of classes that changed: a miss
            return None
        if not isinstance(parsed, ParsedFile):
            return None
        with contextlib.suppress(OSError):
            os.utime(lookup.entry)  # recently used: kept longest by prune
        return parsed

    # ------------------------------------------------------------------ writing

    def store(self, lookup: Lookup, parsed) -> bool:
        """Keep ``parsed`` as the entry of the log looked up before it was parsed; not when the
        file changed since the look-up, is being written, or the parse met a passing problem.
        Never raises: a cache that cannot be written is only a cache that is not written."""
        if any(d.code in _TRANSIENT for d in parsed.diagnostics):
            return False
        try:
            st = os.stat(lookup.path)
        except (OSError, ValueError):
            return False
        source, keep_samples = lookup.header[2], lookup.header[3]
        if self._header(lookup.path, source, keep_samples, st) != lookup.header:
            return False  # changed while it was parsed
        import time

        if time.time_ns() - st.st_mtime_ns < self.racy_s * 1e9:
            return False
        import pickle

        def write(f) -> None:
            f.write(MAGIC)
            digested = _Digesting(f)
            pickle.dump(lookup.header, digested, protocol=5)  # type: ignore[arg-type]  # has write()
            _dump(parsed, digested)
            f.write(digested.digest())

        return self._write_entry(lookup.entry, SUFFIX, write)

    def _write_entry(self, entry: str, suffix: str, write: Callable[[BinaryIO], object]) -> bool:
        """``write`` into a temp file of the folder, renamed to ``entry`` when done (a reader sees
        the old entry or the new one, never half of one); nothing left behind on a failure or
        when the entry would take more than a quarter of ``max_bytes`` (one entry must not push
        out all the others)."""
        import tempfile

        temp = None
        try:
            fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=os.fspath(self.folder))  # type: ignore[arg-type]
            with os.fdopen(fd, "wb") as f:
                write(f)
                size = f.tell()
            if size > self.max_bytes // 4:
                os.unlink(temp)
                return False
            os.replace(temp, entry)
            return True
        except Exception:  # noqa: BLE001 - full disk, folder removed, an unpicklable value...
            if temp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
            return False

    # ------------------------------------------------------------------ import-graph entries

    def load_reach(self, key: str) -> Any:
        """The JSON value stored under ``key`` (one line naming all it was computed from), or None:
        the cache off, no entry, one of another key (a digest collision), a foreign, corrupt or
        truncated one. The caller checks the value before using it."""
        return self._load_json(key, REACH_SUFFIX)

    def store_reach(self, key: str, value: Any) -> bool:
        """Keep ``value`` (JSON-able) under ``key``; False when the cache is off or the entry could
        not be written (never raises)."""
        return self._store_json(key, value, REACH_SUFFIX)

    def load_parses(self, key: str) -> Any:
        """``load_reach`` for the parse tables of ``read_code`` (a version's {blob id: references})."""
        return self._load_json(key, PARSES_SUFFIX)

    def store_parses(self, key: str, value: Any) -> bool:
        """``store_reach`` for the parse tables of ``read_code``."""
        return self._store_json(key, value, PARSES_SUFFIX)

    def _load_json(self, key: str, suffix: str) -> Any:
        if not self.ready():
            return None
        import json

        line = _key_line(key)
        entry = self._json_entry(line, suffix)
        magic = _MAGIC_OF[suffix]
        try:
            with _open_entry(entry) as f:
                data = f.read()
            if not data.startswith(magic) or data[len(magic) : len(magic) + len(line)] != line:
                return None
            held, digest = data[len(magic) : -DIGEST_BYTES], data[-DIGEST_BYTES:]
            if len(data) < len(magic) + len(line) + DIGEST_BYTES or _sha256(held) != digest:
                return None  # cut, bit-flipped or spliced: a miss, computed anew
            value = json.loads(held[len(line) :])
        except Exception:  # noqa: BLE001 - no entry, a foreign or corrupt one: a miss
            return None
        with contextlib.suppress(OSError):
            os.utime(entry)  # recently used: kept longest by prune
        return value

    def _store_json(self, key: str, value: Any, suffix: str) -> bool:
        if "\n" in key or not self.ready():
            return False
        import json

        line = _key_line(key)
        held = line + json.dumps(value, separators=(",", ":")).encode()
        data = _MAGIC_OF[suffix] + held + _sha256(held)
        return self._write_entry(self._json_entry(line, suffix), suffix, lambda f: f.write(data))

    def _json_entry(self, line: bytes, suffix: str) -> str:
        import hashlib

        return os.path.join(self.folder, hashlib.sha256(line).hexdigest()[:40] + suffix)  # type: ignore[arg-type]

    def prune(self) -> None:
        """Remove the least recently used entries while the folder holds more than ``max_bytes``
        or ``max_entries`` (down to 90% of each, so that not every build prunes), and temp files
        that a killed build left. Only files named as this cache names them, and starting with the
        magic of their kind (``MAGIC``, ``REACH_MAGIC``, ``PARSES_MAGIC``), are ever removed: the
        folder may be one the user also keeps other files in."""
        if self._state != "ready":
            return
        import time

        now = time.time()
        entries = []
        try:
            with os.scandir(self.folder) as listing:  # type: ignore[type-var]
                for item in listing:
                    temp = _TEMP_NAME.fullmatch(item.name) is not None
                    if not (temp or _ENTRY_NAME.fullmatch(item.name)):
                        continue
                    try:
                        st = item.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if not stat.S_ISREG(st.st_mode):
                        continue
                    if temp:
                        if now - st.st_mtime > _STALE_TEMP_S and (not st.st_size or _starts_with_magic(item.path)):
                            _remove(item.path)
                        continue
                    entries.append((st.st_mtime_ns, st.st_size, item.path))
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        if total <= self.max_bytes and len(entries) <= self.max_entries:
            return
        entries.sort()
        count = len(entries)
        for _, size, path in entries:
            if total <= self.max_bytes * 0.9 and count <= self.max_entries * 0.9:
                break
            if _starts_with_magic(path) and _remove(path):
                total -= size
                count -= 1

    # ------------------------------------------------------------------ keys

    def _header(self, resolved: str, source: str, keep_samples: bool, st: os.stat_result) -> tuple:
        stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, _utc_offset(st.st_mtime))
        return (self._version, resolved, source, bool(keep_samples), stamp)


_SUFFIXES = "(?:" + "|".join(re.escape(suffix) for suffix in _MAGIC_OF) + ")"
_ENTRY_NAME = re.compile(r"[0-9a-f]{40}" + _SUFFIXES)  # _entry_name's and _json_entry's
_TEMP_NAME = re.compile(r"\.tmp-[A-Za-z0-9_]+" + _SUFFIXES)  # _write_entry's mkstemp(prefix=".tmp-")


def _key_line(key: str) -> bytes:
    return key.encode("utf-8", "surrogateescape") + b"\n"


def _starts_with_magic(path: str) -> bool:
    """Is ``path`` an entry this cache wrote (this user's regular file, starting with the magic of
    its suffix)?"""
    magic = _MAGIC_OF.get(os.path.splitext(path)[1])
    if magic is None:
        return False
    try:
        with _open_entry(path) as f:
            return f.read(len(magic)) == magic
    except (OSError, ValueError):
        return False


def _entry_name(resolved: str, source: str, keep_samples: bool) -> str:
    import hashlib

    digest = hashlib.sha256(
        "\0".join((resolved, source, "samples" if keep_samples else "")).encode("utf-8", "surrogateescape")
    )
    return digest.hexdigest()[:40] + SUFFIX


def _utc_offset(mtime: float) -> int | None:
    """This machine's UTC offset at ``mtime``, in seconds: the parsers read the mtime as local time."""
    import time

    try:
        return time.localtime(mtime).tm_gmtoff
    except (OverflowError, OSError, ValueError):
        return None


def _open_entry(entry: str):
    """An entry opened for reading: a regular file of this user's, not reached through a link."""
    fd = os.open(entry, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            raise ValueError("not an entry of this user's")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class _Digesting:
    """A file to write to that keeps the SHA-256 of what went through it."""

    def __init__(self, f: BinaryIO) -> None:
        import hashlib

        self._f = f
        self._hash = hashlib.sha256()

    def write(self, data) -> int:
        self._hash.update(data)
        return self._f.write(data)

    def digest(self) -> bytes:
        return self._hash.digest()


def _sha256(data: bytes) -> bytes:
    import hashlib

    return hashlib.sha256(data).digest()


def _checked_length(f: BinaryIO) -> int | None:
    """Where a parse entry's body ends (its digest starts) when the digest holds, else None:
    the entry is read once, a block at a time (entries of big logs are tens of MB)."""
    import hashlib

    size = os.fstat(f.fileno()).st_size
    end = size - DIGEST_BYTES
    if end < len(MAGIC) or f.read(len(MAGIC)) != MAGIC:
        return None
    digest = hashlib.sha256()
    left = end - len(MAGIC)
    while left > 0:
        block = f.read(min(left, 1 << 20))
        if not block:
            return None
        digest.update(block)
        left -= len(block)
    return end if f.read(DIGEST_BYTES) == digest.digest() else None


def _read_header(f) -> Any:
    if f.read(len(MAGIC)) != MAGIC:
        raise ValueError("not an entry")
    import pickle

    return pickle.load(f)  # from this user's own folder: see ParseCache.load


def _dump(parsed, f) -> None:
    """Pickle ``parsed`` into ``f``; the ``array`` series written straight from their buffers
    (plain pickle copies each to bytes and holds the copies until the end: +30 MB for a 400 MB log)."""
    import copyreg
    import pickle
    from array import array

    pickler = pickle.Pickler(f, protocol=5)
    pickler.dispatch_table = {**copyreg.dispatch_table, array: _reduce_array}
    pickler.dump(parsed)


def _reduce_array(values):
    import pickle

    return _array, (values.typecode, pickle.PickleBuffer(values))


def _array(typecode: str, data):
    from array import array

    values = array(typecode)
    values.frombytes(data)
    return values


def _remove(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


_CODE_VERSION: str | None = None


def parse_sources() -> list[Path]:
    """The source files a parse depends on: the parsers (with the compiled line scanner, when it
    is built: its source is not installed, so the built module's own bytes), the records and
    columns they fill, and the code that digests a run's series as it ends
    (``builder.digest_series``: an entry holds its summaries and steady value; with the compiled
    order statistics, ``timeline/_select.c``, when they are built)."""
    import importlib.util

    import timeline.parsers as parsers

    here = Path(__file__).resolve().parent
    digest = [here / name for name in ("builder.py", "shifts.py", "detect.py")]
    built = [importlib.util.find_spec(name) for name in ("timeline.parsers._scan", "timeline._select")]
    compiled = [Path(spec.origin) for spec in built if spec is not None and spec.origin]
    return [
        *sorted(Path(parsers.__file__).resolve().parent.glob("*.py")),
        *compiled,
        here / "records.py",
        here / "columns.py",
        *digest,
    ]


def sources_digest(sources: list[Path]) -> str:
    """A short digest of source files' names and bytes: what a cache entry's code version holds,
    so that any change to the code that made an entry makes it a miss."""
    import hashlib

    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def code_version() -> str:
    """What parsed an entry: the package version, a digest of the sources that make a parse (the
    ``parsers`` package and the record modules it pickles: any change, even without a new
    version, makes every entry a miss), the Python and the byte order (the series are stored as
    raw doubles)."""
    global _CODE_VERSION
    if _CODE_VERSION is None:
        from timeline import __version__

        digest = sources_digest(parse_sources())
        _CODE_VERSION = f"{__version__}/{digest}/{sys.implementation.cache_tag}/{sys.byteorder}"
    return _CODE_VERSION
