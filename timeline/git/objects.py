"""Object queries (which commits exist, what a move brought in or took away) through a
shadow repository, so nothing of the untrusted repository's config, hooks, attributes, replace
refs or commit-graph is ever read, and nothing is ever written inside it.

The shadow is ``git init -q --bare`` in a temporary directory of our own whose
``objects/info/alternates`` names ``realpath(common_dir/objects)`` (reference 5.3). git runs
with an environment stripped of every ``GIT_*`` variable plus a fixed safe set, with
``--no-pager -c core.commitGraph=false``, cwd = the shadow. Only validated hex ids are passed,
after ``--end-of-options``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from timeline.git.locate import UnsafeFile, path_inside, read_file_safely, resolve_inside
from timeline.model import CommitInfo

__all__ = ["ObjectStore", "ObjectStoreError", "safe_env", "valid_sha", "MAX_COMMITS_PER_SIDE"]

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
MAX_COMMITS_PER_SIDE = 5000
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

    # ------------------------------------------------------------------ running git
    def _run(self, args: list[str], *, input: bytes | None = None, cwd: Path | None = None,
             git_dir: bool = True) -> bytes:
        cmd = [self.git, "--no-pager"]
        if git_dir:
            cmd.append(f"--git-dir={self.dir}")
        cmd += ["-c", "core.commitGraph=false", "-c", "core.fsmonitor=false",
                "-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0", *args]
        try:
            proc = subprocess.run(cmd, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=None if input is not None else subprocess.DEVNULL,
                                  cwd=cwd or self.dir, env=self.env, timeout=_TIMEOUT_S, check=False)
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

    def describe(self, shas) -> dict[str, CommitInfo]:
        """``{sha: CommitInfo}`` for the given commits themselves (no walk)."""
        wanted = list(dict.fromkeys(self._check(shas)))
        found: dict[str, CommitInfo] = {}
        for i in range(0, len(wanted), _NO_WALK_CHUNK):
            chunk = wanted[i:i + _NO_WALK_CHUNK]
            out = self._run(["rev-list", "--no-walk=unsorted", "--no-commit-header",
                             "--format=%H%x1f%s", "--end-of-options", *chunk])
            for info in _parse_commits(out):
                found[info[1].sha] = info[1]
        return found

    def between(self, old: str, new: str) -> tuple[list[CommitInfo], list[CommitInfo], bool]:
        """One ``rev-list --left-right old...new``: ``(arrived, left, truncated)``.

        ``arrived`` = reachable from new but not old (what the move brought in), ``left`` =
        reachable from old but not new (what left HEAD's history). Forward move: ``left`` is
        empty; backward: ``arrived`` is empty; divergent: both. Newest first, as rev-list
        gives them. Each side is capped at ``MAX_COMMITS_PER_SIDE``.
        """
        old, new = self._check([old, new])
        out = self._run(["rev-list", "--left-right", "--no-commit-header",
                         "--format=%m%H%x1f%s", "--end-of-options", f"{old}...{new}"])
        arrived: list[CommitInfo] = []
        left: list[CommitInfo] = []
        truncated = False
        for mark, info in _parse_commits(out, marked=True):
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


def _parse_commits(out: bytes, marked: bool = False):
    for line in out.split(b"\n"):
        if not line:
            continue
        mark = ""
        if marked:
            mark, line = line[:1].decode("ascii", "replace"), line[1:]
        sha, _, subject = line.partition(b"\x1f")
        text = sha.decode("ascii", "replace")
        if not _SHA.match(text):
            continue
        yield mark, CommitInfo(sha=text, subject=subject.decode("utf-8", "replace"))
