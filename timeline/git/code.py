"""``read_code``: the code facts a culprit ranking needs (which files of a version the server can
import, which lines a commit changed), read from git objects through one shadow repository
(``ObjectStore``): nothing of the untrusted repository runs, nothing in it is written.

A commit's files never change, so the ``Reach`` of a (commit, entry modules) is kept in the
user's cache folder (``timeline.cache``, ``ParseCache.load_reach``) and reused, keyed also on
the code of the walk and the Python that parsed it. A commit not seen before is walked, and
its files parsed (``ast.parse`` is most of its time), but only those whose content is new: a
git blob id names a content exactly (https://git-scm.com/book/en/v2/Git-Internals-Git-Objects),
so what each blob parsed to is kept too, one table a commit (``ParseCache.load_parses``), and
a new commit starts from the table of its nearest ancestor that has one (two commits a
``git pull`` apart share almost every file). What is left to parse, when a round of the walk
has many files, is parsed in worker processes, one a core.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timeline.git.errors import GitError
from timeline.git.locate import GitLocation, locate, path_inside
from timeline.git.objects import MAX_BLOB_BYTES, ObjectStore, ObjectStoreError
from timeline.git.runner import valid_sha
from timeline.imports import CodeFacts, Reach, References, reachable, references_of
from timeline.records import ChangedLine

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from timeline.cache import ParseCache

__all__ = ["read_code"]

# How many unreadable files a problem line names before it says "and N more".
_NAMED_FILES = 3
# A round of the walk with this many bytes of new sources is parsed in worker processes: below
# it, starting them costs more than they save (ast.parse reads about 5 MB/s; a fork pool starts
# in about 10 ms).
POOL_MIN_BYTES = 1 << 20
MAX_JOBS = 8
# Each worker's share of a round is sent in pieces this big, so that the processes end together.
_PIECE_BYTES = 256 << 10
# How many ancestors of a new commit are searched for a parse table (nearest first): weeks of a
# busy project's history, for one ``git rev-list`` and one failed open a commit without a table.
ANCESTORS_SEARCHED = 1000


def read_code(
    repo: str | os.PathLike,
    versions: Sequence[str],
    commits: Sequence[str],
    entries: Sequence[str],
    max_blob_bytes: int = MAX_BLOB_BYTES,
    cache: ParseCache | None = None,
    jobs: int | None = None,
) -> CodeFacts:
    """For each of ``versions`` (the commits that ran), which files ``entries`` (dotted module
    names, ``imports.DEFAULT_ENTRIES``) can import; for each of ``commits`` (the suspects), the
    lines it changed (no ``entries``: no server to start from, no reachability read). ONE
    shadow repository for the whole job; a file's content is read and parsed once however many
    versions hold it. ``cache``: where each version's ``Reach`` is kept and found again (None:
    nothing read or written; a cache folder inside the repository is not used). ``jobs``: the
    processes that parse a big round of the walk (None: one a core). Never raises for a bad
    repository: what could not be read is a line of ``problems``, and the rest is returned."""
    problems: list[str] = []
    try:
        loc = locate(repo)
    except GitError as exc:
        return CodeFacts(problems=[f"code facts unavailable: {exc}"])
    if cache is not None and _inside_repository(cache, loc):
        cache = None
    reach: dict[str, Reach] = {}
    changes: dict[str, tuple[ChangedLine, ...]] = {}
    parser = _Parser(_default_jobs() if jobs is None else jobs)
    stored = False
    tables = None
    try:
        with ObjectStore(loc.common_dir, loc.object_format) as store:
            present = _commits_present(store, [*versions, *commits], problems)
            blobs = _CachedBlobs(store, max_blob_bytes, problems)
            tables = _ParseTables(store, cache, blobs.parsed) if cache is not None else None
            for version in dict.fromkeys(versions if entries else ()):
                if version in present:
                    found, stored_now = _version_reach(
                        store, blobs, version, entries, max_blob_bytes, problems, parser, tables, cache
                    )
                    stored = stored_now or stored
                    if found is not None:
                        _tell_unknown(found, version, problems)
                        reach[version] = found
            changes = _changes(store, [c for c in dict.fromkeys(commits) if c in present], problems)
    except ObjectStoreError as exc:
        problems.append(f"code facts unavailable: {exc}")
    finally:
        parser.close()
    if cache and (stored or (tables is not None and tables.stored)):
        cache.prune()
    return CodeFacts(reach=reach, changes=changes, problems=problems)


def _version_reach(
    store: ObjectStore,
    blobs: _CachedBlobs,
    version: str,
    entries: Sequence[str],
    max_blob_bytes: int,
    problems: list[str],
    parser: _Parser,
    tables: _ParseTables | None,
    cache: ParseCache | None,
) -> tuple[Reach | None, bool]:
    """``version``'s ``Reach``, from the cache when it holds it, else walked (and kept in the
    cache when settled); and whether it was stored."""
    key = _reach_key(version, entries, max_blob_bytes) if cache is not None else None
    found = _reach_from_json(cache.load_reach(key), entries) if cache is not None and key else None
    stored = False
    if found is None:
        found, settled = _reach(store, blobs, version, entries, problems, parser, tables)
        if cache and key and found is not None and settled:
            stored = cache.store_reach(key, _reach_json(found))
    return found, stored


def _commits_present(store: ObjectStore, shas: list[str], problems: list[str]) -> set[str]:
    valid = [s for s in dict.fromkeys(shas) if valid_sha(s, store.sha_length)]
    for sha in dict.fromkeys(shas):
        if sha not in valid:
            problems.append(f"{sha[:80]!r} is not a {store.object_format} commit id; its code not read")
    kinds = store.object_types(valid)
    for sha, kind in kinds.items():
        if kind != "commit":
            what = "not in the object store" if kind is None else f"a {kind}, not a commit"
            problems.append(f"{sha[:12]} is {what}; its code not read")
    return {sha for sha, kind in kinds.items() if kind == "commit"}


class _CachedBlobs:
    """The files of the versions read through ``store.blobs``, each blob read and parsed once
    for the job."""

    def __init__(self, store: ObjectStore, max_bytes: int, problems: list[str]):
        self.store = store
        self.max_bytes = max_bytes
        self.problems = problems
        self.contents: dict[str, bytes] = {}
        self.unreadable: set[str] = set()  # too big, missing, or git failed on it
        self.parsed: dict = {}  # ``reachable``'s memo by (package, blob id)

    def reader(self, files: dict[str, str]):
        def read(paths: list[str]) -> dict[str, bytes]:
            ids = {path: files[path] for path in paths if path in files}
            ask = [i for i in dict.fromkeys(ids.values()) if i not in self.contents and i not in self.unreadable]
            if ask:
                try:
                    self.contents.update(self.store.blobs(ask, self.max_bytes))
                except ObjectStoreError as exc:
                    self.problems.append(f"source files not read: {exc}")
                self.unreadable.update(i for i in ask if i not in self.contents)
            return {path: self.contents[i] for path, i in ids.items() if i in self.contents}

        return read


def _reach(
    store: ObjectStore,
    blobs: _CachedBlobs,
    version: str,
    entries: Sequence[str],
    problems: list[str],
    parser: _Parser,
    tables: _ParseTables | None,
) -> tuple[Reach | None, bool]:
    """The ``Reach`` of ``version``, and whether it may be kept: not when a file it needed could
    not be read (git failed, an object not fetched yet, a file too big), which may change
    without the commit changing; a file that does not parse is part of the commit."""
    try:
        files = store.tree(version)
    except ObjectStoreError as exc:
        problems.append(f"files of {version[:12]} not listed: {exc}")
        return None, False
    if tables is not None:
        tables.load_nearest(version)
    found = reachable(files, blobs.reader(files), entries, blobs.parsed, parser, ids=files)
    if tables is not None:
        tables.store_table(version, files)
    return found, not any(files[path] in blobs.unreadable for path in found.unknown)


def _tell_unknown(found: Reach, version: str, problems: list[str]) -> None:
    if found.unknown:
        named = sorted(found.unknown)
        more = f" and {len(named) - _NAMED_FILES} more" if len(named) > _NAMED_FILES else ""
        problems.append(
            f"{len(named)} file(s) of {version[:12]} could not be read or parsed "
            f"({', '.join(named[:_NAMED_FILES])}{more}): their packages counted as imported"
        )


# ---------------------------------------------------------------------- the cache of Reach


def _inside_repository(cache: ParseCache, loc: GitLocation) -> bool:
    """Is the cache folder in the repository (its checkout or git folders)? The cache is ours:
    nothing of it is written there."""
    folder = cache.folder
    return folder is not None and any(path_inside(folder, root) for root in (loc.worktree, loc.git_dir, loc.common_dir))


_WALK_VERSION: str | None = None


def _walk_version() -> str:
    """What a ``Reach`` depends on besides the commit and the entries: the code that lists the
    tree, reads the files and walks the graph (a digest of its sources: any change makes every
    entry a miss), and the Python whose ``ast`` parsed them (its grammar)."""
    global _WALK_VERSION
    if _WALK_VERSION is None:
        from timeline import imports
        from timeline.cache import sources_digest
        from timeline.git import objects

        digest = sources_digest([Path(m) for m in (imports.__file__, objects.__file__, __file__)])
        _WALK_VERSION = f"{digest}/{sys.implementation.cache_tag}"
    return _WALK_VERSION


def _walk_key(kind: str, *fields: Any) -> str | None:
    """A cache key (one line of JSON) naming the kind of entry, the walk's code and ``fields``;
    None when the walk's sources cannot be read to name their version (then nothing is cached)."""
    try:
        walk = _walk_version()
    except OSError:
        return None
    return json.dumps([kind, walk, *fields])


