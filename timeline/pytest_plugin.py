"""pytest fixtures for testing tools that read SGLang logs and reflogs, shipped with timeline.

Registered through the ``pytest11`` entry point, so any project that installs timeline has them
(``pytest -p no:timeline`` turns them off):

- ``captured_log``: ``captured_log("sglang-0.5-eagle3")`` is the path of a log shipped inside the
  package, written by hand in the real format of its release; ``captured_log.names()`` lists
  them; ``captured_log.expected(name)`` the golden values recorded for it (or None).
- ``reflog_repo``: ``reflog_repo([("clone", t0), ("pull", t1, 3), ("reset", t2, "HEAD~1")])`` builds a
  real git checkout in ``tmp_path`` whose reflog holds those moves at those times, and returns a
  ``ReflogRepo`` (``path, shas = reflog_repo(...)`` unpacks it).
- ``timeline_build``: ``timeline_build(logs, repo=path)`` runs ``timeline.build`` (log times read
  as UTC unless ``log_tz`` says otherwise) and returns the ``Timeline``.

This module stays light: it is imported by every pytest session of a project that has timeline
installed, so git, the parsers and pandas are only imported when a fixture is used.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "CapturedLogs",
    "ReflogRepo",
    "ReflogRepoFactory",
    "captured_log",
    "reflog_repo",
    "timeline_build",
    "fixtures_root",
]

LOG_PATTERNS = ("*.log", "*.txt", "*.out", "*.log.gz", "*.log.bz2", "*.log.xz")


def fixtures_root() -> Path:
    """Where the captured logs are: inside the installed package (``timeline/fixtures``), or, in a
    source checkout (an editable install), the top-level ``fixtures/`` folder they are built from."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "fixtures", package.parent / "fixtures"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no captured logs found next to {package} (expected {package / 'fixtures'})")


class CapturedLogs:
    """The captured logs shipped with timeline, by name (the file name without ``.log``)."""

    def __init__(self, root: Path | None = None):
        self.root = root or fixtures_root()

    def _index(self) -> dict[str, Path]:
        found: dict[str, Path] = {}
        for pattern in LOG_PATTERNS:
            for path in self.root.rglob(pattern):
                found.setdefault(_log_name(path), path)
        return dict(sorted(found.items()))

    def names(self) -> list[str]:
        """Every captured log's name, sorted: ``["sglang-0.3-time-only", "sglang-0.4-tp2", ...]``."""
        return list(self._index())

    def __call__(self, name: str) -> Path:
        """The path of the captured log ``name`` (with or without its ``.log`` suffix)."""
        index = self._index()
        key = _log_name(Path(name))
        if key not in index:
            raise LookupError(f"no captured log named {name!r}; there are: {', '.join(index) or 'none'}")
        return index[key]

    def expected(self, name: str) -> dict[str, Any] | None:
        """The golden values recorded next to the log (``NAME.expected.json``), or None."""
        path = self(name)
        golden = path.with_name(_log_name(path) + ".expected.json")
        return json.loads(golden.read_text(encoding="utf-8")) if golden.is_file() else None

    def __repr__(self) -> str:
        return f"CapturedLogs({str(self.root)!r}, {len(self.names())} logs)"


def _log_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".bz2", ".xz"):
        name = name.removesuffix(suffix)
    for suffix in (".log", ".txt", ".out"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@dataclass
class ReflogRepo:
    """A checkout built by ``reflog_repo``.

    ``shas`` names every commit made, in order: ``c1``, ``c2``... (upstream commits and local ones
    share the numbering); ``heads`` is HEAD's commit after each step; ``upstream`` is the
    repository it was cloned from. ``path, shas = repo`` unpacks the two used most.
    """

    path: Path
    shas: dict[str, str]
    upstream: Path
    heads: list[str] = field(default_factory=list)
    subjects: dict[str, str] = field(default_factory=dict)

    @property
    def head(self) -> str:
        return self.heads[-1]

    def name_of(self, sha: str) -> str | None:
        """The ``cN`` name of a commit, or None (a merge commit made by a pull)."""
        return next((name for name, known in self.shas.items() if known == sha), None)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.path, self.shas))


def _instant(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, timezone.utc)
    if isinstance(value, str):
        return _instant(datetime.fromisoformat(value))
    raise TypeError(f"a step's time must be a datetime, an ISO-8601 string or epoch seconds, not {value!r}")


