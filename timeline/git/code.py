"""``read_code``: the code facts a culprit ranking needs (which files of a version the server can
import, which lines a commit changed), read from git objects through one shadow repository
(``ObjectStore``): nothing of the untrusted repository runs, nothing in it is written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from timeline.git.errors import GitError
from timeline.git.locate import locate
from timeline.git.objects import MAX_BLOB_BYTES, ObjectStore, ObjectStoreError, valid_sha
from timeline.imports import ChangedLine, CodeFacts, Reach, reachable

__all__ = ["read_code"]

# How many unreadable files a problem line names before it says "and N more".
_NAMED_FILES = 3


def read_code(repo: str | os.PathLike, versions: Sequence[str], commits: Sequence[str],
              entries: Sequence[str], max_blob_bytes: int = MAX_BLOB_BYTES) -> CodeFacts:
    """For each of ``versions`` (the commits that ran), which files ``entries`` (dotted module
    names, ``imports.DEFAULT_ENTRIES``) can import; for each of ``commits`` (the suspects), the
    lines it changed (no ``entries``: no server to start from, no reachability read). ONE
    shadow repository for the whole job; a file's content is read and parsed once however many
    versions hold it. Never raises for a bad repository: what could not be read is
    a line of ``problems``, and the rest is returned."""
    problems: list[str] = []
    try:
        loc = locate(repo)
    except GitError as exc:
        return CodeFacts(problems=[f"code facts unavailable: {exc}"])
    reach: dict[str, Reach] = {}
    changes: dict[str, tuple[ChangedLine, ...]] = {}
    try:
        with ObjectStore(loc.common_dir, loc.object_format) as store:
            present = _commits_present(store, [*versions, *commits], problems)
            blobs = _CachedBlobs(store, max_blob_bytes, problems)
            for version in dict.fromkeys(versions if entries else ()):
                if version in present:
                    found = _reach(store, blobs, version, entries, problems)
                    if found is not None:
                        reach[version] = found
            lacking = [v[:12] for v, found in reach.items() if not found.entries_found]
            if lacking:  # one line for all: a checkout of another project lacks it in every version
                problems.append(f"no entry module ({', '.join(entries)}) found in {', '.join(lacking)}; "
                                "imports not judged (--entry names the server's)")
            changes = _changes(store, [c for c in dict.fromkeys(commits) if c in present], problems)
    except ObjectStoreError as exc:
        problems.append(f"code facts unavailable: {exc}")
    return CodeFacts(reach=reach, changes=changes, problems=problems)


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
        self.unreadable: set[str] = set()     # too big, missing, or git failed on it
        self.parsed: dict = {}                # ``reachable``'s memo: each content parsed once

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


def _reach(store: ObjectStore, blobs: _CachedBlobs, version: str, entries: Sequence[str],
           problems: list[str]) -> Reach | None:
    try:
        files = store.tree(version)
    except ObjectStoreError as exc:
        problems.append(f"files of {version[:12]} not listed: {exc}")
        return None
    found = reachable(files, blobs.reader(files), entries, blobs.parsed)
    if found.unknown:
        named = sorted(found.unknown)
        more = f" and {len(named) - _NAMED_FILES} more" if len(named) > _NAMED_FILES else ""
        problems.append(f"{len(named)} file(s) of {version[:12]} could not be read or parsed "
                        f"({', '.join(named[:_NAMED_FILES])}{more}): their packages counted as imported")
    return found


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