def _reach_key(version: str, entries: Sequence[str], max_blob_bytes: int) -> str | None:
    """The cache key of a version's ``Reach``."""
    return _walk_key("reach", version, list(entries), max_blob_bytes)


_PATH_FIELDS = ("reached", "packages", "modules", "unknown")


def _reach_json(found: Reach) -> dict[str, Any]:
    data: dict[str, Any] = {"root": found.root, "entries_found": list(found.entries_found)}
    data.update((name, sorted(getattr(found, name))) for name in _PATH_FIELDS)
    return data


def _reach_from_json(data: Any, entries: Sequence[str]) -> Reach | None:
    """The ``Reach`` a cache entry holds, or None when it is not one ``reachable`` could have
    given for these entries (a foreign, damaged or stale entry: it is read again from git)."""
    if not _holds_reach_fields(data):
        return None
    root, found = data["root"], data["entries_found"]
    reached, packages, modules, unknown = (frozenset(data[name]) for name in _PATH_FIELDS)
    if root is None:
        consistent = not found and not any((reached, packages, modules, unknown))
    else:
        consistent = (
            set(found) <= set(entries)
            and bool(found)
            and reached <= modules
            and unknown <= reached
            and all(p.startswith(root) for p in modules)
            and all(p.startswith(root) for p in packages)
        )
    if not consistent:
        return None
    return Reach(
        root=root, reached=reached, packages=packages, entries_found=tuple(found), modules=modules, unknown=unknown
    )


