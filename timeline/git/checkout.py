"""Throwaway checkouts of any commit of an untrusted repository, never touching the repository.

``git worktree add`` would write into the repository's ``.git`` (``worktrees/``, a lock, the new
worktree's index and HEAD). A ``ScratchCheckout`` is ``ObjectStore``'s shadow instead: a bare
repository of our own in a temporary folder, its ``objects/info/alternates`` naming the
repository's object store, its config empty and git's system and global config ignored. A commit
is written into a fresh folder next to it with the plumbing
``git --git-dir=SHADOW --work-tree=WT read-tree COMMIT`` and ``checkout-index -a -f``
(https://git-scm.com/docs/git-read-tree, https://git-scm.com/docs/git-checkout-index): they run no
hook, and the only config git reads is ours, so no filter driver, fsmonitor or pager the
repository's config names can run (a ``.gitattributes`` in the tree can ask for a filter, but its
command would have to be in config). Submodules are not checked out (their folders stay empty),
and the checkout has no ``.git``.

Revisions are read the same way: only hex ids, after ``--end-of-options``. Leaving the ``with``
block removes the whole folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import cast

from timeline.git.locate import GitLocation
from timeline.git.objects import ObjectStore, ObjectStoreError
from timeline.git.runner import run_safe_git

__all__ = ["ScratchCheckout"]

# What --good and --bad may be: a commit id or a prefix of one (git needs 4 digits or more).
_HEX_PREFIX = re.compile(r"[0-9a-fA-F]{4,64}")
_TIMEOUT_S = 600  # writing out a big tree on a slow disk


class ScratchCheckout(ObjectStore):
    """A shadow of ``location``'s repository that can write any of its commits into a folder of
    its own, ``worktree``, removed with everything else on leaving the ``with`` block::

        with ScratchCheckout(locate("~/sglang")) as scratch:
            good = scratch.resolve("1a2b3c4")
            folder = scratch.check_out(good)
    """

    def __init__(self, location: GitLocation, git: str | None = None) -> None:
        super().__init__(location.common_dir, location.object_format, git)
        self.commit: str | None = None  # the commit ``worktree`` holds

    def __enter__(self) -> ScratchCheckout:
        super().__enter__()
        return self

    @property
    def folder(self) -> Path:
        """The temporary folder holding the shadow, the worktree and anything else we put there."""
        if self.dir is None:
            raise ObjectStoreError("the scratch checkout is not open")
        return self.dir.parent

    @property
    def worktree(self) -> Path:
        return self.folder / "worktree"

    def _git(
        self, args: list[str], *, cwd: Path | None = None, work_tree: Path | None = None, ok: tuple[int, ...] = (0,)
    ) -> subprocess.CompletedProcess:
        options = [f"--work-tree={work_tree}"] if work_tree is not None else []
        try:
            proc = run_safe_git(
                cast(str, self.git),  # __enter__ refused a missing git
                [*options, *args],
                cwd=cwd or self.dir,  # type: ignore[arg-type]
                git_dir=str(self.dir),
                memory=self.memory,
                timeout=_TIMEOUT_S,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ObjectStoreError(f"git {args[0]} failed: {exc}") from None
        if proc.returncode not in ok:
            raise ObjectStoreError(self._failure(args, proc.stderr, proc.returncode))
        return proc

    def resolve(self, name: str) -> str:
        """The full id of the commit ``name`` (its id or a unique prefix of 4 hex digits or more);
        ``ObjectStoreError`` (one line) when it is not hex, unknown, ambiguous or not a commit."""
        if not _HEX_PREFIX.fullmatch(name):
            raise ObjectStoreError(f"{name[:80]!r} is not a commit id (4 to 64 hex digits)")
        proc = self._git(["rev-parse", "--verify", "--end-of-options", f"{name.lower()}^{{commit}}"], ok=(0, 128))
        sha = proc.stdout.decode("ascii", "replace").strip()
        if proc.returncode == 0 and len(sha) == self.sha_length:
            return self._check([sha])[0]
        problem = "ambiguous" if b"ambiguous" in proc.stderr else "unknown"
        raise ObjectStoreError(f"{problem} commit {name} in {self.common_dir}")

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is an ancestor of ``newer`` (or the same commit)."""
        older, newer = self._check([older, newer])
        proc = self._git(["merge-base", "--is-ancestor", "--end-of-options", older, newer], ok=(0, 1))
        return proc.returncode == 0

    def first_parent_line(self, older: str, newer: str) -> list[str]:
        """The commits on ``newer``'s first-parent line that descend from ``older``, oldest first:
        ``git rev-list --first-parent --ancestry-path older..newer``, what ``git bisect
        --first-parent`` searches."""
        older, newer = self._check([older, newer])
        proc = self._git(
            ["rev-list", "--first-parent", "--ancestry-path", "--reverse", "--end-of-options", newer, f"^{older}"]
        )
        return self._check(proc.stdout.decode("ascii", "replace").split())

    def first_parent(self, commit: str) -> str | None:
        """``commit``'s first parent, or None for a root commit."""
        (commit,) = self._check([commit])
        proc = self._git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^1"], ok=(0, 1))
        found = proc.stdout.decode("ascii", "replace").strip()
        return self._check([found])[0] if proc.returncode == 0 and found else None

    def check_out(self, commit: str) -> Path:
        """Write ``commit``'s files into a fresh, empty ``worktree`` (what the last commit left
        there, builds included, is removed first) and return its path."""
        (commit,) = self._check([commit])
        self.commit = None
        worktree = self.worktree
        if worktree.exists():
            _remove_tree(worktree)
        worktree.mkdir()
        self._git(["read-tree", "--end-of-options", commit], cwd=worktree, work_tree=worktree)
        self._git(["checkout-index", "--all", "--force"], cwd=worktree, work_tree=worktree)
        self.commit = commit
        return worktree


def _remove_tree(folder: Path) -> None:
    """``shutil.rmtree``, making read-only folders writable first (a build may leave them so:
    ``tempfile.TemporaryDirectory`` does the same); one line of error if it still fails."""

    def writable_then_again(remove, path, _info) -> None:
        for target in (os.path.dirname(path), path):
            with contextlib.suppress(OSError):
                os.chmod(target, 0o700)
        remove(path)

    try:
        shutil.rmtree(folder, onerror=writable_then_again)
    except OSError as exc:
        raise ObjectStoreError(f"the previous commit's checkout could not be removed: {exc}") from None
