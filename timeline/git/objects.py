"""Object queries (which commits exist, what a move brought in or took away) through a
shadow repository, so nothing of the untrusted repository's config, hooks, attributes, replace
refs or commit-graph is ever read, and nothing is ever written inside it.

The shadow is ``git init -q --bare`` in a temporary directory of our own whose
``objects/info/alternates`` names ``realpath(common_dir/objects)`` (reference 5.3). git runs
with an environment stripped of every ``GIT_*`` variable plus a fixed safe set, with
``--no-pager -c core.commitGraph=false``, cwd = the shadow. Only validated hex ids are passed,
after ``--end-of-options``.

Commit descriptions (sha, subject, author, author and committer dates, touched paths) come
from ONE ``git log --name-only -z`` per range (or one for a batch of single commits). ``log``
reads ``log.showSignature``, mailmap and diff settings from config, but the only config it
sees is the shadow's own (empty, system and global config disabled) plus our ``-c``
overrides; ``--no-textconv --no-ext-diff --no-renames`` keep the diff to tree comparisons
(``--name-only`` never reads blobs, attributes or the index).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from timeline.git.locate import UnsafeFile, path_inside, read_file_safely, resolve_inside
from timeline.model import CommitInfo

__all__ = ["ObjectStore", "ObjectStoreError", "safe_env", "valid_sha", "MAX_COMMITS_PER_SIDE",
           "git_version", "run_safe_git", "SAFE_CONFIG"]

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_VERSION = re.compile(rb"git version (\d+)\.(\d+)(?:\.(\d+))?")
MAX_COMMITS_PER_SIDE = 50_000
# Our own -c overrides on every git call (they win over the shadow's config, which is empty).
SAFE_CONFIG = ("core.commitGraph=false", "core.fsmonitor=false", "core.hooksPath=/dev/null",
               "gc.auto=0", "log.showSignature=false", "log.mailmap=false", "core.quotePath=false",
               "diff.renames=false", "core.pager=cat", "protocol.allow=never",
               "gpg.program=/bin/false", "core.askPass=/bin/false")
# Fields of one commit in ``git log`` output: after a per-call random record marker
# (a subject cannot forge a record boundary it cannot guess), fixed-format fields first.
_LOG_FIELDS = "%m%H%x1f%aI%x1f%cI%x1f%ae%x1f%an%x1f%s"
_TIMEOUT_S = 300
_NO_WALK_CHUNK = 500
_WORKERS = 4


class ObjectStoreError(Exception):
    """The shadow repository could not be set up or a query failed. One line."""


def valid_sha(sha: str | None, length: int | None = None) -> bool:
    if not sha or not _SHA.match(sha):
        return False
    return length is None or len(sha) == length


def safe_env() -> dict[str, str]:
    """``os.environ`` minus every ``GIT_*`` variable, plus a fixed, safe git environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_LAZY_FETCH": "1",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "LC_ALL": "C",
    })
    return env