def _holds_reach_fields(data: Any) -> bool:
    """Whether ``data`` has exactly a ``Reach``'s fields, each of the JSON type it is written as."""
    if not isinstance(data, dict) or set(data) != {"root", "entries_found", *_PATH_FIELDS}:
        return False
    root = data["root"]
    lists = [data["entries_found"], *(data[name] for name in _PATH_FIELDS)]
    return (root is None or isinstance(root, str)) and all(
        isinstance(values, list) and all(isinstance(v, str) for v in values) for values in lists
    )


# ---------------------------------------------------------------------- the parse tables


class _ParseTables:
    """The parse tables of the cache for ``reachable``'s memo (keyed by (package, blob id)):
    before a version is walked, the table of its nearest ancestor that has one (itself first) is
    read into the memo, so that only the blobs new since then are parsed; after, the version's
    own table is written: what each blob of its tree that the memo holds parsed to. The table
    does not depend on the entries nor on the size limit (a file not read is not in it)."""

    def __init__(self, store: ObjectStore, cache: ParseCache, memo: dict):
        self.store = store
        self.cache = cache
        self.memo = memo
        self.tables: dict[str, dict] = {}  # version -> its table, read or written in this job
        self.stored = False

    def load_nearest(self, version: str) -> None:
        if version in self.tables or self._load(version):
            return  # its own table: no need to list its ancestors
        try:
            ancestors = self.store.ancestors(version, ANCESTORS_SEARCHED)
        except ObjectStoreError:
            return  # a shallow or damaged history: no table but its own, missing
        for sha in ancestors:
            if sha != version and (sha in self.tables or self._load(sha)):
                return  # in the memo

    def _load(self, sha: str) -> bool:
        """Read ``sha``'s table from the cache into the memo; whether there was one."""
        key = _parses_key(sha)
        table = _parses_from_json(self.cache.load_parses(key), self.store.sha_length) if key else None
        if table is None:
            return False
        self.tables[sha] = table
        self.memo.update(table)
        return True

    def store_table(self, version: str, files: dict[str, str]) -> None:
        ids = set(files.values())
        table = {key: references for key, references in self.memo.items() if key[1] in ids}
        if table == self.tables.get(version):
            return  # read from the cache and nothing parsed since
        self.tables[version] = table
        key = _parses_key(version)
        if key is not None and table:
            self.stored = self.cache.store_parses(key, _parses_json(table)) or self.stored


