"""Object queries (which commits exist, what a move brought in or took away) through a
shadow repository, so nothing of the untrusted repository's config, hooks, attributes, replace
refs or commit-graph is ever read, and nothing is ever written inside it.

The shadow is ``git init -q --bare`` in a temporary directory of our own whose
``objects/info/alternates`` names ``realpath(common_dir/objects)`` (reference 5.3). git runs
as ``timeline.git.runner`` runs it (a safe environment, our own ``-c`` overrides), cwd = the
shadow. Only validated hex ids are passed, after ``--end-of-options`` (or on stdin, read as
revisions).

What MANY moves brought in and took away (``between_many``) costs ONE git process whatever
their number: a ``git log --name-only -z --stdin`` from all the moves' ends, each commit with
its parents and committer date, read as git streams it and stopped as soon as every move's
commits are known (``_Walk``: each commit painted with the ends that reach it; the walk ends
where every end of a move reaches what is left, so it stays near the moves however long the
history below them); the sets and git's own order are worked out in Python, and each commit
read is described from the same output (sha, subject, author, author and committer dates,
touched paths). Commits wanted alone (``describe``) take one ``git log --no-walk --stdin``
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
import heapq
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
from datetime import datetime
from pathlib import Path

from timeline.git.locate import UnsafeFile, path_inside, read_file_safely, resolve_inside
from timeline.git.runner import git_failure, run_safe_git, safe_env, safe_git_command, valid_sha
from timeline.imports import ChangedLine
from timeline.model import CommitInfo

__all__ = ["ObjectStore", "ObjectStoreError", "ScratchFolder", "MAX_COMMITS_PER_SIDE", "MAX_BLOB_BYTES",
           "MAX_CHANGED_LINES", "MAX_CHANGED_BYTES"]

MAX_COMMITS_PER_SIDE = 50_000
# Fields of one commit in ``git log`` output: after a per-call random record marker
# (a subject cannot forge a record boundary it cannot guess), fixed-format fields first.
_LOG_FIELDS = "%m%H%x1f%aI%x1f%cI%x1f%ae%x1f%an%x1f%s"
# The walk's: each commit's parents and committer timestamp too (what git's walk orders by).
_WALK_FIELDS = "%H%x1f%P%x1f%ct%x1f%aI%x1f%cI%x1f%ae%x1f%an%x1f%s"
_LOG_OPTIONS = ("--no-textconv", "--no-ext-diff", "--no-renames", "--no-color", "--no-show-signature",
                "--no-notes", "--diff-merges=first-parent", "--name-only", "-z")
_READ_BYTES = 1 << 16
_TIMEOUT_S = 300
# After every move's commits are known, the walk reads this many more commits before it stops
# (and goes on if one of them changes that): clock skew, as git's own walks allow for (SLOP).
_WALK_SLOP = 32
# ...and only once git's date order is this far below the oldest one-sided commit: a commit whose
# clock is behind its parent's (skew) may still be read late and repaint what lies under it.
_WALK_SKEW_S = 3_600
# When the shared walk fails (a missing commit), this many unsettled moves get a walk of their own.
MAX_OWN_WALKS = 16
# A source file larger than this is not read (SGLang's largest Python file is about 200 kB).
MAX_BLOB_BYTES = 2 * 1024 * 1024
# The changed lines kept of one commit: a vendored library or a regenerated file stops here.
MAX_CHANGED_LINES = 20_000
MAX_CHANGED_BYTES = 2 * 1024 * 1024
# One line of a patch is kept up to this many bytes (a minified file is one line).
_MAX_PATCH_LINE = 64 * 1024
_REGULAR_FILE_MODES = (b"100644", b"100755")
_HUNK = re.compile(rb"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_C_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12,
              ord("r"): 13}


class ObjectStoreError(Exception):
    """The shadow repository could not be set up or a query failed. One line."""


class ScratchFolder:
    """A temporary folder of our own (a shadow repository's), removed by ``close`` and on
    leaving a ``with`` block."""

    _tmp: tempfile.TemporaryDirectory | None = None

    def _scratch(self, prefix: str) -> Path:
        self._tmp = tempfile.TemporaryDirectory(prefix=prefix)
        return Path(self._tmp.name)

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


class ObjectStore(ScratchFolder):
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
        self.dir: Path | None = None
        self.walked = 0        # commits the last ``between_many`` walk read (tests, benchmarks)
        self.cut: set[str] = set()   # commits the last ``changed_lines`` cut at its caps
        # every commit described so far (by a walk or by ``describe``): not asked twice
        self.known: dict[str, CommitInfo] = {}

    # ------------------------------------------------------------------ setup
    def __enter__(self) -> "ObjectStore":
        if not self.git:
            raise ObjectStoreError("git executable not found on PATH; commit lists unavailable")
        objects = self.common_dir / "objects"
        real_objects = os.path.realpath(objects)
        if not os.path.isdir(real_objects):
            raise ObjectStoreError(f"{objects}: no object directory; commit lists unavailable")
        if not path_inside(real_objects, self.common_dir):
            raise ObjectStoreError(f"{objects} leads outside the repository (to {real_objects}); refused")
        if any(c in real_objects for c in "\n\r") or real_objects.startswith('"'):
            raise ObjectStoreError(f"{objects}: path cannot be written to an alternates file")
        base = self._scratch("timeline-shadow-")
        try:
            self.dir = base / "shadow.git"
            init = ["init", "-q", "--bare", "--template="]
            if self.object_format == "sha256":
                init.append("--object-format=sha256")
            self._run([*init, str(self.dir)], cwd=base, git_dir=False)
            info = self.dir / "objects" / "info"
            info.mkdir(parents=True, exist_ok=True)
            (info / "alternates").write_text(real_objects + "\n", encoding="utf-8")
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
        (self.dir / "shallow").write_bytes(data)   # type: ignore[operator]
        self.shallow = True
        self.shallow_commits = frozenset(lines)

    # ------------------------------------------------------------------ running git
    def _run(self, args: list[str], *, input: bytes | None = None, cwd: Path | None = None,
             git_dir: bool = True) -> bytes:
        try:
            proc = run_safe_git(self.git, args, cwd=cwd or self.dir,  # type: ignore[arg-type]
                                git_dir=str(self.dir) if git_dir else None, input=input,
                                timeout=_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ObjectStoreError(f"git {args[0]} failed: {exc}") from None
        if proc.returncode != 0:
            raise ObjectStoreError(git_failure(args, proc.stderr, proc.returncode))
        return proc.stdout

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
        cmd = safe_git_command(self.git, args, self.dir)  # type: ignore[arg-type]
        with tempfile.TemporaryFile() as feed, tempfile.TemporaryFile() as err:
            feed.write(input)
            feed.seek(0)
            try:
                proc = subprocess.Popen(cmd, stdin=feed, stdout=subprocess.PIPE, stderr=err,
                                        cwd=self.dir, env=safe_env())
            except OSError as exc:
                raise ObjectStoreError(f"git {args[0]} failed: {exc}") from None
            timer = threading.Timer(_TIMEOUT_S, proc.kill)
            timer.start()
            read_all = False
            try:
                yield proc.stdout
                read_all = True
            finally:
                if not read_all:
                    proc.kill()
                proc.stdout.close()                                                   # type: ignore[union-attr]
                proc.wait()
                timer.cancel()
            if proc.returncode != 0:
                err.seek(0)
                raise ObjectStoreError(git_failure(args, err.read(), proc.returncode))

    def tree(self, commit: str) -> dict[str, str]:
        """``{path: blob id}`` of every regular file of ``commit`` (modes 100644 and 100755: no
        symbolic link, no submodule): ONE ``git ls-tree -r -z --full-tree``. A path that is not
        UTF-8 is left out (no Python module can be named by it)."""
        (sha,) = self._check([commit])
        out = self._run(["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", sha])
        files: dict[str, str] = {}
        for entry in out.split(b"\0"):
            meta, tab, path = entry.partition(b"\t")
            fields = meta.split(b" ")          # "<mode> <type> <id>"
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

    def changed_lines(self, shas, max_lines: int = MAX_CHANGED_LINES,
                      max_bytes: int = MAX_CHANGED_BYTES) -> dict[str, tuple[ChangedLine, ...]]:
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
        marker = secrets.token_hex(8)
        mark = ("\x1e" + marker).encode()
        args = ["log", "--no-walk=unsorted", "--stdin", "-p", "-U0", "--no-color", "--no-ext-diff",
                "--no-textconv", "--no-renames", "--diff-merges=first-parent", "--no-notes",
                "--no-show-signature", "--src-prefix=a/", "--dst-prefix=b/",
                f"--format=%x1e{marker}%H", "--end-of-options"]
        found: dict[str, list[ChangedLine]] = {}
        with self._stream(args, "".join(s + "\n" for s in wanted).encode()) as out:
            lines: list[ChangedLine] = []
            sha = None
            kept_bytes = 0
            old_path = new_path = path = ""
            removed = added = 0             # lines of the current hunk still to come
            for line in _patch_lines(out):
                if removed or added:
                    if line[:1] == b"-" and removed:
                        removed -= 1
                        is_added = False
                    elif line[:1] == b"+" and added:
                        added -= 1
                        is_added = True
                    else:                   # "\ No newline at end of file"
                        continue
                    if len(lines) >= max_lines or kept_bytes >= max_bytes:
                        self.cut.add(sha)   # type: ignore[arg-type]
                        continue
                    text = line[1:].rstrip(b"\n").decode("utf-8", "replace")
                    kept_bytes += len(text)
                    lines.append(ChangedLine(path, is_added, text))
                elif line.startswith(mark):
                    sha = line[len(mark):].strip().decode("ascii", "replace")
                    lines = found.setdefault(sha, [])
                    kept_bytes = 0
                elif line.startswith(b"diff --git "):
                    old_path = new_path = ""
                elif line.startswith(b"--- "):
                    old_path = _patch_path(line[4:])
                elif line.startswith(b"+++ "):
                    new_path = _patch_path(line[4:])
                elif line.startswith(b"@@ "):
                    hunk = _HUNK.match(line)
                    if hunk is None:
                        continue
                    removed, added = (1 if n is None else int(n) for n in hunk.groups())
                    path = new_path or old_path
        return {sha: tuple(found.get(sha, ())) for sha in wanted if sha in found}

    def _log(self, revs: list[str], *extra: str, input: bytes | None = None) -> tuple[bytes, bytes]:
        """``git log`` with commit fields and touched paths: ``(record marker, raw output)``."""
        marker = secrets.token_hex(8)
        return ("\x1e" + marker).encode(), self._run(
            ["log", *_LOG_OPTIONS, f"--format=%x1e{marker}{_LOG_FIELDS}", *extra,
             "--end-of-options", *revs], input=input)

    def describe(self, shas) -> dict[str, CommitInfo]:
        """``{sha: CommitInfo}`` for the given commits themselves (no walk): ONE ``git log
        --no-walk --stdin`` however many (the ids go on stdin, not on the command line), none
        for those already described (``known``)."""
        wanted = list(dict.fromkeys(self._check(shas)))
        found = {s: self.known[s] for s in wanted if s in self.known}
        ask = [s for s in wanted if s not in found]
        if ask:
            marker, out = self._log([], "--no-walk=unsorted", "--stdin",
                                    input="".join(s + "\n" for s in ask).encode())
            for _mark, info in _parse_log(out, marker, self.shallow_commits):
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
        for mark, info in _parse_log(out, marker, self.shallow_commits):
            side = left if mark == "<" else arrived
            if len(side) < MAX_COMMITS_PER_SIDE:
                side.append(info)
            else:
                truncated = True
        return arrived, left, truncated

    def between_many(self, pairs) -> dict[tuple[str, str], tuple[list[CommitInfo], list[CommitInfo], bool] | ObjectStoreError]:
        """``between`` for many distinct (old, new) pairs with ONE git process whatever their
        number: a ``git log --stdin`` from all their ends, with each commit's parents, date,
        facts and touched paths, read as git streams it and stopped as soon as every pair's
        commits are known (``_Walk``). Per pair: ``(arrived, left, truncated)``, ``arrived`` =
        old..new, ``left`` = new..old, each newest first in the order ``between`` (``git log
        --left-right old...new``) gives them, capped at ``MAX_COMMITS_PER_SIDE``. When git
        fails on the way (a missing commit, a broken object), each pair the walk had not
        settled maps to an ``ObjectStoreError``; the others stand. Every commit read is kept
        in ``known`` (``describe`` does not ask for it again).
        """
        pairs = list(dict.fromkeys((o, n) for o, n in pairs))
        for pair in pairs:
            self._check(pair)
        if not pairs:
            return {}
        walk = _Walk(pairs)
        error = self._stream_walk(walk)
        self.walked = len(walk.paint)
        known = self.known
        out: dict[tuple[str, str], tuple[list[CommitInfo], list[CommitInfo], bool] | ObjectStoreError] = {}
        own_walks = MAX_OWN_WALKS
        for i, pair in enumerate(pairs):
            if error is not None and not walk.settled(i):
                # git stopped at a commit it could not read: maybe not one this move needs (a
                # missing object elsewhere); its own walk says (a process a move: a few only).
                if own_walks <= 0:
                    out[pair] = ObjectStoreError(error)
                    continue
                own_walks -= 1
                try:
                    out[pair] = self.between(*pair)
                except ObjectStoreError as own:
                    out[pair] = own
                continue
            arrived, left, truncated = walk.sides(i)
            out[pair] = ([known[c] for c in arrived], [known[c] for c in left], truncated)
        return out

    def _stream_walk(self, walk: "_Walk") -> str | None:
        """Feed ``walk`` the commits of ``git log --stdin`` from its ends (given on stdin), as
        git streams them (its walk, newest first by committer date), describing each into
        ``known``; stop git once ``walk`` needs no more. Returns None, or git's error (one
        line) when it failed before the walk was done."""
        marker = secrets.token_hex(8)
        mark = ("\x1e" + marker).encode()
        args = ["log", *_LOG_OPTIONS, f"--format=%x1e{marker}{_WALK_FIELDS}", "--stdin", "--end-of-options"]
        cmd = safe_git_command(self.git, args, self.dir)  # type: ignore[arg-type]
        with tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                        cwd=self.dir, env=safe_env())
            except OSError as exc:
                return f"git log failed: {exc}"
            timer = threading.Timer(_TIMEOUT_S, proc.kill)
            timer.start()
            stopped = False
            try:
                try:    # (git reads all of stdin before it walks: no deadlock)
                    proc.stdin.write("".join(s + "\n" for s in walk.tips).encode())  # type: ignore[union-attr]
                except BrokenPipeError:    # git stopped reading: it failed, said on stderr
                    pass
                finally:
                    with contextlib.suppress(OSError):
                        proc.stdin.close()                                            # type: ignore[union-attr]
                for record in _records(proc.stdout, mark):                           # type: ignore[arg-type]
                    commit = _walk_record(record, self.shallow_commits)
                    if commit is None:
                        continue
                    info, parents, date = commit
                    self.known[info.sha] = info
                    if walk.add(info.sha, date, parents):
                        stopped = True
                        break
            finally:
                if stopped or proc.poll() is None:
                    proc.kill()            # done with it (or failing): not on down the history
                proc.stdout.close()                                                   # type: ignore[union-attr]
                proc.wait()
                timer.cancel()
            if stopped or proc.returncode == 0:
                return None
            err.seek(0)
            return git_failure(args, err.read(), proc.returncode)


class _Walk:
    """One walk of the commit graph for many moves (old, new) at once, fed the commits of
    ``git log <every end>`` in git's order (its walk: by committer date, newest first).

    Each commit read is painted with a bit per move side: bit ``2i`` = reachable from move
    ``i``'s old end, bit ``2i+1`` = from its new end (paint flows from a commit to its parents;
    on to commits already read too, when a child comes late). Move ``i`` brought in the commits
    with bit ``2i+1`` only (``old..new``) and took away those with bit ``2i`` only
    (``new..old``). Commits referenced but not read yet are the frontier; the walk is done when
    no frontier commit carries one bit of a move without the other (what lies below is
    reachable from both ends of every move, or from none), and git's date order has gone
    ``_WALK_SKEW_S`` (an hour) past every one-sided commit, ``_WALK_SLOP`` commits in a row (a
    same-second child, or one whose clock is behind its parent's, cannot still add paint to
    them). So it covers the moves' commits and an hour more, however long the history below them
    (a commit dated far in the past among them makes it read down to that date); and the lists
    are exactly the commits reachable from one end and not from the other: what ``git rev-list
    old..new`` gives, except with clock skew of more than an hour.
    """

    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = pairs
        paint: dict[str, int] = {}
        for i, (old, new) in enumerate(pairs):
            paint[old] = paint.get(old, 0) | (1 << (2 * i))
            paint[new] = paint.get(new, 0) | (2 << (2 * i))
        self.tips = list(paint)
        # bits 2i (the old sides): ((m >> 1) ^ m) & olds != 0 <=> one side of a move without the other
        self.olds = int("01" * len(pairs), 2)
        self.pending: dict[str, int] = paint          # the frontier: referenced, not read yet
        self.unsettled = sum(1 for m in paint.values() if self._half(m))
        self.paint: dict[str, int] = {}               # commits read
        self.parents: dict[str, tuple[str, ...]] = {}
        self.dates: dict[str, int] = {}
        self.oldest_half: int | None = None           # the oldest date of a one-sided commit read
        self.quiet = 0                                # lines read in a row with the walk done

    def _half(self, m: int) -> bool:
        return bool(((m >> 1) ^ m) & self.olds)

    def add(self, sha: str, date: int, parents: tuple[str, ...]) -> bool:
        """Read one commit (the walk's next); True when the walk needs no more."""
        pending, paint, olds = self.pending, self.paint, self.olds
        m = pending.pop(sha, 0)
        half = bool(((m >> 1) ^ m) & olds)
        if half:
            self.unsettled -= 1
            if self.oldest_half is None or date < self.oldest_half:
                self.oldest_half = date
        paint[sha] = m
        self.parents[sha] = parents
        self.dates[sha] = date
        for p in parents:
            if p in paint:                    # read already: a child came late
                self._spread(p, m)
                continue
            cur = pending.get(p, 0)
            new = cur | m if cur else m     # (the same int object down a line: little memory)
            if new != cur:
                pending[p] = new
                self.unsettled += bool(((new >> 1) ^ new) & olds) - bool(((cur >> 1) ^ cur) & olds)
        if self.unsettled == 0 and (self.oldest_half is None or date < self.oldest_half - _WALK_SKEW_S):
            self.quiet += 1
            return self.quiet > _WALK_SLOP
        self.quiet = 0
        return False

    def _spread(self, sha: str, m: int) -> None:
        """Add the paint ``m`` to ``sha`` and, if it was read already, to its ancestors read."""
        stack = [sha]
        paint, pending, parents, half = self.paint, self.pending, self.parents, self._half
        while stack:
            c = stack.pop()
            if c in paint:
                cur = paint[c]
                new = cur | m
                if new != cur:
                    paint[c] = new
                    stack.extend(parents[c])
                    if half(new) and (self.oldest_half is None or self.dates[c] < self.oldest_half):
                        self.oldest_half = self.dates[c]
                continue
            cur = pending.get(c, 0)
            new = cur | m if cur else m
            if new != cur:
                pending[c] = new
                self.unsettled += half(new) - (half(cur) if cur else 0)

    def settled(self, i: int) -> bool:
        """Whether move ``i``'s commits are all known (no frontier commit has one of its ends'
        paint without the other's)."""
        old_bit = 1 << (2 * i)
        both = old_bit | (old_bit << 1)
        return all((m & both) in (0, both) for m in self.pending.values())

    def sides(self, i: int) -> tuple[list[str], list[str], bool]:
        """Move ``i``'s ``(arrived, left, truncated)`` ids, in the order ``git log --left-right
        old...new`` lists them: git pops the newest commit of a queue ordered by committer date
        (ties: first queued first), started with the two ends, and queues each parent when it
        first meets it; restricted to the commits it shows, that is the walk below (a child of
        a commit shown is shown too)."""
        old, new = self.pairs[i]
        old_bit = 1 << (2 * i)
        new_bit = old_bit << 1
        both = old_bit | new_bit
        paint, dates, parents = self.paint, self.dates, self.parents
        arrived: list[str] = []
        left: list[str] = []
        truncated = False
        queue: list[tuple[int, int, str]] = []
        seen: set[str] = set()
        order = 0
        for end in (old, new):
            if end not in seen and (paint.get(end, 0) & both) in (old_bit, new_bit):
                seen.add(end)
                heapq.heappush(queue, (-dates[end], order, end))
                order += 1
        push, pop = heapq.heappush, heapq.heappop
        c = pop(queue)[2] if queue else None
        while c is not None:
            side = left if paint[c] & old_bit else arrived
            if len(side) < MAX_COMMITS_PER_SIDE:
                side.append(c)
            else:
                truncated = True
            nxt = None
            for p in parents[c]:
                if p not in seen and (paint.get(p, 0) & both) in (old_bit, new_bit):
                    seen.add(p)
                    if nxt is None and not queue:
                        nxt = p             # alone in the queue: next anyway (a straight line)
                    else:
                        if nxt is not None:
                            push(queue, (-dates[nxt], order, nxt))
                            order += 1
                            nxt = None
                        push(queue, (-dates[p], order, p))
                        order += 1
            c = nxt if nxt is not None else (pop(queue)[2] if queue else None)
        return arrived, left, truncated


def _date(raw: bytes) -> datetime | None:
    try:
        return datetime.fromisoformat(raw.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None


def _records(stream, mark: bytes):
    """The records of a ``git log -z`` stream, each the bytes after its ``mark``, as they come
    (a record is whole when the next mark or the end arrives). Reads a block at a time; a
    record longer than a block (a commit touching 100,000s of paths) is searched once."""
    buf = bytearray()
    start = -1          # where the current record's mark is in buf (-1: none yet)
    scanned = 0         # buf is searched for marks up to here
    size = len(mark)
    while True:
        block = stream.read1(_READ_BYTES)
        if not block:
            break
        buf += block
        while True:
            at = buf.find(mark, max(scanned, start + size if start >= 0 else 0))
            if at < 0:
                scanned = max(0, len(buf) - size + 1)
                break
            if start >= 0:
                yield bytes(buf[start + size:at])
            start = at
            scanned = at + size
        if start > 0:                      # drop what is done with
            del buf[:start]
            scanned -= start
            start = 0
    if start >= 0:
        yield bytes(buf[start + size:])


def _walk_record(record: bytes, shallow: frozenset[str]) -> tuple[CommitInfo, tuple[str, ...], int] | None:
    """One record of the walk's ``git log`` (``_WALK_FIELDS``) -> ``(CommitInfo, parents,
    committer timestamp)``; None when it does not read as one."""
    head, _, rest = record.partition(b"\0")
    fields = head.split(b"\x1f", 7)
    if len(fields) != 8:
        return None
    sha, parents, date, author_date, committer_date, email, name, subject = fields
    sha_text = sha.decode("ascii", "replace")
    parent_ids = tuple(parents.decode("ascii", "replace").split())
    if not valid_sha(sha_text) or not all(valid_sha(p) for p in parent_ids):
        return None
    try:
        timestamp = int(date)
    except ValueError:
        return None
    info = _commit_info(sha_text, rest, author_date, committer_date, email, name, subject, shallow)
    return info, parent_ids, timestamp


def _commit_info(sha: str, rest: bytes, author_date: bytes, committer_date: bytes, email: bytes,
                 name: bytes, subject: bytes, shallow: frozenset[str]) -> CommitInfo:
    """A ``CommitInfo`` from a ``git log -z --name-only`` record's fields; ``rest`` = what
    follows the format line (LF, then the touched paths, each NUL-terminated). A commit listed
    in ``shallow`` (a shallow-clone boundary: its parents are not here) gets ``paths=None``:
    git would compare it with an empty tree and list every file."""
    if rest.startswith(b"\n"):
        rest = rest[1:]
    paths: tuple[str, ...] | None = tuple(
        p.decode("utf-8", "replace") for p in rest.split(b"\0") if p)
    if sha in shallow:
        paths = None
    return CommitInfo(
        sha=sha, subject=subject.decode("utf-8", "replace"),
        author=name.decode("utf-8", "replace"), author_email=email.decode("utf-8", "replace"),
        author_date=_date(author_date), committer_date=_date(committer_date), paths=paths)


def _parse_log(out: bytes, marker: bytes, shallow: frozenset[str] = frozenset()):
    """``git log -z --name-only --format=<marker>%m%H...`` output -> ``(mark, CommitInfo)``
    (see ``_commit_info``)."""
    for record in out.split(marker)[1:]:
        head, _, rest = record.partition(b"\0")
        fields = head.split(b"\x1f", 5)
        if len(fields) != 6:
            continue
        mark_sha, author_date, committer_date, email, name, subject = fields
        mark, sha = mark_sha[:1].decode("ascii", "replace"), mark_sha[1:].decode("ascii", "replace")
        if not valid_sha(sha):
            continue
        yield mark, _commit_info(sha, rest, author_date, committer_date, email, name, subject, shallow)


def _skip(stream, size: int) -> None:
    """Read past ``size`` bytes of ``stream``, a block at a time."""
    while size > 0:
        block = stream.read(min(size, _READ_BYTES))
        if not block:
            return
        size -= len(block)


def _patch_lines(stream):
    """The lines of a patch, each kept up to ``_MAX_PATCH_LINE`` bytes (the rest of a longer
    line is read past)."""
    while True:
        line = stream.readline(_MAX_PATCH_LINE)
        if not line:
            return
        if not line.endswith(b"\n"):
            rest = line
            while rest and not rest.endswith(b"\n"):
                rest = stream.readline(_MAX_PATCH_LINE)
        yield line


def _patch_path(raw: bytes) -> str:
    """The path of a ``--- a/<path>`` or ``+++ b/<path>`` line ("" for ``/dev/null``): git quotes
    a path with special characters C-style, and ends one holding a space with a tab."""
    raw = raw.rstrip(b"\n")
    if raw.endswith(b"\t"):
        raw = raw[:-1]
    if raw.startswith(b'"') and raw.endswith(b'"') and len(raw) >= 2:
        raw = _c_unquote(raw[1:-1])
    if raw == b"/dev/null":
        return ""
    return raw[2:].decode("utf-8", "replace") if raw[:2] in (b"a/", b"b/") else raw.decode("utf-8", "replace")


def _c_unquote(body: bytes) -> bytes:
    """The bytes a C-style quoted name stands for (``\\t``, ``\\"``, ``\\303\\251``...)."""
    out = bytearray()
    i = 0
    while i < len(body):
        byte = body[i]
        if byte == 0x5C and i + 1 < len(body):
            escaped = body[i + 1]
            octal = body[i + 1:i + 4]
            if len(octal) == 3 and all(0x30 <= digit <= 0x37 for digit in octal):
                out.append(int(octal, 8) & 0xFF)
                i += 4
                continue
            out.append(_C_ESCAPES.get(escaped, escaped))
            i += 2
            continue
        out.append(byte)
        i += 1
    return bytes(out)
