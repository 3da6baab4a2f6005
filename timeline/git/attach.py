"""The commits of each move: what it brought in (``old..new``) and what it took away
(``new..old``), listed through the shadow repository (``ObjectStore``) with a constant number
of git processes however many moves (https://git-scm.com/docs/git-rev-list,
https://git-scm.com/docs/git-log).
"""

from __future__ import annotations

from timeline.git.events import short_sha
from timeline.git.locate import GitLocation
from timeline.git.objects import ObjectStore, ObjectStoreError
from timeline.git.runner import valid_sha
from timeline.model import CodeEvent, is_zero_sha
from timeline.records import Diagnostic

__all__ = ["attach_commits", "MAX_SAID_ALONE"]

MAX_SAID_ALONE = 5  # events whose commits could not be listed, each said; more: the first ones and a count


def attach_commits(events: list[CodeEvent], loc: GitLocation, source: str, diags: list[Diagnostic]) -> None:
    """Fill ``commits`` / ``commits_removed`` for every event that changed the commit."""
    n = loc.sha_length
    moving = [ev for ev in events if ev.changes_commit]
    # each distinct id checked once (a 100,000-entry reflog names 20,000 commits 200,000 times)
    valid = {sha for sha in {s for ev in moving for s in (ev.old, ev.new)} if valid_sha(sha, n)}
    todo = [ev for ev in moving if ev.new in valid and (ev.old in valid or is_zero_sha(ev.old))]
    if not todo:
        return
    try:
        with ObjectStore(loc.common_dir, loc.object_format) as store:
            _say_shallow(store, loc, diags)
            singles, ranged, unlisted = _sorted_out(todo, store, source, diags)
            # a constant number of git processes for all of them: ONE walk describing every
            # range's commits; the new commit of each single, when the walk did not read it,
            # in ONE more
            _attach_ranges(ranged, store, unlisted, diags)
            diags.extend(_few(unlisted))
            if singles:
                _attach_singles(singles, store, source, diags)
            if store.shallow_commits:
                _say_boundaries(todo, store, diags)
    except ObjectStoreError as exc:
        diags.append(Diagnostic(source, None, str(exc)))


def _say_shallow(store: ObjectStore, loc: GitLocation, diags: list[Diagnostic]) -> None:
    if store.shallow:
        diags.append(
            Diagnostic(
                str(loc.common_dir / "shallow"), None, "shallow clone: commit lists stop at the shallow boundary"
            )
        )
    if store.shallow_problem:
        diags.append(Diagnostic(str(loc.common_dir / "shallow"), None, store.shallow_problem))
    diags.extend(Diagnostic(path, None, why) for path, why in store.refused)


def _sorted_out(
    todo: list[CodeEvent], store: ObjectStore, source: str, diags: list[Diagnostic]
) -> tuple[list[CodeEvent], list[CodeEvent], list[Diagnostic]]:
    """``(singles, ranged, unlisted)``: the events from nothing (only the new commit is listed),
    those with a range, and a diagnostic for each whose commits are not in the store."""
    shas = {sha for sha in {s for ev in todo for s in (ev.old, ev.new)} if not is_zero_sha(sha)}
    types = store.object_types(sorted(shas))
    present = {s for s, t in types.items() if t == "commit"}
    for s, t in sorted(types.items()):
        if t is not None and t != "commit":
            diags.append(Diagnostic(source, None, f"object {short_sha(s)} is a {t}, not a commit"))
    singles: list[CodeEvent] = []
    ranged: list[CodeEvent] = []
    unlisted: list[Diagnostic] = []
    for ev in todo:
        if ev.old in present and ev.new in present:  # (present holds no zero id)
            ranged.append(ev)
            continue
        missing = [s for s in (ev.old, ev.new) if not is_zero_sha(s) and s not in present]
        if missing:
            unlisted.append(
                Diagnostic(
                    ev.source,
                    ev.line,
                    "commit "
                    + ", ".join(short_sha(s) for s in missing)
                    + " is not in the object store (pruned, shallow, or "
                    f"never fetched); commits of {ev.id} not listed",
                )
            )
        elif is_zero_sha(ev.old):
            singles.append(ev)
        else:
            ranged.append(ev)
    return singles, ranged, unlisted


def _attach_ranges(
    ranged: list[CodeEvent], store: ObjectStore, unlisted: list[Diagnostic], diags: list[Diagnostic]
) -> None:
    results = store.between_many((ev.old, ev.new) for ev in ranged)
    for ev in ranged:
        res = results[(ev.old, ev.new)]
        if isinstance(res, ObjectStoreError):
            unlisted.append(Diagnostic(ev.source, ev.line, f"{res}; commits of {ev.id} not listed"))
            continue
        arrived, left, truncated = res
        ev.commits = arrived
        ev.commits_removed = left
        if truncated:
            diags.append(Diagnostic(ev.source, ev.line, f"commit lists of {ev.id} truncated (very long range)"))


def _attach_singles(singles: list[CodeEvent], store: ObjectStore, source: str, diags: list[Diagnostic]) -> None:
    try:
        found = store.describe([ev.new for ev in singles])
        for ev in singles:
            if ev.new in found:
                ev.commits = [found[ev.new]]
    except ObjectStoreError as exc:
        diags.append(Diagnostic(source, None, str(exc)))


def _say_boundaries(todo: list[CodeEvent], store: ObjectStore, diags: list[Diagnostic]) -> None:
    for ev in todo:
        boundary = [c.sha for c in (*ev.commits, *ev.commits_removed) if c.sha in store.shallow_commits]
        if boundary:
            diags.append(
                Diagnostic(
                    ev.source,
                    ev.line,
                    "shallow-clone boundary: the parents of "
                    + ", ".join(short_sha(s) for s in boundary)
                    + f" are not in this clone; the commits of {ev.id} stop there and "
                    "the boundary commit's paths are not listed",
                )
            )


def _few(unlisted: list[Diagnostic]) -> list[Diagnostic]:
    """``unlisted`` as they are, or, for a file with many (an old checkout whose early moves were
    gc'd: thousands), its first ``MAX_SAID_ALONE - 1`` and one line for the rest."""
    by_file: dict[str, list[Diagnostic]] = {}
    for diag in unlisted:
        by_file.setdefault(diag.source, []).append(diag)
    said: list[Diagnostic] = []
    for source, diags in by_file.items():
        if len(diags) <= MAX_SAID_ALONE:
            said += diags
            continue
        rest = diags[MAX_SAID_ALONE - 1 :]
        lines = [d.line for d in rest if d.line is not None]
        where = f" (lines {min(lines)}-{max(lines)})" if lines else ""
        said += diags[: MAX_SAID_ALONE - 1]
        said.append(
            Diagnostic(
                source,
                rest[0].line,
                f"and {len(rest):,} more events whose commits are not listed{where}: objects "
                "not in the store (pruned, shallow, or never fetched) or unreadable",
            )
        )
    return said
