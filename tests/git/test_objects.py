"""The object store git reads is the repository's own, regular files only (``borrow_objects``).

Each case is an attack that worked before: an ``objects/info/alternates`` naming another
repository (its commits came into the report), ``/dev/zero`` (git grew to gigabytes) or a FIFO
(every git call stalled until its 300 s timeout); a pack linked from another repository; a FIFO
as a loose object. Each repository is built by real git commands.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from timeline.git import read_history
from timeline.git.objects import REFUSED_ALTERNATES

SECRET = "another repository's commit"


def history_within(repo: Path, seconds: float = 60):
    """``read_history(repo)``, failing the test (not hanging it) when it blocks."""
    done: list = []
    reader = threading.Thread(target=lambda: done.append(read_history(repo)), daemon=True)
    reader.start()
    reader.join(seconds)
    assert done, f"read_history blocked for {seconds} s"
    return done[0]


def subjects(history) -> set[str]:
    return {c.subject for e in history.events for c in (*e.commits, *e.commits_removed)}


def said(history, path: Path) -> list[str]:
    return [d.message for d in history.diagnostics if d.source == os.fspath(path)]


@pytest.fixture
def borrowed(bench):
    """A checkout whose HEAD moved to a commit that only another repository holds, borrowed
    through ``objects/info/alternates``; returns (checkout, the other repository)."""
    other = bench.init("other")
    bench.commit(SECRET, cwd=other)
    repo = bench.init("victim")
    bench.commit("own base")
    (repo / ".git/objects/info/alternates").write_text(f"{other / '.git/objects'}\n")
    bench.git("update-ref", "-m", "pull: Fast-forward", "HEAD", bench.sha(cwd=other))
    return repo, other


def test_alternates_naming_another_repository_are_refused(borrowed):
    repo, _ = borrowed
    history = history_within(repo)
    assert SECRET not in subjects(history)  # before: listed as brought in by the pull
    assert said(history, repo / ".git/objects/info/alternates") == [REFUSED_ALTERNATES]
    assert any("is not in the object store" in d.message for d in history.diagnostics)


@pytest.mark.parametrize("plant", ["fifo", "dev-zero"])
def test_alternates_that_never_end_are_never_opened(borrowed, plant):
    repo, _ = borrowed
    alternates = repo / ".git/objects/info/alternates"
    alternates.unlink()
    if plant == "fifo":
        os.mkfifo(alternates)  # before: every git call blocked until its 300 s timeout
    else:
        alternates.symlink_to("/dev/zero")  # before: git read it without end (4.9 GB)
    history = history_within(repo)
    assert said(history, alternates) == [REFUSED_ALTERNATES]
    assert [e.kind for e in history.events][:1] == ["commit"] and history.events[0].commits


def test_a_pack_linked_from_another_repository_is_refused(bench):
    other = bench.init("other")
    bench.commit(SECRET, cwd=other)
    bench.git("repack", "-a", "-d", "-q", cwd=other)
    repo = bench.init("victim")
    bench.commit("own base")
    for pack in (other / ".git/objects/pack").glob("pack-*.*"):
        if pack.suffix in (".pack", ".idx"):
            (repo / ".git/objects/pack" / pack.name).symlink_to(pack)
    bench.git("update-ref", "-m", "pull: Fast-forward", "HEAD", bench.sha(cwd=other))
    history = history_within(repo)
    assert SECRET not in subjects(history)  # before: listed as brought in by the pull
    refused = [d for d in history.diagnostics if "a symbolic link in the object store" in d.message]
    assert sorted(Path(d.source).suffix for d in refused) == [".idx", ".pack"]
    assert {"own base"} <= subjects(history)


def test_a_fifo_as_a_loose_object_is_never_opened(bench):
    repo = bench.init("victim")
    bench.commit("own base")
    pulled = bench.commit("pulled")
    kept = bench.commit("kept")
    bench.git("reset", "-q", "--hard", "HEAD~2")
    bench.git("merge", "-q", "--ff-only", kept)
    loose = repo / ".git/objects" / pulled[:2] / pulled[2:]
    loose.unlink()
    os.mkfifo(loose)  # before: git blocked opening it until its timeout
    history = history_within(repo)
    assert said(history, loose) == ["not a regular file (a FIFO, socket or device?): refused, never opened"]
    # the rest of the store is still read; the move across the missing commit is said, not guessed
    assert "own base" in subjects(history)
    assert any(d.message.endswith("commits of e4 not listed") for d in history.diagnostics)


def test_a_checkout_without_tricks_loses_nothing(bench):
    repo = bench.init("victim")
    for n in range(3):
        bench.commit(f"c{n}")
    bench.git("repack", "-q", "-d")
    bench.commit("c3")
    history = history_within(repo)
    assert {"c0", "c1", "c2", "c3"} <= subjects(history)
    assert not [d for d in history.diagnostics if "object store" in d.message or "refused" in d.message]
    assert shutil.which("git")


def test_a_checkout_whose_path_holds_a_newline_is_read(bench):
    # git's alternates file is a line a path, but it names our own view of the objects, never
    # the checkout's path: a checkout in "nightly\nrun" lists its commits like any other
    # (before, its path was refused as one that could not be written to an alternates file)
    repo = bench.init("nightly\nrun")
    bench.commit("c0")
    bench.commit("c1")
    history = history_within(repo)
    assert {"c0", "c1"} <= subjects(history)
    assert not [d for d in history.diagnostics if "alternates" in d.message]