def _parses_key(version: str) -> str | None:
    """The cache key of a version's parse table."""
    return _walk_key("parses", version)


def _parses_json(table: dict[tuple[str, str], References | None]) -> dict[str, dict[str, Any]]:
    """``{blob id: {package: [imports, strings] or null (does not parse)}}``: one blob may sit in
    several packages, and its relative imports resolve against each."""
    data: dict[str, dict[str, Any]] = {}
    for (package, blob), references in table.items():
        data.setdefault(blob, {})[package] = references
    return data


def _parses_from_json(data: Any, sha_length: int) -> dict[tuple[str, str], References | None] | None:
    """The table a cache entry holds, or None when it is not one ``_parses_json`` could have
    written (a foreign or damaged entry: then its blobs are parsed again)."""
    if not isinstance(data, dict):
        return None
    table: dict[tuple[str, str], References | None] = {}
    try:
        for blob, by_package in data.items():
            if not valid_sha(blob, sha_length) or not isinstance(by_package, dict):
                return None
            for package, references in by_package.items():
                table[(package, blob)] = None if references is None else _references_from_json(references)
    except (TypeError, ValueError):
        return None
    return table


def _references_from_json(value: Any) -> References:
    imports, strings = value
    if not isinstance(imports, list) or not isinstance(strings, list):
        raise ValueError("not a module's references")
    pairs = tuple((name, whole) for name, whole in imports)
    if not all(isinstance(name, str) and isinstance(whole, bool) for name, whole in pairs) or not all(
        isinstance(text, str) for text in strings
    ):
        raise ValueError("not a module's references")
    return pairs, tuple(strings)


# ---------------------------------------------------------------------- parsing in processes


def _default_jobs() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return min(cores, MAX_JOBS)


class _Parser:
    """``references_of`` for ``reachable``: a round with at least ``POOL_MIN_BYTES`` of sources is
    shared among ``jobs`` worker processes (forked, as ``timeline.builder``'s log parsers are;
    started at the first such round, kept for the job), the others parsed here. Workers that
    cannot start or that die: the round is parsed here, the same answers."""

    def __init__(self, jobs: int):
        self.jobs = jobs if hasattr(os, "fork") else 1
        self.pool: ProcessPoolExecutor | None = None

    def __call__(self, modules: list[tuple[str, bytes]]) -> list[References | None]:
        if self.jobs < 2 or not modules or sum(len(source) for _, source in modules) < POOL_MIN_BYTES:
            return references_of(modules)
        pieces = _pieces(modules, _PIECE_BYTES)
        try:
            if self.pool is None:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                self.pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("fork"))
            futures = [self.pool.submit(references_of, piece) for piece in pieces]
            return [references for future in futures for references in future.result()]
        except Exception:  # noqa: BLE001 - workers that could not start or died: parsed here
            self.close()
            self.jobs = 1
            return references_of(modules)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def _pieces(modules: list[tuple[str, bytes]], size: int) -> list[list[tuple[str, bytes]]]:
    """``modules`` cut, in order, into pieces of about ``size`` bytes of source."""
    pieces: list[list[tuple[str, bytes]]] = []
    filled = size
    for module in modules:
        if filled >= size:
            pieces.append([])
            filled = 0
        pieces[-1].append(module)
        filled += len(module[1])
    return pieces


def _changes(store: ObjectStore, commits: list[str], problems: list[str]) -> dict[str, tuple[ChangedLine, ...]]:
    # a shallow clone's boundary commit has no parent here: git would list every file as added
    boundary = [c for c in commits if c in store.shallow_commits]
    for sha in boundary:
        problems.append(f"{sha[:12]} is at the shallow clone's boundary; its changed lines not read")
    wanted = [c for c in commits if c not in store.shallow_commits]
    try:
        changes = store.changed_lines(wanted)
    except ObjectStoreError as exc:
        problems.append(f"changed lines not read: {exc}")
        return {}
    for sha in wanted:
        if sha in store.cut:
            problems.append(f"changed lines of {sha[:12]} cut at {len(changes[sha]):,} lines")
    return changes
