"""Reflogs of a reftable repository (git >= 2.45), read through ``git reflog show`` in a shadow
repository of our own, never in the user's repository.

A reftable repository has no ``.git/logs``: reflog records live in binary tables under
``reftable/`` (per worktree: ``worktrees/NAME/reftable/``). git 2.39 cannot open such a
repository at all (``unknown repository extension found: refstorage``). With git >= 2.45 we:

1. ``git init --bare --ref-format=reftable`` a shadow in a temporary directory (our own,
   empty config; system and global config disabled);
2. copy the untrusted ``tables.list`` and the ``*.ref`` tables it names into it (names
   validated, files read with ``O_NOFOLLOW``, regular files only, size-capped); for a linked
   worktree, its own stack goes to ``shadow/worktrees/wt/reftable`` with a ``commondir`` of
   ``../..``; ``objects/info/alternates`` points at the untrusted object store;
3. run ``git reflog show --no-abbrev --date=raw --format=...`` there.

So the untrusted config, hooks and attributes are never read. Caveats, all reported:

- there is no placeholder for the OLD id of an entry: it is inferred from the next-older
  entry (``CodeEvent.old_inferred``), which is wrong across gaps and deleted entries;
- ``git reflog`` hides entries whose commit object is missing;
- the message-less first line of a new worktree and an empty message look the same.

The format: https://git-scm.com/docs/reftable; the command and its ``--date=raw`` /
``%gd`` placeholders: https://git-scm.com/docs/git-reflog, https://git-scm.com/docs/git-log.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import cast

from timeline.git.locate import GitLocation, UnsafeFile, read_file_safely, resolve_inside
from timeline.git.objects import Shadow
from timeline.git.reflog import ReflogEntry
from timeline.git.runner import git_failure, git_version, memory_ceiling, run_safe_git
from timeline.records import Diagnostic

__all__ = ["MIN_GIT", "ReftableReader", "ReftableUnavailable"]

MIN_GIT = (2, 45, 0)
_LIST_GIT = (2, 46, 0)  # `git reflog list`
_TABLE_NAME = re.compile(r"^0x[0-9a-f]{1,16}-0x[0-9a-f]{1,16}-[0-9a-f]{1,64}\.ref$")
_GD = re.compile(r"@\{(\d+) ([+-]\d{4})\}$")
_HEX = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_MAX_TABLE_BYTES = 256 * 1024 * 1024
_MAX_TABLES = 1000
_TIMEOUT_S = 300


class ReftableUnavailable(Exception):
    """No usable git >= 2.45, or the tables could not be copied. One line."""


def _version_text(v: tuple[int, int, int] | None) -> str:
    return "none found" if v is None else ".".join(map(str, v))


class ReftableReader(Shadow):
    """``with ReftableReader(loc) as rt: rt.head(); rt.read("HEAD")``."""

    def __init__(self, loc: GitLocation, git: str | None = None):
        self.loc = loc
        self.git = git or shutil.which("git")
        self.version = git_version(self.git) if self.git else None
        self.head_dir: Path | None = None  # where HEAD lives (the shadow worktree dir, if linked)
        self.memory: int | None = None  # each git process's ceiling (bytes; runner.memory_ceiling)

    def __enter__(self) -> ReftableReader:
        if self.version is None or self.version < MIN_GIT:
            raise ReftableUnavailable(
                f"{self.loc.worktree}: reftable ref storage: this repository keeps its reflog in "
                "binary tables (there is no .git/logs); reading them needs git >= 2.45 on PATH "
                f"(found: {_version_text(self.version)}). No events were read: the reflog is "
                "there, but unread"
            )
        self.memory = memory_ceiling()  # the packs' and tables' size is known once they are copied
        try:
            shadow, borrowed = self._make_shadow(  # what it leaves out, the object queries say (attach)
                "timeline-reftable-",
                self.loc.common_dir,
                self.loc.object_format,
                lambda arguments, cwd: self._git(arguments, git_dir=None, cwd=cwd),
                ReftableUnavailable,
                "--ref-format=reftable",
            )
            self._copy_stack(self.loc.common_dir, shadow / "reftable")
            self.head_dir = shadow
            if self.loc.linked_worktree:
                wt = shadow / "worktrees" / "wt"
                wt.mkdir(parents=True)
                (wt / "HEAD").write_text("ref: refs/heads/.invalid\n", encoding="utf-8")
                (wt / "commondir").write_text("../..\n", encoding="utf-8")
                self._copy_stack(self.loc.git_dir, wt / "reftable")
                self.head_dir = wt
            tables = sum(table.stat().st_size for table in shadow.rglob("*.ref"))
            self.memory = memory_ceiling(borrowed.pack_bytes + tables)
        except BaseException:
            self.close()
            raise
        return self

    # ------------------------------------------------------------------ internals
    def _copy_stack(self, src_git_dir: Path, dst: Path) -> None:
        """Copy ``src_git_dir/reftable/{tables.list, *.ref}`` to ``dst`` (replacing it)."""
        roots = (self.loc.git_dir, self.loc.common_dir)
        try:
            listing = read_file_safely(
                resolve_inside(roots, src_git_dir / "reftable", "tables.list"), limit=1024 * 1024
            )
        except FileNotFoundError:
            raise ReftableUnavailable(f"{src_git_dir / 'reftable' / 'tables.list'}: missing") from None
        except UnsafeFile as exc:
            raise ReftableUnavailable(f"{src_git_dir / 'reftable' / 'tables.list'}: {exc}") from None
        names = listing.decode("ascii", "replace").split()
        if len(names) > _MAX_TABLES or not all(_TABLE_NAME.match(n) for n in names):
            raise ReftableUnavailable(f"{src_git_dir / 'reftable' / 'tables.list'}: unexpected content; refused")
        if dst.exists():
            shutil.rmtree(dst)
        dst.mkdir(parents=True)
        for name in names:
            try:
                data = read_file_safely(resolve_inside(roots, src_git_dir / "reftable", name), limit=_MAX_TABLE_BYTES)
            except (FileNotFoundError, UnsafeFile) as exc:
                raise ReftableUnavailable(f"{src_git_dir / 'reftable' / name}: {exc}") from None
            (dst / name).write_bytes(data)
        (dst / "tables.list").write_bytes("".join(n + "\n" for n in names).encode("ascii"))

    def _git(
        self, args: list[str], *, git_dir: Path | None, cwd: Path | None = None, ok_codes: tuple[int, ...] = (0,)
    ) -> tuple[int, bytes]:
        try:
            proc = run_safe_git(
                cast(str, self.git),  # __enter__ refused a missing git
                args,
                cwd=cwd or self.dir,  # type: ignore[arg-type]
                git_dir=None if git_dir is None else str(git_dir),
                memory=self.memory,
                timeout=_TIMEOUT_S,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ReftableUnavailable(f"git {args[0]} failed: {exc}") from None
        if proc.returncode not in ok_codes:
            failure = git_failure(
                args, proc.stderr, proc.returncode, memory=self.memory, repository=self.loc.common_dir
            )
            raise ReftableUnavailable(failure)
        return proc.returncode, proc.stdout

    # ------------------------------------------------------------------ queries
    def head(self) -> tuple[str | None, str | None]:
        """``(sha HEAD resolves to, "refs/heads/X" or None when detached)``."""
        rc, out = self._git(["symbolic-ref", "-q", "HEAD"], git_dir=self.head_dir, ok_codes=(0, 1))
        symref = out.decode("utf-8", "replace").strip() if rc == 0 else None
        rc, out = self._git(["rev-parse", "-q", "--verify", "HEAD"], git_dir=self.head_dir, ok_codes=(0, 1))
        sha = out.decode("ascii", "replace").strip() if rc == 0 else None
        return (sha if sha and _HEX.match(sha) else None), symref

    def source(self, ref: str) -> str:
        where = self.loc.git_dir if ref == "HEAD" else self.loc.common_dir
        return f"{where / 'reftable'} ({ref})"

    def read(self, ref: str) -> tuple[list[ReflogEntry] | None, list[Diagnostic]]:
        """The reflog of ``ref`` ("HEAD" or a validated ``refs/...`` name), oldest first, with
        each entry's OLD id inferred from the next-older entry (the oldest gets all zeros).
        None when the ref has no reflog."""
        source = self.source(ref)
        git_dir = self.head_dir if ref == "HEAD" else self.dir
        rc, out = self._git(
            [
                "reflog",
                "show",
                "--no-abbrev",
                "--no-color",
                "--date=raw",
                "--format=%H%x00%gd%x00%gn%x00%ge%x00%gs",
                ref,
                "--",
            ],
            git_dir=git_dir,
            ok_codes=(0, 128),
        )
        if rc != 0:
            return None, []
        diags: list[Diagnostic] = []
        rows = []
        for raw in out.split(b"\n"):
            if not raw:
                continue
            parts = raw.split(b"\0")
            m = _GD.search(parts[1].decode("utf-8", "replace")) if len(parts) == 5 else None
            sha = parts[0].decode("ascii", "replace") if parts else ""
            if m is None or not _HEX.match(sha):
                diags.append(Diagnostic(source, None, "unexpected git reflog output line skipped"))
                continue
            rows.append((sha, parts[2], parts[3], int(m[1]), m[2], parts[4]))
        rows.reverse()  # oldest first, like a log file
        zero = "0" * self.loc.sha_length
        entries: list[ReflogEntry] = []
        prev = zero
        for no, (sha, name, email, ts, tz, msg) in enumerate(rows, 1):
            entries.append(
                ReflogEntry(
                    old=prev,
                    new=sha,
                    name=name.decode("utf-8", "surrogateescape"),
                    email=email.decode("utf-8", "surrogateescape"),
                    ts=ts,
                    tz=tz,
                    message=msg.decode("utf-8", "surrogateescape") or None,
                    line=no,
                )
            )
            prev = sha
        return entries, diags

    def list_refs(self) -> list[str] | None:
        """Refs that have a reflog (``git reflog list``, git >= 2.46); None when unavailable."""
        if self.version is None or self.version < _LIST_GIT:
            return None
        _rc, out = self._git(["reflog", "list"], git_dir=self.dir)
        return [line for line in out.decode("utf-8", "replace").splitlines() if line]