def run_safe_git(git: str, args: list[str], *, cwd: str | os.PathLike, git_dir: str | None = None,
                 input: bytes | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``git`` with ``safe_env()``, ``--no-pager`` and ``SAFE_CONFIG``; never raises for a
    non-zero exit (the caller reads ``returncode``). ``OSError``/timeouts propagate."""
    cmd = [git, "--no-pager"]
    if git_dir is not None:
        cmd.append(f"--git-dir={git_dir}")
    for item in SAFE_CONFIG:
        cmd += ["-c", item]
    cmd += args
    return subprocess.run(cmd, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=None if input is not None else subprocess.DEVNULL,
                          cwd=cwd, env=safe_env(), timeout=timeout, check=False)


@lru_cache(maxsize=8)
def git_version(git: str | None = None) -> tuple[int, int, int] | None:
    """``(2, 39, 5)`` for the git at ``git`` (default: the one on PATH); None when absent."""
    git = git or shutil.which("git")
    if not git:
        return None
    try:
        proc = subprocess.run([git, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL, cwd="/", env=safe_env(), timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = _VERSION.search(proc.stdout)
    if proc.returncode != 0 or not m:
        return None
    return int(m[1]), int(m[2]), int(m[3] or 0)


class ObjectStore:
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
        self.env = safe_env()
        self.shallow = False
        self.shallow_commits: frozenset[str] = frozenset()
        self.shallow_problem: str | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.dir: Path | None = None

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
        self._tmp = tempfile.TemporaryDirectory(prefix="timeline-shadow-")
        try:
            self.dir = Path(self._tmp.name) / "shadow.git"
            init = ["init", "-q", "--bare", "--template="]
            if self.object_format == "sha256":
                init.append("--object-format=sha256")
            self._run([*init, str(self.dir)], cwd=Path(self._tmp.name), git_dir=False)
            info = self.dir / "objects" / "info"
            info.mkdir(parents=True, exist_ok=True)
            (info / "alternates").write_text(real_objects + "\n", encoding="utf-8")
            self._copy_shallow()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

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
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            detail = err[-1] if err else f"exit status {proc.returncode}"
            raise ObjectStoreError(f"git {args[0]} failed: {detail}")
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

    def _log(self, revs: list[str], *extra: str) -> tuple[bytes, bytes]:
        """``git log`` with commit fields and touched paths: ``(record marker, raw output)``."""
        marker = secrets.token_hex(8)
        return ("\x1e" + marker).encode(), self._run(["log", "--no-textconv", "--no-ext-diff", "--no-renames", "--no-color",
                          "--no-show-signature", "--no-notes", "--diff-merges=first-parent",
                          "--name-only", "-z", f"--format=%x1e{marker}{_LOG_FIELDS}", *extra,
                          "--end-of-options", *revs])

    def describe(self, shas) -> dict[str, CommitInfo]:
        """``{sha: CommitInfo}`` for the given commits themselves (no walk): one ``git log
        --no-walk`` per 500 commits."""
        wanted = list(dict.fromkeys(self._check(shas)))
        found: dict[str, CommitInfo] = {}
        for i in range(0, len(wanted), _NO_WALK_CHUNK):
            chunk = wanted[i:i + _NO_WALK_CHUNK]
            marker, out = self._log(chunk, "--no-walk=unsorted")
            for _mark, info in _parse_log(out, marker, self.shallow_commits):
                found[info.sha] = info
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
        """``between`` for many distinct (old, new) pairs, a few git processes at a time."""
        pairs = list(dict.fromkeys(pairs))

        def one(pair):
            try:
                return pair, self.between(*pair)
            except ObjectStoreError as exc:
                return pair, exc

        if len(pairs) <= 1:
            return dict(one(p) for p in pairs)
        with ThreadPoolExecutor(max_workers=min(_WORKERS, len(pairs))) as pool:
            return dict(pool.map(one, pairs))


def _date(raw: bytes) -> datetime | None:
    try:
        return datetime.fromisoformat(raw.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None


def _parse_log(out: bytes, marker: bytes, shallow: frozenset[str] = frozenset()):
    """``git log -z --name-only --format=<marker>%m%H...`` output -> ``(mark, CommitInfo)``.

    Each record: the format line, NUL, LF, then the touched paths, each NUL-terminated.
    A commit listed in ``shallow`` (a shallow-clone boundary: its parents are not here) gets
    ``paths=None``: git would compare it with an empty tree and list every file.
    """
    for record in out.split(marker)[1:]:
        head, _, rest = record.partition(b"\0")
        fields = head.split(b"\x1f", 5)
        if len(fields) != 6:
            continue
        mark_sha, author_date, committer_date, email, name, subject = fields
        mark, sha = mark_sha[:1].decode("ascii", "replace"), mark_sha[1:].decode("ascii", "replace")
        if not _SHA.match(sha):
            continue
        if rest.startswith(b"\n"):
            rest = rest[1:]
        paths: tuple[str, ...] | None = tuple(
            p.decode("utf-8", "replace") for p in rest.split(b"\0") if p)
        if sha in shallow:
            paths = None
        yield mark, CommitInfo(
            sha=sha, subject=subject.decode("utf-8", "replace"),
            author=name.decode("utf-8", "replace"), author_email=email.decode("utf-8", "replace"),
            author_date=_date(author_date), committer_date=_date(committer_date), paths=paths)
