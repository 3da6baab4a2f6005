"""No reflog at all: one APPROXIMATE event of HEAD from file modification times (``HEAD``, the
branch's loose ref or ``packed-refs``, ``ORIG_HEAD``), and one context event from
``FETCH_HEAD``'s. Which commands write these files: https://git-scm.com/docs/gitrepository-layout,
https://git-scm.com/docs/git-pack-refs.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from timeline.git.events import short_sha
from timeline.git.locate import (
    MAX_SMALL_FILE_BYTES,
    GitLocation,
    HeadState,
    UnsafeFile,
    packed_ref,
    read_small,
    regular_file_mtime,
    resolve_inside,
)
from timeline.git.runner import valid_sha
from timeline.model import CodeEvent
from timeline.records import Diagnostic

__all__ = ["approximate_events", "ORIG_HEAD_WINDOW_S"]

# ORIG_HEAD counts as the old side of the approximate event when written this close to it.
ORIG_HEAD_WINDOW_S = 2


def _read_sha(path: Path, roots: tuple[Path, ...], length: int) -> str | None:
    try:
        data = read_small(resolve_inside(roots, path.parent, path.name), MAX_SMALL_FILE_BYTES)
    except (UnsafeFile, OSError):
        return None
    if not data:
        return None
    text = data.split(b"\n", 1)[0].split(b"\t", 1)[0].strip().decode("ascii", "replace")
    return text if valid_sha(text, length) else None


def approximate_events(
    loc: GitLocation, head: HeadState, diags: list[Diagnostic]
) -> tuple[list[CodeEvent], list[CodeEvent]]:
    """One approximate HEAD event, and a FETCH_HEAD context event, from file mtimes.

    HEAD's file is rewritten by a checkout/switch (not by a commit on a branch); the branch's
    loose ref file by every update of the branch (until ``pack-refs``); ``packed-refs`` when
    refs are packed. The LATER of HEAD's time and the branch's time is when HEAD resolved to
    its current commit at the latest: an upper bound. Anything earlier is unknown.
    """
    roots = (loc.git_dir, loc.common_dir)
    events: list[CodeEvent] = []
    context: list[CodeEvent] = []
    used: list[str] = []
    if head.sha:
        head_file = loc.git_dir / "HEAD"
        t_head = regular_file_mtime(head_file, roots)
        t, kind, what, path = t_head, "checkout", "HEAD was last switched (checkout) at this time", head_file
        if head.symref:
            ref_file = loc.common_dir / Path(*head.symref.split("/"))
            t_ref = regular_file_mtime(ref_file, roots)
            ref_path = ref_file
            if t_ref is None and packed_ref(loc, head.symref):
                ref_path = loc.common_dir / "packed-refs"
                t_ref = regular_file_mtime(ref_path, roots)
            if t_ref is None:
                t = None
            elif t_head is None or t_ref > t_head:
                t, kind, path = t_ref, "other", ref_path
                what = (
                    f"{head.symref} was last written at this time (a commit, pull, merge, reset "
                    "or rebase; or pack-refs)"
                )
        if t is not None:
            ts = int(t)
            old = "0" * loc.sha_length
            orig = loc.git_dir / "ORIG_HEAD"
            t_orig = regular_file_mtime(orig, roots)
            orig_sha = _read_sha(orig, roots, loc.sha_length)
            if t_orig is not None and orig_sha and abs(t_orig - t) <= ORIG_HEAD_WINDOW_S:
                old = orig_sha
                used.append("ORIG_HEAD")
            used.append(str(path.relative_to(loc.git_dir if path.is_relative_to(loc.git_dir) else loc.common_dir)))
            note = (
                f"approximate, from the modification time of {path}: {what}; HEAD held "
                f"{short_sha(head.sha)} from then on at the latest (an upper bound)"
            )
            events.append(
                CodeEvent(
                    id="",
                    time=datetime.fromtimestamp(ts, timezone.utc),
                    ts=ts,
                    kind=kind,
                    message=f"(approximate) {what}",
                    old=old,
                    new=head.sha,
                    changes_commit=old != head.sha,
                    ref="HEAD",
                    source=str(path),
                    line=None,
                    approximate=True,
                    note=note,
                )
            )
    fetch_head = loc.git_dir / "FETCH_HEAD"
    t_fetch = regular_file_mtime(fetch_head, roots)
    fetched = _read_sha(fetch_head, roots, loc.sha_length)
    if t_fetch is not None and fetched:
        used.append("FETCH_HEAD")
        ts = int(t_fetch)
        context.append(
            CodeEvent(
                id="",
                time=datetime.fromtimestamp(ts, timezone.utc),
                ts=ts,
                kind="fetch",
                message="(approximate) the last fetch wrote FETCH_HEAD at this time",
                old="0" * loc.sha_length,
                new=fetched,
                changes_commit=False,
                ref="FETCH_HEAD",
                source=str(fetch_head),
                line=None,
                approximate=True,
                note=f"approximate, from the modification time of {fetch_head}",
            )
        )
    if events or context:
        diags.append(
            Diagnostic(
                str(loc.git_dir / "logs"),
                None,
                "no reflog at all (reflogs disabled, deleted, or expired): times are "
                "APPROXIMATE, from file modification times ("
                + ", ".join(used)
                + "), upper bounds only; what HEAD held before is unknown",
            )
        )
    return events, context
