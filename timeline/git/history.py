"""``read_history``: every way a checkout's HEAD moved, as ``CodeEvent``s, with the commits each
move brought in or took away, read safely from an untrusted repository.

Pipeline (the reflog files and where they are: https://git-scm.com/docs/git-reflog,
https://git-scm.com/docs/gitrepository-layout):

1. locate the git dirs (files only); detect the ref storage (files or reftable);
2. read the HEAD log of *that* worktree (tolerant parser; reftable: ``git reflog`` in a shadow);
   when it is empty or missing, fall back to the current branch's log, as ``git reflog``
   does, with a warning;
3. group entries (rebase / pull --rebase bursts collapse, branch-rename pairs merge, a linked
   worktree's creation lines merge) -> one ``CodeEvent`` per group, in FILE ORDER (never
   sorted by time);
4. merge in the current branch's moves that HEAD's log lacks (another worktree, ``update-ref``
   or a push moved the branch: HEAD moved, files did not): ``ref`` = the branch,
   ``files_may_differ`` = True. They are placed where HEAD's own chain has the gap they fill;
5. read ``logs/refs/remotes/**`` and ``logs/refs/stash`` as CONTEXT (``GitHistory.context``):
   fetches and stashes never move HEAD, so they are not in ``events``;
6. no reflog at all: one APPROXIMATE event from file modification times (``HEAD``, the
   branch's loose ref or ``packed-refs``, ``ORIG_HEAD``), ``approximate`` = True, with a
   warning; never mixed with reflog events;
7. list commits (sha, subject, author, dates, touched paths) through a shadow repository;
8. say where coverage starts (``GitHistory.coverage``).

Steps 3 and 5 are ``timeline.git.events``, 4 ``timeline.git.merge``, 6
``timeline.git.approximation``, 7 ``timeline.git.attach`` and 8 ``timeline.git.coverage``.

A collapsed group (burst or rename pair) has ``old`` = its first entry's old, ``new`` = its
last entry's new, ``message``/``line`` of its FIRST entry, and ``time``/``ts`` of its LAST
entry (the moment the net result was in place). ``GitHistory.spans`` gives each collapsed
event's first line, last line and entry count.

Commit lists: ``commits`` = what the move brought in (``old..new``), ``commits_removed`` =
what left HEAD's history (``new..old``), both NEWEST FIRST as git prints them; from a zero old
id (clone, initial commit, new worktree) only the new commit itself is listed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from timeline.collector import uncollected
from timeline.git.approximation import approximate_events
from timeline.git.attach import attach_commits
from timeline.git.classify import heads_of, special_groups, stashed_positions
from timeline.git.coverage import Coverage, coverage_of
from timeline.git.events import context_events, events_of, short_sha
from timeline.git.locate import (
    GitLocation,
    HeadState,
    UnsafeFile,
    locate,
    resolve_head,
    resolve_inside,
    valid_refname,
)
from timeline.git.merge import merge_branch_moves
from timeline.git.reflog import ReflogEntry, load_reflog, parse_reflog
from timeline.model import CodeEvent, is_zero_sha
from timeline.records import Diagnostic

__all__ = ["GitHistory", "read_history"]

MAX_CONTEXT_LOGS = 2000


@dataclass
class GitHistory:
    path: str  # the worktree root we resolved
    git_dir: str
    common_dir: str
    head: str | None  # sha HEAD resolves to now (from the files); None if unborn
    head_log: str  # path of the HEAD log we read (the branch log on fallback)
    events: list[CodeEvent]  # FILE ORDER, never sorted by time; ids "e1", "e2", ...
    diagnostics: list[Diagnostic]
    branch: str | None = None  # "refs/heads/main" when HEAD is attached, None when detached
    object_format: str = "sha1"
    # event id -> (first line, last line, number of reflog entries), for collapsed groups only
    spans: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # Moves of other refs, for context only (they never move HEAD): fetches into
    # refs/remotes/**, stash entries. ``ref`` names the ref; ids "x1", "x2", ...; per ref in
    # file order, refs sorted by name.
    context: list[CodeEvent] = field(default_factory=list)
    coverage: Coverage | None = None
    ref_storage: str = "files"
    approximate: bool = False  # events come from file modification times, not from a reflog


# --------------------------------------------------------------------------- log sources


class _FilesLogs:
    """Reflogs of the files backend: ``logs/HEAD`` of the worktree, ``logs/refs/...`` shared."""

    old_inferred = False

    def __init__(self, loc: GitLocation):
        self.loc = loc

    def path(self, ref: str) -> Path:
        if ref == "HEAD":
            return self.loc.git_dir / "logs" / "HEAD"
        return self.loc.common_dir / "logs" / Path(*ref.split("/"))

    def source(self, ref: str) -> str:
        return str(self.path(ref))

    def read(self, ref: str) -> tuple[list[ReflogEntry] | None, list[Diagnostic]]:
        """Entries in file order; None when there is no log file (or it was refused)."""
        roots = (self.loc.git_dir,) if ref == "HEAD" else (self.loc.common_dir,)
        data, diags = load_reflog(self.path(ref), roots)
        if data is None:
            return None, diags
        parsed = parse_reflog(data, self.source(ref), self.loc.sha_length)
        return parsed.entries, diags + parsed.diagnostics

    def context_refs(self, diags: list[Diagnostic]) -> list[str]:
        """``refs/remotes/**`` refs that have a log file, sorted, then ``refs/stash``."""
        refs: list[str] = []
        top = self.loc.common_dir / "logs" / "refs" / "remotes"
        stack = [top]
        while stack:
            d = stack.pop()
            try:
                resolve_inside(self.loc.common_dir, d, ".")
                with os.scandir(d) as it:
                    items = list(it)
            except (OSError, UnsafeFile):
                continue
            for item in items:
                try:
                    if item.is_dir(follow_symlinks=False):
                        stack.append(Path(item.path))
                    elif item.is_file(follow_symlinks=False) or item.is_symlink():
                        rel = Path(item.path).relative_to(self.loc.common_dir / "logs")
                        name = "/".join(rel.parts)
                        if valid_refname(name):
                            refs.append(name)
                except (OSError, ValueError):
                    continue
            if len(refs) > MAX_CONTEXT_LOGS:
                diags.append(
                    Diagnostic(
                        str(top), None, f"more than {MAX_CONTEXT_LOGS} remote-tracking logs; the rest are not read"
                    )
                )
                refs = refs[:MAX_CONTEXT_LOGS]
                break
        refs.sort()
        if os.path.lexists(self.path("refs/stash")):
            refs.append("refs/stash")
        return refs


class _ReftableLogs:
    old_inferred = True

    def __init__(self, reader):
        self.reader = reader

    def source(self, ref: str) -> str:
        return self.reader.source(ref)

    def read(self, ref: str):
        return self.reader.read(ref)

    def context_refs(self, diags: list[Diagnostic]) -> list[str]:
        refs = self.reader.list_refs()
        if refs is None:
            diags.append(
                Diagnostic(
                    self.source("refs/remotes"),
                    None,
                    "reftable: listing remote-tracking and stash reflogs needs git "
                    ">= 2.46; fetch and stash context not read",
                )
            )
            return ["refs/stash"]
        remotes = sorted(r for r in refs if r.startswith("refs/remotes/") and valid_refname(r))
        return remotes + (["refs/stash"] if "refs/stash" in refs else [])


# --------------------------------------------------------------------------- entry point


def read_history(repo: str | os.PathLike) -> GitHistory:
    """Read how HEAD moved in the worktree containing ``repo``.

    Raises ``GitError`` only when there is no usable repository (not a repo, a broken ``.git``
    file or ``commondir``). Everything else -- a missing, empty, symlinked or damaged log,
    missing objects, no git executable, a reftable repository without git >= 2.45 -- becomes
    a diagnostic.
    """
    loc = locate(repo)
    diags: list[Diagnostic] = []
    if loc.ref_storage == "reftable":
        return _read_reftable(loc, diags)
    head = resolve_head(loc)
    diags.extend(head.diagnostics)
    return _build(loc, _FilesLogs(loc), head, diags)


def _read_reftable(loc: GitLocation, diags: list[Diagnostic]) -> GitHistory:
    from timeline.git.reftable import ReftableReader, ReftableUnavailable

    try:
        with ReftableReader(loc) as reader:
            sha, symref = reader.head()
            head = HeadState(sha, symref)
            history = _build(loc, _ReftableLogs(reader), head, diags)
            diags.append(
                Diagnostic(
                    reader.source("HEAD"),
                    None,
                    "reftable: reflog read with git reflog (git >= 2.45) in a "
                    "private copy; each entry's old commit is inferred from the "
                    "entry before it, and entries whose commits are missing are "
                    "hidden by git",
                )
            )
            return history
    except ReftableUnavailable as exc:
        diags.append(Diagnostic(str(loc.common_dir / "reftable"), None, str(exc)))
        return GitHistory(
            path=str(loc.worktree),
            git_dir=str(loc.git_dir),
            common_dir=str(loc.common_dir),
            head=None,
            head_log=str(loc.git_dir / "reftable"),
            events=[],
            diagnostics=diags,
            object_format=loc.object_format,
            coverage=Coverage("unread", description=str(exc)),
            ref_storage="reftable",
        )


def _build(loc: GitLocation, logs, head: HeadState, diags: list[Diagnostic]) -> GitHistory:
    with uncollected():  # many small objects, no cycles: see timeline.collector
        return _build_events(loc, logs, head, diags)


def _build_events(loc: GitLocation, logs, head: HeadState, diags: list[Diagnostic]) -> GitHistory:
    log = _read_head_log(logs, head, diags)
    _check_entries(log.entries, loc, log.source, diags)
    # the groups of classify.group_entries, without a Group per plain entry (see events.events_of)
    heads = heads_of(log.entries)
    specials = special_groups(log.entries, heads, linked_worktree=loc.linked_worktree and not log.fallback)

    context, stash_entries = context_events(logs, diags)
    stashed = stashed_positions(log.entries, specials, stash_entries) if stash_entries else set()

    # numbered "e1", "e2"... as made; renumbered below if events are added
    events, collapsed = events_of(log.entries, heads, specials, stashed, log.source, log.ref, diags, logs.old_inferred)
    made = len(events)
    events = _with_branch_moves(events, log, head, logs, diags)

    approximate = False
    if not events and not log.refused and logs.__class__ is _FilesLogs:
        events, approximate_context = _approximation(loc, head, log.head_source, diags)
        approximate = bool(events or approximate_context)
        context = approximate_context + context

    if len(events) != made or approximate:
        for number, event in enumerate(events, 1):
            event.id = f"e{number}"
    spans = {event.id: span for event, span in collapsed}
    for number, event in enumerate(context, 1):
        event.id = f"x{number}"

    attach_commits(events, loc, log.source, diags)
    coverage = coverage_of(events, log.fallback, approximate, logs.old_inferred, log.source, diags)
    return GitHistory(
        path=str(loc.worktree),
        git_dir=str(loc.git_dir),
        common_dir=str(loc.common_dir),
        head=head.sha,
        head_log=log.source,
        events=events,
        diagnostics=diags,
        branch=head.symref,
        object_format=loc.object_format,
        spans=spans,
        context=context,
        coverage=coverage,
        ref_storage=loc.ref_storage,
        approximate=approximate,
    )


@dataclass
class _HeadLog:
    """HEAD's log and the current branch's, and the one the events come from (``entries``,
    read from ``source``): HEAD's, or the branch's when HEAD's is empty or missing."""

    head_source: str
    head_entries: list[ReflogEntry] | None
    branch: str | None  # "refs/heads/..." when HEAD is attached to a branch
    branch_entries: list[ReflogEntry] | None
    refused: bool  # a log exists but was refused: not "no reflog"
    source: str
    ref: str
    entries: list[ReflogEntry]
    fallback: bool  # the branch's log stands in for HEAD's


def _read_head_log(logs, head: HeadState, diags: list[Diagnostic]) -> _HeadLog:
    head_source = logs.source("HEAD")
    head_entries, d = logs.read("HEAD")
    diags.extend(d)
    refused = _refused(d)
    branch = head.symref if head.symref and head.symref.startswith("refs/heads/") else None
    branch_entries: list[ReflogEntry] | None = None
    if branch:
        branch_entries, d = logs.read(branch)
        # a missing branch log is not worth a warning (deleted, reflogs off: HEAD's says so)
        diags.extend(x for x in d if x.code != "no-reflog")
        refused = refused or _refused(d)
    log = _HeadLog(
        head_source,
        head_entries,
        branch,
        branch_entries,
        refused,
        source=head_source,
        ref="HEAD",
        entries=head_entries or [],
        fallback=False,
    )
    if not head_entries and branch_entries and branch is not None:  # (branch_entries: read for branch)
        log.source, log.ref, log.entries, log.fallback = logs.source(branch), branch, branch_entries, True
        _drop_missing_log(diags, head_source)
        state = "empty" if head_entries is not None else "unreadable (see above)" if refused else "missing"
        diags.append(
            Diagnostic(
                head_source,
                None,
                f"HEAD's reflog is {state}: using the log of {branch} instead (as "
                "git reflog does); moves of HEAD to other branches or detached "
                "commits are not in it",
            )
        )
    return log


def _refused(diags: list[Diagnostic]) -> bool:
    """Whether a log exists but was refused (symlink, FIFO, outside the git dir)."""
    return any(x.code == "reflog-unreadable" for x in diags)


def _with_branch_moves(
    events: list[CodeEvent], log: _HeadLog, head: HeadState, logs, diags: list[Diagnostic]
) -> list[CodeEvent]:
    """``events`` with the branch's moves HEAD's log lacks (``merge.merge_branch_moves``); says
    when HEAD now is not where the last of them left it."""
    tail_explained = False
    if not log.fallback and log.branch_entries and log.branch is not None and events:
        events, tail_explained = merge_branch_moves(
            events,
            log.head_entries or [],
            log.branch_entries,
            log.branch,
            logs.source(log.branch),
            head.sha,  # type: ignore[arg-type]
            diags,
            logs.old_inferred,
        )
    entries = log.entries
    if (
        not tail_explained
        and head.sha
        and entries
        and entries[-1].new != head.sha
        and not is_zero_sha(entries[-1].new)
        and not logs.old_inferred
    ):
        diags.append(
            Diagnostic(
                log.source,
                None,
                f"HEAD now resolves to {short_sha(head.sha)}, but the last reflog entry "
                f"(line {entries[-1].line}) moved it to {short_sha(entries[-1].new)}: HEAD "
                "moved without a reflog entry",
            )
        )
    return events


def _drop_missing_log(diags: list[Diagnostic], source: str) -> None:
    """Forget that ``source`` has no reflog file: something else stands in for it."""
    diags[:] = [x for x in diags if not (x.source == source and x.code == "no-reflog")]


def _approximation(
    loc: GitLocation, head: HeadState, head_source: str, diags: list[Diagnostic]
) -> tuple[list[CodeEvent], list[CodeEvent]]:
    """No reflog at all: ``approximation.approximate_events``, which stand in for the missing log."""
    events, context = approximate_events(loc, head, diags)
    if events or context:
        _drop_missing_log(diags, head_source)
    return events, context


# --------------------------------------------------------------------------- checks


def _check_entries(entries: list[ReflogEntry], loc: GitLocation, source: str, diags: list[Diagnostic]) -> None:
    """Id lengths that do not fit the repository, and breaks in the old/new chain."""
    prev_new: str | None = None  # the previous entry's new id
    n = loc.sha_length
    for e in entries:
        old, new = e.old, e.new
        if len(old) != n or len(new) != n:
            diags.append(
                Diagnostic(
                    source,
                    e.line,
                    f"object id length does not match this {loc.object_format} "
                    "repository; its commits cannot be looked up",
                )
            )
        elif prev_new is not None and old != prev_new and not is_zero_sha(prev_new) and not is_zero_sha(old):
            diags.append(
                Diagnostic(
                    source,
                    e.line,
                    f"reflog chain gap: this entry starts at {short_sha(old)} but the "
                    f"previous one ended at {short_sha(prev_new)} (entries deleted, "
                    "or HEAD moved without a reflog entry)",
                    "reflog-chain-gap",
                )
            )
        prev_new = new
