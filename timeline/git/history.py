"""``read_history``: a checkout's HEAD reflog as ``CodeEvent``s, with the commits each move
brought in or took away.

Pipeline: locate the git dirs (files only) -> read and parse the HEAD log of *that* worktree
(tolerant parser) -> group entries (rebase / pull --rebase bursts collapse, branch-rename pairs
merge) -> one ``CodeEvent`` per group -> list commits through a shadow repository.
Events stay in FILE ORDER; they are never sorted by time.

A collapsed group (burst or rename pair) has ``old`` = its first entry's old, ``new`` = its
last entry's new, ``message``/``line`` of its FIRST entry, and ``time``/``ts`` of its LAST
entry (the moment the net result was in place; for a burst written in one second they agree).
``GitHistory.spans`` gives each collapsed event's first line, last line and entry count.

Commit lists: ``commits`` = what the move brought in (``rev-list old..new`` side),
``commits_removed`` = what left HEAD's history (``new..old`` side), both NEWEST FIRST as
``git rev-list`` prints them; from a zero old id (clone, initial commit, new worktree) only the
new commit itself is listed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone

from parsers.records import Diagnostic

from timeline.git.classify import Group, group_entries, match_stashes
from timeline.git.locate import GitLocation, locate, resolve_head
from timeline.git.objects import ObjectStore, ObjectStoreError, valid_sha
from timeline.git.reflog import ReflogEntry, load_reflog, parse_reflog
from timeline.model import CodeEvent, is_zero_sha

__all__ = ["GitHistory", "read_history"]


@dataclass
class GitHistory:
    path: str                  # the worktree root we resolved
    git_dir: str
    common_dir: str
    head: str | None           # sha HEAD resolves to now (from the files); None if unborn
    head_log: str              # path of the HEAD log we read
    events: list[CodeEvent]    # FILE ORDER, never sorted by time; ids "e1", "e2", ...
    diagnostics: list[Diagnostic]
    branch: str | None = None  # "refs/heads/main" when HEAD is attached, None when detached
    object_format: str = "sha1"
    # event id -> (first line, last line, number of reflog entries), for collapsed groups only
    spans: dict[str, tuple[int, int, int]] = field(default_factory=dict)


def _short(sha: str | None) -> str:
    return (sha or "")[:12] or "?"


def read_history(repo: str | os.PathLike) -> GitHistory:
    """Read the HEAD reflog of the worktree containing ``repo``.

    Raises ``GitError`` only when there is no usable repository (not a repo, reftable, a
    broken ``.git`` file or ``commondir``). Everything else -- a missing, empty, symlinked or
    damaged log, missing objects, no git executable -- becomes a diagnostic.
    """
    loc = locate(repo)
    diags: list[Diagnostic] = []
    head = resolve_head(loc)
    diags.extend(head.diagnostics)

    head_log = loc.git_dir / "logs" / "HEAD"
    source = str(head_log)
    data, load_diags = load_reflog(head_log, (loc.git_dir,))
    diags.extend(load_diags)
    entries: list[ReflogEntry] = []
    if data is not None:
        parsed = parse_reflog(data, source, loc.sha_length)
        entries = parsed.entries
        diags.extend(parsed.diagnostics)

    _check_entries(entries, loc, source, diags)
    groups = group_entries(entries)
    _mark_stashes(groups, loc)

    events: list[CodeEvent] = []
    spans: dict[str, tuple[int, int, int]] = {}
    for g in groups:
        event = _event(g, f"e{len(events) + 1}", source, diags)
        if event is None:
            continue
        events.append(event)
        if len(g.entries) > 1:
            spans[event.id] = (g.first.line, g.last.line, len(g.entries))

    if head.sha and entries and entries[-1].new != head.sha and not is_zero_sha(entries[-1].new):
        diags.append(Diagnostic(source, None,
                                f"HEAD now resolves to {_short(head.sha)}, but the last reflog entry "
                                f"(line {entries[-1].line}) moved it to {_short(entries[-1].new)}: HEAD "
                                "moved without a HEAD-log entry (e.g. its branch was updated from "
                                "another worktree)"))

    _attach_commits(events, loc, source, diags)
    return GitHistory(path=str(loc.worktree), git_dir=str(loc.git_dir),
                      common_dir=str(loc.common_dir), head=head.sha, head_log=source,
                      events=events, diagnostics=diags, branch=head.symref,
                      object_format=loc.object_format, spans=spans)


def _check_entries(entries: list[ReflogEntry], loc: GitLocation, source: str,
                   diags: list[Diagnostic]) -> None:
    """Id lengths that do not fit the repository, and breaks in the old/new chain."""
    prev: ReflogEntry | None = None
    for e in entries:
        if len(e.old) != loc.sha_length or len(e.new) != loc.sha_length:
            diags.append(Diagnostic(source, e.line,
                                    f"object id length does not match this {loc.object_format} "
                                    "repository; its commits cannot be looked up"))
        elif (prev is not None and not is_zero_sha(prev.new) and not is_zero_sha(e.old)
              and e.old != prev.new):
            diags.append(Diagnostic(source, e.line,
                                    f"reflog chain gap: this entry starts at {_short(e.old)} but the "
                                    f"previous one ended at {_short(prev.new)} (entries deleted, or "
                                    "HEAD moved without a reflog entry)"))
        prev = e


def _mark_stashes(groups: list[Group], loc: GitLocation) -> None:
    if not any(g.first.message == "reset: moving to HEAD" for g in groups):
        return
    path = loc.common_dir / "logs" / "refs" / "stash"
    data, _ = load_reflog(path, (loc.common_dir,))
    if data:
        match_stashes(groups, parse_reflog(data, str(path), loc.sha_length).entries)


def _event(g: Group, event_id: str, source: str, diags: list[Diagnostic]) -> CodeEvent | None:
    first, last = g.first, g.last
    # A collapsed group took effect when its last entry was written.
    try:
        when = last.when()
    except (ValueError, OverflowError, OSError):
        try:
            when = datetime.fromtimestamp(last.ts, timezone.utc)
            diags.append(Diagnostic(source, last.line,
                                    f"UTC offset {last.tz} is out of range; time shown in UTC"))
        except (ValueError, OverflowError, OSError):
            diags.append(Diagnostic(source, last.line,
                                    f"timestamp {last.ts} is out of range; entry skipped"))
            return None
    old, new = first.old, last.new
    if g.burst and not g.closed:
        diags.append(Diagnostic(source, first.line,
                                f"{g.kind} started here has no (finish) or (abort) entry (still in "
                                f"progress, --quit, or a damaged log); collapsed through line {last.line}"))
    changes = (old != new) and not is_zero_sha(new) and not g.rename
    message = first.display_message
    return CodeEvent(id=event_id, time=when, ts=last.ts, kind=g.kind, message=message,
                     old=old, new=new, changes_commit=changes, ref="HEAD", source=source,
                     line=first.line)


def _attach_commits(events: list[CodeEvent], loc: GitLocation, source: str,
                    diags: list[Diagnostic]) -> None:
    """Fill ``commits`` / ``commits_removed`` for every event that changed the commit."""
    n = loc.sha_length
    todo = [ev for ev in events if ev.changes_commit and valid_sha(ev.new, n)
            and (is_zero_sha(ev.old) or valid_sha(ev.old, n))]
    if not todo:
        return
    try:
        with ObjectStore(loc.common_dir, loc.object_format) as store:
            if store.shallow:
                diags.append(Diagnostic(str(loc.common_dir / "shallow"), None,
                                        "shallow clone: commit lists stop at the shallow boundary"))
            if store.shallow_problem:
                diags.append(Diagnostic(str(loc.common_dir / "shallow"), None, store.shallow_problem))
            shas = {s for ev in todo for s in (ev.old, ev.new) if not is_zero_sha(s)}
            types = store.object_types(sorted(shas))
            present = {s for s, t in types.items() if t == "commit"}
            for s, t in sorted(types.items()):
                if t is not None and t != "commit":
                    diags.append(Diagnostic(source, None, f"object {_short(s)} is a {t}, not a commit"))

            singles: list[CodeEvent] = []
            ranged: list[CodeEvent] = []
            for ev in todo:
                missing = [s for s in (ev.old, ev.new) if not is_zero_sha(s) and s not in present]
                if missing:
                    diags.append(Diagnostic(source, ev.line,
                                            "commit " + ", ".join(_short(s) for s in missing)
                                            + " is not in the object store (pruned, shallow, or "
                                            f"never fetched); commits of {ev.id} not listed"))
                elif is_zero_sha(ev.old):
                    singles.append(ev)
                else:
                    ranged.append(ev)

            if singles:
                try:
                    found = store.describe([ev.new for ev in singles])
                    for ev in singles:
                        if ev.new in found:
                            ev.commits = [found[ev.new]]
                except ObjectStoreError as exc:
                    diags.append(Diagnostic(source, None, str(exc)))

            results = store.between_many((ev.old, ev.new) for ev in ranged)
            for ev in ranged:
                res = results[(ev.old, ev.new)]
                if isinstance(res, ObjectStoreError):
                    diags.append(Diagnostic(source, ev.line, f"{res}; commits of {ev.id} not listed"))
                    continue
                arrived, left, truncated = res
                ev.commits = list(arrived)
                ev.commits_removed = list(left)
                if truncated:
                    diags.append(Diagnostic(source, ev.line,
                                            f"commit lists of {ev.id} truncated (very long range)"))
    except ObjectStoreError as exc:
        diags.append(Diagnostic(source, None, str(exc)))
