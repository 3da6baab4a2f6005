"""Object queries (which commits exist, what a move brought in or took away) through a
shadow repository, so nothing of the untrusted repository's config, hooks, attributes, replace
refs or commit-graph is ever read, and nothing is ever written inside it.

The shadow is ``git init -q --bare`` in a temporary directory of our own whose
``objects/info/alternates`` names a view of ``realpath(common_dir/objects)`` (``borrow_objects``:
links to its own loose objects and packs, regular files only, never its alternates)
(https://git-scm.com/docs/gitrepository-layout): the untrusted objects are readable, while
the config and hooks git would run are the shadow's own. git runs
as ``timeline.git.runner`` runs it (a safe environment, our own ``-c`` overrides), cwd = the
shadow. Only validated hex ids are passed, after ``--end-of-options`` (or on stdin, read as
revisions).

What MANY moves brought in and took away (``between_many``) costs ONE git process whatever
their number: a ``git log --name-only -z --stdin`` from all the moves' ends, each commit with
its parents and committer date, read as git streams it and stopped as soon as every move's
commits are known (``CommitWalk``: the commits kept as a graph, each move's lists worked out
from it, a straight line at once and the others painted with the ends that reach them, a few
dozen moves a pass; a pass ends where every end of its moves reaches what is left, so it stays
near the moves however long the history below them); the sets and git's own order are worked
out in Python, and each commit read is described from the same output (sha, subject, author,
author and committer dates, touched paths). Commits wanted alone (``describe``) take one ``git log --no-walk --stdin``
however many. ``log`` reads ``log.showSignature``, mailmap and diff settings from config, but
the only config it sees is the shadow's own (empty, system and global config disabled) plus
our ``-c`` overrides; ``--no-textconv --no-ext-diff --no-renames`` keep the diff to tree
comparisons (``--name-only`` never reads blobs, attributes or the index).

The code of a version is read the same way: ``tree`` (one ``git ls-tree -r``), ``ancestors``
(one ``git rev-list``: where earlier parses may be found), ``blobs`` (one
``git cat-file --batch`` for many files, each size-capped) and ``changed_lines`` (one ``git log
-p -U0`` for many commits, capped per commit). ``cat-file --batch`` prints raw object contents
(no ``--textconv``/``--filters``: no driver runs) and the patch is computed by git's own diff
with ``--no-ext-diff --no-textconv``: https://git-scm.com/docs/git-cat-file,
https://git-scm.com/docs/git-ls-tree, https://git-scm.com/docs/git-log.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple, cast

from timeline.git.locate import UnsafeFile, path_inside, read_file_safely, resolve_inside
from timeline.git.logformat import (
    LOG_FIELDS,
    LOG_OPTIONS,
    READ_BYTES,
    WALK_FIELDS,
    parse_log,
    record_mark,
    records,
    walk_record,
)
from timeline.git.patch import read_changed_lines
from timeline.git.runner import git_failure, memory_ceiling, run_safe_git, start_safe_git, valid_sha
from timeline.git.walk import MAX_COMMITS_PER_SIDE, CommitWalk
from timeline.model import CommitInfo
from timeline.records import ChangedLine

__all__ = [
    "borrow_objects",
    "Borrowed",
    "REFUSED_ALTERNATES",
    "ObjectStore",
    "ObjectStoreError",
    "Shadow",
    "MAX_BLOB_BYTES",
    "MAX_CHANGED_LINES",
    "MAX_CHANGED_BYTES",
    "MAX_OWN_WALKS",
]

_TIMEOUT_S = 300
# When the shared walk fails (a missing commit), this many unsettled moves get a walk of their own.
MAX_OWN_WALKS = 16
# A source file larger than this is not read (SGLang's largest Python file is about 200 kB).
MAX_BLOB_BYTES = 2 * 1024 * 1024
# The changed lines kept of one commit: a vendored library or a regenerated file stops here.
MAX_CHANGED_LINES = 20_000
MAX_CHANGED_BYTES = 2 * 1024 * 1024
_REGULAR_FILE_MODES = (b"100644", b"100755")


class ObjectStoreError(Exception):
    """The shadow repository could not be set up or a query failed. One line."""


class Shadow:
    """A bare repository of our own in a temporary folder that borrows an untrusted repository's
    objects (``borrow_objects``) and nothing else of it; removed by ``close`` and on leaving a
    ``with`` block."""

    _tmp: tempfile.TemporaryDirectory | None = None
    dir: Path | None = None  # the shadow's git dir, once made

    def _make_shadow(
        self,
        prefix: str,
        common_dir: Path,
        object_format: str,
        init: Callable[[list[str], Path], object],
        error: Callable[[str], Exception],
        *options: str,
    ) -> tuple[Path, Borrowed]:
        """Make the shadow (``git init`` run by ``init(args, cwd)``, with ``options``), its
        alternates naming a view of ``common_dir/objects``; raise ``error(problem)`` when that
        folder cannot be borrowed. Returns the shadow's git dir (also ``self.dir``) and what was
        borrowed."""
        objects = common_dir / "objects"
        real_objects = os.path.realpath(objects)
        if not os.path.isdir(real_objects):
            raise error(f"{objects}: no object directory")
        if not path_inside(real_objects, common_dir):
            raise error(f"{objects} leads outside the repository (to {real_objects}); refused")
        self._tmp = tempfile.TemporaryDirectory(prefix=prefix)
        base = Path(self._tmp.name)
        view = base / "objects-view"
        # git reads an alternates file a line a path, unquoting one that starts with a quote
        if any(c in str(view) for c in "\n\r") or str(view).startswith('"'):
            raise error(f"{view}: path cannot be written to an alternates file")
        self.dir = base / "shadow.git"
        arguments = ["init", "-q", "--bare", "--template=", *options]
        if object_format == "sha256":
            arguments.append("--object-format=sha256")
        init([*arguments, str(self.dir)], base)
        borrowed = borrow_objects(Path(real_objects), view)
        info = self.dir / "objects" / "info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "alternates").write_text(str(view) + "\n", encoding="utf-8")
        return self.dir, borrowed

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


class ObjectStore(Shadow):
    """A shadow bare repository borrowing an untrusted object store, read-only.

    Use as a context manager; the temporary directory is removed on exit::

        with ObjectStore(common_dir, "sha1") as store:
            kinds = store.object_types([...])
            arrived, left = store.between(old, new)
    """

    def __init__(self, common_dir: Path, object_format: str = "sha1", git: str | None = None):
        self.common_dir = Path(common_dir)
        self.object_format = object_format
        self.sha_length = 64 if object_format == "sha256" else 40
        self.git = git or shutil.which("git")
        self.shallow = False
        self.shallow_commits: frozenset[str] = frozenset()
        self.shallow_problem: str | None = None
        self.refused: list[tuple[str, str]] = []  # (path, why) of what borrow_objects left out
        self.memory: int | None = None  # each git process's ceiling (bytes; runner.memory_ceiling)
        self.walked = 0  # commits the last ``between_many`` walk read (tests, benchmarks)
        self.cut: set[str] = set()  # commits the last ``changed_lines`` cut at its caps
        # every commit described so far (by a walk or by ``describe``): not asked twice
        self.known: dict[str, CommitInfo] = {}

    # ------------------------------------------------------------------ setup
    def __enter__(self) -> ObjectStore:
        if not self.git:
            raise ObjectStoreError("git executable not found on PATH; commit lists unavailable")
        self.memory = memory_ceiling()  # the packs' size is known once they are borrowed
        try:
            _, borrowed = self._make_shadow(
                "timeline-shadow-",
                self.common_dir,
                self.object_format,
                lambda arguments, cwd: self._run(arguments, cwd=cwd, git_dir=False),
                lambda problem: ObjectStoreError(f"{problem}; commit lists unavailable"),
            )
            self.refused = borrowed.refused
            self.memory = memory_ceiling(borrowed.pack_bytes)
            self._copy_shallow()
        except BaseException:
            self.close()
            raise
        return self

    def _copy_shallow(self) -> None:
        try:
            src = resolve_inside(self.common_dir, self.common_dir, "shallow")
            data = read_file_safely(src, limit=64 * 1024 * 1024)
        except FileNotFoundError:
            return
        except UnsafeFile as exc:
            self.shallow_problem = f"shallow file {exc}; commit lists may fail"
            return
        lines = data.decode("ascii", "replace").splitlines()
        if not all(valid_sha(line, self.sha_length) for line in lines):
            self.shallow_problem = "shallow file holds something other than object ids; not used"
            return
        (self.dir / "shallow").write_bytes(data)  # type: ignore[operator]
        self.shallow = True
        self.shallow_commits = frozenset(lines)

    # ------------------------------------------------------------------ running git
    def _run(
        self, args: list[str], *, input: bytes | None = None, cwd: Path | None = None, git_dir: bool = True
    ) -> bytes:
        try:
            proc = run_safe_git(
                cast(str, self.git),  # __enter__ refused a missing git
                args,
                cwd=cwd or self.dir,  # type: ignore[arg-type]
                git_dir=str(self.dir) if git_dir else None,
                memory=self.memory,
                input=input,
                timeout=_TIMEOUT_S,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ObjectStoreError(f"git {args[0]} failed: {exc}") from None
        if proc.returncode != 0:
            raise ObjectStoreError(self._failure(args, proc.stderr, proc.returncode))
        return proc.stdout

    def _failure(self, args: list[str], stderr: bytes, returncode: int) -> str:
        return git_failure(args, stderr, returncode, memory=self.memory, repository=self.common_dir)

    def _check(self, shas) -> list[str]:
        out = []
        for sha in shas:
            if not valid_sha(sha, self.sha_length):
                raise ObjectStoreError(f"refusing to pass a non-hex id to git: {sha[:80]!r}")
            out.append(sha)
        return out

    # ------------------------------------------------------------------ queries
    def object_types(self, shas) -> dict[str, str | None]:
        """One ``cat-file --batch-check`` for all ids: ``{sha: "commit" | "tree" | ... | None}``
        (None = missing)."""
        wanted = list(dict.fromkeys(self._check(shas)))
        if not wanted:
            return {}
        out = self._run(["cat-file", "--batch-check"], input="".join(s + "\n" for s in wanted).encode())
        result: dict[str, str | None] = {s: None for s in wanted}
        for line in out.decode("ascii", "replace").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] in result:
                result[parts[0]] = None if parts[1] == "missing" else parts[1]
        return result

    @contextlib.contextmanager
    def _stream(self, args: list[str], input: bytes):
        """git ``args`` with ``input`` on stdin, its stdout yielded to read as it comes. The input
        is given from a temporary file (``cat-file --batch`` answers while it reads: two pipes
        could block each other). git is killed after ``_TIMEOUT_S`` and when the reader stops
        early; ``ObjectStoreError`` (git's last line) when it failed."""
        with tempfile.TemporaryFile() as feed, tempfile.TemporaryFile() as err:
            feed.write(input)
            feed.seek(0)
            with self._started(args, feed, err) as proc:
                yield proc.stdout
            if proc.returncode != 0:
                err.seek(0)
                raise ObjectStoreError(self._failure(args, err.read(), proc.returncode))

    @contextlib.contextmanager
    def _started(self, args: list[str], stdin, err):
        """git ``args`` started on the shadow repository, reading ``stdin``, writing its errors to
        ``err`` and its output to a pipe; killed after ``_TIMEOUT_S`` and when the block raises,
        waited for when it ends (``ObjectStoreError`` when git cannot be started)."""
        try:
            proc = start_safe_git(
                cast(str, self.git),  # __enter__ refused a missing git
                args,
                cwd=self.dir,  # type: ignore[arg-type]
                git_dir=self.dir,
                memory=self.memory,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        except OSError as exc:
            raise ObjectStoreError(f"git {args[0]} failed: {exc}") from None
        timer = threading.Timer(_TIMEOUT_S, proc.kill)
        timer.start()
        try:
            yield proc
        except BaseException:
            proc.kill()
            raise
        finally:
            proc.stdout.close()  # type: ignore[union-attr]
            proc.wait()
            timer.cancel()

    def tree(self, commit: str) -> dict[str, str]:
        """``{path: blob id}`` of every regular file of ``commit`` (modes 100644 and 100755: no
        symbolic link, no submodule): ONE ``git ls-tree -r -z --full-tree``. A path that is not
        UTF-8 is left out (no Python module can be named by it)."""
        (sha,) = self._check([commit])
        out = self._run(["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", sha])
        files: dict[str, str] = {}
        for entry in out.split(b"\0"):
            meta, tab, path = entry.partition(b"\t")
            fields = meta.split(b" ")  # "<mode> <type> <id>"
            if not tab or len(fields) != 3 or fields[0] not in _REGULAR_FILE_MODES:
                continue
            try:
                files[path.decode("utf-8")] = fields[2].decode("ascii")
            except UnicodeDecodeError:
                continue
        return files

    def ancestors(self, commit: str, limit: int) -> list[str]:
        """``commit`` and its ancestors, newest first (by commit date), at most ``limit`` of
        them: ONE ``git rev-list --max-count`` (https://git-scm.com/docs/git-rev-list)."""
        (sha,) = self._check([commit])
        out = self._run(["rev-list", f"--max-count={int(limit)}", "--end-of-options", sha])
        return [line for line in out.decode("ascii", "replace").split() if valid_sha(line, self.sha_length)]

    def blobs(self, ids, max_bytes: int = MAX_BLOB_BYTES) -> dict[str, bytes]:
        """``{id: content}`` of the given blobs: ONE ``git cat-file --batch`` however many (the
        ids on stdin). Missing objects, other kinds of object and blobs larger than
        ``max_bytes`` are left out (a larger one is read past, never held)."""
        wanted = list(dict.fromkeys(self._check(ids)))
        if not wanted:
            return {}
        found: dict[str, bytes] = {}
        with self._stream(["cat-file", "--batch"], "".join(s + "\n" for s in wanted).encode()) as out:
            for _ in wanted:
                # "<id> <type> <size>" LF <content> LF, or "<id> missing" LF
                fields = out.readline(256).split()
                if not fields:
                    break
                if len(fields) != 3 or not fields[2].isdigit():
                    continue
                size = int(fields[2])
                if fields[1] == b"blob" and size <= max_bytes:
                    found[fields[0].decode("ascii")] = out.read(size)
                    out.read(1)
                else:
                    _skip(out, size + 1)
        return found

    def changed_lines(
        self, shas, max_lines: int = MAX_CHANGED_LINES, max_bytes: int = MAX_CHANGED_BYTES
    ) -> dict[str, tuple[ChangedLine, ...]]:
        """``{sha: lines}``: the lines each commit added and removed (against its first parent,
        a root commit against nothing), file by file in git's order, binary files left out.
        ONE ``git log --no-walk --stdin -p -U0`` however many (the ids on stdin). Each commit
        keeps at most ``max_lines`` lines and ``max_bytes`` of their text, and a line at most
        64 kB; the commits cut short are in ``self.cut``. Raises ``ObjectStoreError`` when git
        fails (a missing commit)."""
        wanted = list(dict.fromkeys(self._check(shas)))
        self.cut = set()
        if not wanted:
            return {}
        record, mark = record_mark()
        args = [
            "log",
            "--no-walk=unsorted",
            "--stdin",
            "-p",
            "-U0",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            "--diff-merges=first-parent",
            "--no-notes",
            "--no-show-signature",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            f"--format={record}%H",
            "--end-of-options",
        ]
        with self._stream(args, "".join(s + "\n" for s in wanted).encode()) as out:
            found, self.cut = read_changed_lines(out, mark, max_lines, max_bytes)
        return {sha: tuple(found.get(sha, ())) for sha in wanted if sha in found}

    def _log(self, revs: list[str], *extra: str, input: bytes | None = None) -> tuple[bytes, bytes]:
        """``git log`` with commit fields and touched paths: ``(record marker, raw output)``."""
        record, mark = record_mark()
        return mark, self._run(
            ["log", *LOG_OPTIONS, f"--format={record}{LOG_FIELDS}", *extra, "--end-of-options", *revs], input=input
        )

    def describe(self, shas) -> dict[str, CommitInfo]:
        """``{sha: CommitInfo}`` for the given commits themselves (no walk): ONE ``git log
        --no-walk --stdin`` however many (the ids go on stdin, not on the command line), none
        for those already described (``known``)."""
        wanted = list(dict.fromkeys(self._check(shas)))
        found = {s: self.known[s] for s in wanted if s in self.known}
        ask = [s for s in wanted if s not in found]
        if ask:
            marker, out = self._log([], "--no-walk=unsorted", "--stdin", input="".join(s + "\n" for s in ask).encode())
            for _mark, info in parse_log(out, marker, self.shallow_commits):
                found[info.sha] = self.known[info.sha] = info
        return found

    def between(self, old: str, new: str) -> tuple[list[CommitInfo], list[CommitInfo], bool]:
        """One ``git log --left-right old...new``: ``(arrived, left, truncated)``.

        ``arrived`` = reachable from new but not old (what the move brought in), ``left`` =
        reachable from old but not new (what left HEAD's history). Forward move: ``left`` is
        empty; backward: ``arrived`` is empty; divergent: both. Newest first, as git gives
        them. Each side is capped at ``MAX_COMMITS_PER_SIDE``. However long the range, this is
        ONE git process: subjects, authors, dates and paths come in the same output.
        """
        old, new = self._check([old, new])
        marker, out = self._log([f"{old}...{new}"], "--left-right")
        arrived: list[CommitInfo] = []
        left: list[CommitInfo] = []
        truncated = False
        for mark, info in parse_log(out, marker, self.shallow_commits):
            side = left if mark == "<" else arrived
            if len(side) < MAX_COMMITS_PER_SIDE:
                side.append(info)
            else:
                truncated = True
        return arrived, left, truncated

    def between_many(
        self, pairs
    ) -> dict[tuple[str, str], tuple[list[CommitInfo], list[CommitInfo], bool] | ObjectStoreError]:
        """``between`` for many distinct (old, new) pairs with ONE git process whatever their
        number: a ``git log --stdin`` from all their ends, with each commit's parents, date,
        facts and touched paths, read as git streams it and stopped as soon as every pair's
        commits are known (``CommitWalk``). Per pair: ``(arrived, left, truncated)``, ``arrived`` =
        old..new, ``left`` = new..old, each newest first in the order ``between`` (``git log
        --left-right old...new``) gives them, capped at ``MAX_COMMITS_PER_SIDE``. When git
        fails on the way (a missing commit, a broken object), each pair the walk had not
        settled maps to an ``ObjectStoreError``; the others stand. Every commit read is kept
        in ``known`` (``describe`` does not ask for it again).
        """
        pairs = list(dict.fromkeys((o, n) for o, n in pairs))
        self._check(dict.fromkeys(end for pair in pairs for end in pair))  # each id once
        if not pairs:
            return {}
        walk = CommitWalk(pairs)
        error = self._stream_walk(walk)
        self.walked = len(walk.order)
        known = self.known
        # one list for each distinct list of commits: a checkout and the checkout back, a commit and
        # the reset that undid it list the same ones (a 100,000-entry reflog: 3.1 million listings;
        # the 44,000 distinct lists hold 1.6 million of them), and the JSON writes each list's text once
        described: dict[tuple[str, ...], list[CommitInfo]] = {}

        def infos(shas: list[str]) -> list[CommitInfo]:
            key = tuple(shas)
            listed = described.get(key)
            if listed is None:
                listed = described[key] = [known[c] for c in shas]
            return listed

        out: dict[tuple[str, str], tuple[list[CommitInfo], list[CommitInfo], bool] | ObjectStoreError] = {}
        own_walks = MAX_OWN_WALKS
        for pair, sides in zip(pairs, walk.results, strict=True):
            if sides is None:
                # git stopped at a commit it could not read: maybe not one this move needs (a
                # missing object elsewhere); its own walk says (a process a move: a few only).
                if own_walks <= 0:
                    out[pair] = ObjectStoreError(error or "git log ended before the commits of this move")
                    continue
                own_walks -= 1
                try:
                    out[pair] = self.between(*pair)
                except ObjectStoreError as own:
                    out[pair] = own
                continue
            arrived, left, truncated = sides
            out[pair] = (infos(arrived), infos(left), truncated)
        return out

    def _stream_walk(self, walk: CommitWalk) -> str | None:
        """Feed ``walk`` the commits of ``git log --stdin`` from its ends (given on stdin), as
        git streams them (its walk, newest first by committer date), describing each into
        ``known``; stop git once ``walk`` needs no more. Returns None, or git's error (one
        line) when it failed before the walk was done."""
        record, mark = record_mark()
        args = ["log", *LOG_OPTIONS, f"--format={record}{WALK_FIELDS}", "--stdin", "--end-of-options"]
        with tempfile.TemporaryFile() as err:
            stopped = False
            try:
                with self._started(args, subprocess.PIPE, err) as proc:
                    try:  # (git reads all of stdin before it walks: no deadlock)
                        proc.stdin.write("".join(s + "\n" for s in walk.tips).encode())  # type: ignore[union-attr]
                    except BrokenPipeError:  # git stopped reading: it failed, said on stderr
                        pass
                    finally:
                        with contextlib.suppress(OSError):
                            proc.stdin.close()  # type: ignore[union-attr]
                    walk.run(self._walk_commits(records(proc.stdout, mark)))  # type: ignore[arg-type]
                    stopped = proc.poll() is None  # done before git: the rest is not needed
                    if stopped:
                        proc.kill()  # not on down the history
            except ObjectStoreError as exc:  # git could not be started (the walk raises none)
                return str(exc)
            if stopped or proc.returncode == 0:
                return None
            err.seek(0)
            return self._failure(args, err.read(), proc.returncode)

    def _walk_commits(self, stream: Iterator[bytes]) -> Iterator[tuple[str, int, tuple[str, ...]]]:
        """The walk's commits ``(sha, date, parents)`` from git's records, each described into
        ``known`` on the way."""
        for record in stream:
            commit = walk_record(record, self.shallow_commits)
            if commit is not None:
                info, parents, date = commit
                self.known[info.sha] = info
                yield info.sha, date, parents


_LOOSE_FOLDER = re.compile(r"[0-9a-f]{2}")
_PACK_INDEX = re.compile(r"pack-[0-9a-f]{40}(?:[0-9a-f]{24})?\.idx")
REFUSED_ALTERNATES = (
    "objects of other repositories are not read (alternates refused: they could name any folder, a "
    "FIFO or a device); commits found only there are reported missing"
)


class Borrowed(NamedTuple):
    """What ``borrow_objects`` made: ``(path, why)`` for each thing left out, and the size of the
    packs it linked (with ``runner.memory_ceiling``, the ceiling of git on them)."""

    refused: list[tuple[str, str]]
    pack_bytes: int


def borrow_objects(objects: Path, view: Path) -> Borrowed:
    """Make ``view`` (a new folder of ours) an object directory git can borrow as an alternate
    that holds the repository's own objects and nothing else; say what was left out and how big
    the packs are (``Borrowed``).

    git follows an object directory's ``info/alternates`` (and ``info/http-alternates``) to other
    object directories, recursively, and opens whatever its loose objects and packs are: an
    alternates file naming ``/dev/zero`` or a FIFO, or a pack linked from another repository, made
    git read without end, block until its timeout, or report another repository's commits
    (https://git-scm.com/docs/gitrepository-layout, "objects/info/alternates"). So git never sees
    the repository's object directory itself, only ``view``: a symbolic link to each loose-object
    folder (``00`` to ``ff``) that holds regular files only (else a folder of links to its regular
    files), and a ``pack`` folder of links to each pack index and pack that are both regular files
    (``lstat``: a symbolic link is refused, not followed). No ``info/`` (no alternates, no
    commit-graph), no multi-pack-index, bitmap or reverse index (git works without them).
    """
    refused: list[tuple[str, str]] = []
    view.mkdir()
    (view / "pack").mkdir()
    for name in ("alternates", "http-alternates"):
        if os.path.lexists(objects / "info" / name):
            refused.append((os.fspath(objects / "info" / name), REFUSED_ALTERNATES))
    try:
        entries = sorted(os.scandir(objects), key=lambda e: e.name)
    except OSError as exc:
        refused.append((os.fspath(objects), f"cannot be listed ({exc.strerror or exc}); no object read"))
        return Borrowed(refused, 0)
    pack_bytes = 0
    for entry in entries:
        if _LOOSE_FOLDER.fullmatch(entry.name):
            _borrow_loose(entry, view / entry.name, refused)
        elif entry.name == "pack":
            pack_bytes = _borrow_packs(entry, view / "pack", refused)
    return Borrowed(refused, pack_bytes)


def _not_regular(entry: os.DirEntry) -> str | None:
    if entry.is_symlink():
        return "a symbolic link in the object store: refused, not followed"
    if not entry.is_file(follow_symlinks=False):
        return "not a regular file (a FIFO, socket or device?): refused, never opened"
    return None


def _listing(folder: os.DirEntry, refused: list[tuple[str, str]], lost: str) -> list[os.DirEntry] | None:
    """The entries of ``folder``, or None (and why, ending in ``lost``, in ``refused``) when it is
    no real folder or cannot be listed."""
    if not folder.is_dir(follow_symlinks=False):
        refused.append((folder.path, f"not a real folder (a symbolic link?): {lost}"))
        return None
    try:
        with os.scandir(folder.path) as listing:
            return list(listing)
    except OSError as exc:
        refused.append((folder.path, f"cannot be listed ({exc.strerror or exc}); {lost}"))
        return None


def _borrow_loose(folder: os.DirEntry, target: Path, refused: list[tuple[str, str]]) -> None:
    files = _listing(folder, refused, "its objects are not read")
    if files is None:
        return
    bad = [(entry, why) for entry in files if (why := _not_regular(entry)) is not None]
    if not bad:
        target.symlink_to(folder.path)
        return
    refused.extend((entry.path, why) for entry, why in bad)
    target.mkdir()
    skip = {entry.name for entry, _ in bad}
    for entry in files:
        if entry.name not in skip:
            (target / entry.name).symlink_to(entry.path)


def _borrow_packs(folder: os.DirEntry, target: Path, refused: list[tuple[str, str]]) -> int:
    """Link each pack of ``folder`` whose index and pack are regular files into ``target``;
    return the size of the packs linked."""
    listed = _listing(folder, refused, "no pack is read")
    if listed is None:
        return 0
    total = 0
    files = {entry.name: entry for entry in listed}
    for name in sorted(files):
        if not _PACK_INDEX.fullmatch(name):
            continue
        pack = files.get(name[: -len(".idx")] + ".pack")
        if pack is None:
            continue
        problems = [(entry.path, why) for entry in (files[name], pack) if (why := _not_regular(entry)) is not None]
        if problems:
            refused.extend(problems)
            continue
        (target / name).symlink_to(files[name].path)
        (target / pack.name).symlink_to(pack.path)
        with contextlib.suppress(OSError):
            total += pack.stat(follow_symlinks=False).st_size  # a regular file: _not_regular said so
    return total


def _skip(stream, size: int) -> None:
    """Read past ``size`` bytes of ``stream``, a block at a time."""
    while size > 0:
        block = stream.read(min(size, READ_BYTES))
        if not block:
            return
        size -= len(block)