class ReflogRepoFactory:
    """Builds real git checkouts whose reflog holds the moves it is given, at the times given.

    Steps, each ``(kind, time, argument)``; times are datetimes (naive = UTC), ISO strings or
    epoch seconds, and should increase:

    - ``("clone", t)`` / ``("clone", t, n)``: an upstream with ``n`` commits (default 1), cloned at t;
    - ``("pull", t, n)``: ``n`` new upstream commits (or a list of subjects), then ``git pull`` at t;
    - ``("commit", t)`` / ``("commit", t, "subject")``: a local commit in the checkout;
    - ``("reset", t, target)``: ``git reset --hard`` to ``HEAD~1``, a commit name (``c4``) or a sha;
    - ``("checkout", t, target)``: ``git checkout --detach`` to a commit name, a sha or a ref.

    Runs only our own git commands in folders it creates, isolated from the user's configuration.
    """

    def __init__(self, root: Path):
        self.root = root
        self.count = 0

    def __call__(self, steps: Sequence[tuple[Any, ...]], *, name: str = "checkout") -> ReflogRepo:
        from timeline.scenario import GitScript

        if not steps or steps[0][0] != "clone":
            raise ValueError("the first step must be ('clone', time[, n_commits])")
        self.count += 1
        base = self.root / f"reflog-repo-{self.count}"
        git = GitScript(base / "home")
        upstream, checkout = base / "upstream", base / name
        upstream.mkdir(parents=True)
        repo = ReflogRepo(checkout, {}, upstream)
        previous: datetime | None = None
        for step in steps:
            if not isinstance(step, (tuple, list)) or len(step) < 2:
                raise ValueError(f"a step is (kind, time[, argument]), not {step!r}")
            kind, at, *rest = step
            at = _instant(at)
            argument = rest[0] if rest else None
            if kind == "clone":
                if repo.heads:
                    raise ValueError("only the first step may be a clone")
                git.git(upstream, "init", "-q", at=at - timedelta(hours=1))
                self._upstream_commits(git, repo, argument if argument is not None else 1, previous, at)
                git.git(base, "clone", "-q", str(upstream), str(checkout), at=at)
            elif kind == "pull":
                self._upstream_commits(git, repo, argument if argument is not None else 1, previous, at)
                git.git(checkout, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "main", at=at)
            elif kind == "commit":
                _commit(git, repo, checkout, argument, at)
            elif kind == "reset":
                git.git(checkout, "reset", "-q", "--hard", self._target(repo, argument or "HEAD~1"), at=at)
            elif kind == "checkout":
                if argument is None:
                    raise ValueError("('checkout', time, target) needs a target")
                git.git(checkout, "checkout", "-q", "--detach", self._target(repo, argument), at=at)
            else:
                raise ValueError(f"unknown step {kind!r} (clone, pull, commit, reset, checkout)")
            repo.heads.append(git.git(checkout, "rev-parse", "HEAD", at=at))
            previous = at
        return repo

    @staticmethod
    def _target(repo: ReflogRepo, target: str) -> str:
        return repo.shas.get(target, target)

    @staticmethod
    def _upstream_commits(
        git, repo: ReflogRepo, what: int | Sequence[str], previous: datetime | None, at: datetime
    ) -> None:
        subjects = list(what) if not isinstance(what, int) else [None] * what
        start = previous if previous is not None else at - timedelta(hours=1)
        for index, subject in enumerate(subjects):
            moment = start + (at - start) * (index + 1) / (len(subjects) + 1)
            _commit(git, repo, repo.upstream, subject, moment.replace(microsecond=0))


def _commit(git, repo: ReflogRepo, where: Path, subject: str | None, at: datetime) -> None:
    """Commit a new file ``changes/cN.txt`` in ``where``; the commit is named ``cN``."""
    name = f"c{len(repo.shas) + 1}"
    subject = subject or name
    (where / "changes").mkdir(exist_ok=True)
    (where / "changes" / f"{name}.txt").write_text(subject + "\n", encoding="utf-8")
    git.git(where, "add", "-A", at=at)
    git.git(where, "commit", "-q", "-m", subject, at=at)
    repo.shas[name] = git.git(where, "rev-parse", "HEAD", at=at)
    repo.subjects[name] = subject


@pytest.fixture
def captured_log() -> CapturedLogs:
    """``captured_log("sglang-0.5-eagle3")`` -> Path of a captured SGLang log shipped with timeline;
    ``captured_log.names()`` lists them. The files are shared: copy one before changing it."""
    return CapturedLogs()


@pytest.fixture
def reflog_repo(tmp_path: Path) -> ReflogRepoFactory:
    """``reflog_repo([("clone", t0), ("pull", t1, 3), ("reset", t2, "HEAD~1")])`` -> ReflogRepo:
    a real git checkout in tmp_path whose reflog holds those moves at those times."""
    return ReflogRepoFactory(tmp_path)


@pytest.fixture
def timeline_build():
    """``timeline_build(paths, repo=None, log_tz="UTC", **options)`` -> Timeline (``timeline.build``).

    ``paths`` is one path or a list; log times are read as UTC unless ``log_tz`` says otherwise.
    The parse cache is off (tests leave nothing in the user's cache folder) unless ``cache=True``."""

    def run(
        paths: str | os.PathLike | Sequence[str | os.PathLike],
        repo: str | os.PathLike | None = None,
        log_tz: str | Sequence[str] | None = "UTC",
        **options: Any,
    ):
        import timeline

        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        options.setdefault("cache", False)
        return timeline.build(list(paths), repo=repo, log_tz=log_tz, **options)

    return run
