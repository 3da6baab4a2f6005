"""Find a checkout's git directories, and read small files from them, without running git.

The repository is untrusted. Everything here reads files directly:

- every file is opened with ``O_RDONLY | O_NOFOLLOW | O_NONBLOCK``, must be a regular file
  (``fstat``) and is size-capped, so a symlink, FIFO, socket or device planted in ``.git`` is
  refused instead of followed or blocked on;
- every path taken from inside the repository (a ``.git`` file's ``gitdir:``, ``commondir``,
  ref names) is resolved, and the directory it lands in must stay inside the git dirs.

Where the files are (``logs/HEAD``, ``commondir``, ``worktrees/NAME/``, ``modules/NAME/``, the
``gitdir:`` line of a ``.git`` file): https://git-scm.com/docs/gitrepository-layout. Reftable
repositories (``extensions.refStorage``, no ``logs/``): https://git-scm.com/docs/reftable.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from timeline.git.errors import GitError, NoRepositoryError
from timeline.records import Diagnostic

__all__ = [
    "GitLocation",
    "UnsafeFile",
    "locate",
    "read_file_safely",
    "path_inside",
    "resolve_inside",
    "read_config",
    "resolve_head",
    "HeadState",
    "valid_refname",
    "regular_file_mtime",
    "read_small",
    "packed_ref",
    "MAX_REFLOG_BYTES",
    "MAX_SMALL_FILE_BYTES",
    "MAX_PACKED_REFS_BYTES",
]

MAX_REFLOG_BYTES = 256 * 1024 * 1024
MAX_SMALL_FILE_BYTES = 1024 * 1024  # HEAD, commondir, a .git file, config, one ref
MAX_PACKED_REFS_BYTES = 64 * 1024 * 1024

_HEX_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
# refs that live in the worktree's own git dir rather than the common dir (git's worktree rules)
_PER_WORKTREE_PREFIXES = ("refs/bisect/", "refs/worktree/", "refs/rewritten/")


class UnsafeFile(Exception):
    """A file we refused to read, or could not read. ``str()`` is the reason."""


@dataclass(frozen=True)
class GitLocation:
    """Where a checkout's git data lives (all paths resolved with ``realpath``)."""

    worktree: Path  # the checkout root (the git dir itself for a bare repository)
    git_dir: Path  # per-worktree git dir: HEAD, logs/HEAD, index
    common_dir: Path  # shared: objects, refs, packed-refs, config, logs/refs
    bare: bool = False
    object_format: str = "sha1"
    ref_storage: str = "files"  # "files" or "reftable" (no .git/logs at all)

    @property
    def sha_length(self) -> int:
        return 64 if self.object_format == "sha256" else 40

    @property
    def linked_worktree(self) -> bool:
        return self.git_dir != self.common_dir


@dataclass(frozen=True)
class HeadState:
    sha: str | None  # what HEAD resolves to now; None when unborn or unreadable
    symref: str | None  # "refs/heads/main" when attached; None when detached
    diagnostics: tuple[Diagnostic, ...] = ()


# --------------------------------------------------------------------------- safe reading


def read_file_safely(path: str | os.PathLike, *, limit: int) -> bytes:
    """Read a regular file without following a final symlink or blocking on a FIFO.

    Raises ``FileNotFoundError`` when it does not exist and ``UnsafeFile`` for anything else
    (symlink, not a regular file, too large, unreadable).
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile("is a symbolic link; refused") from None
        if exc.errno == errno.ENOTDIR:
            raise FileNotFoundError(errno.ENOENT, "not found", str(path)) from None
        raise UnsafeFile(f"cannot be opened ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile("is not a regular file; refused")
        if st.st_size > limit:
            raise UnsafeFile(f"is larger than {limit} bytes; refused")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise UnsafeFile(f"is larger than {limit} bytes; refused")
        return b"".join(chunks)
    except OSError as exc:
        raise UnsafeFile(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def path_inside(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """True when ``realpath(path)`` is ``realpath(root)`` or below it."""
    real = os.path.realpath(path)
    base = os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def resolve_inside(roots: Path | tuple[Path, ...], base: Path, *parts: str) -> Path:
    """``base/parts...`` with every directory resolved; the directory must stay inside a root.

    The final component is *not* resolved: open it with ``read_file_safely`` (``O_NOFOLLOW``).
    Raises ``UnsafeFile`` when a symlinked directory leads outside the git dirs.
    """
    if isinstance(roots, Path):
        roots = (roots,)
    candidate = base.joinpath(*parts)
    parent = Path(os.path.realpath(candidate.parent))
    if not any(path_inside(parent, root) for root in roots):
        raise UnsafeFile(f"leads outside the git directory (to {parent}); refused")
    return parent / candidate.name


def _read_small(path: Path, limit: int = MAX_SMALL_FILE_BYTES) -> bytes | None:
    """A small repo file, or None when absent. ``UnsafeFile`` propagates."""
    try:
        return read_file_safely(path, limit=limit)
    except FileNotFoundError:
        return None


read_small = _read_small


def regular_file_mtime(path: Path, roots: tuple[Path, ...]) -> float | None:
    """The modification time of a regular file whose directory resolves inside ``roots``
    (``lstat``: a symlink is not followed and counts as absent); None when absent or refused."""
    try:
        safe = resolve_inside(roots, path.parent, path.name)
        st = os.lstat(safe)
    except (OSError, UnsafeFile):
        return None
    return st.st_mtime if stat.S_ISREG(st.st_mode) else None


# --------------------------------------------------------------------------- config

_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def read_config(data: bytes) -> dict[str, str]:
    """A minimal, read-only git-config reader: ``{"section.key": value}`` (last one wins).

    Section and key names are lower-cased; a subsection keeps its case
    (``"section.Sub.key"``). Includes are *not* followed. Good enough for the few keys we
    need (``extensions.*``, ``core.bare``); never used to decide what to run.
    """
    out: dict[str, str] = {}
    section = ""
    for raw in data.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            m = _SECTION.match(line)
            if not m:
                section = ""
                continue
            name, sub, rest = m.groups()
            name = name.lower()
            if sub is None and "." in name:  # old-style [section.sub]
                name, _, sub = name.partition(".")
            section = f"{name}.{sub}" if sub is not None else name
            line = rest.strip()
            if not line or line[0] in "#;":
                continue
        m = _KEY.match(line)
        if not m or not section:
            continue
        key, value = m.group(1).lower(), m.group(2)
        out[f"{section}.{key}"] = "true" if value is None else _config_value(value)
    return out


def _config_value(value: str) -> str:
    result: list[str] = []
    quoted = False
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == '"':
            quoted = not quoted
        elif ch == "\\" and i + 1 < len(value):
            i += 1
            result.append({"n": "\n", "t": "\t", "b": "\b"}.get(value[i], value[i]))
        elif ch in "#;" and not quoted:
            break
        else:
            result.append(ch)
        i += 1
    return "".join(result).strip()


# --------------------------------------------------------------------------- discovery


def _is_git_dir(d: Path) -> bool:
    """HEAD plus objects (or a ``commondir`` file, for a linked worktree's git dir)."""
    try:
        if not os.path.lexists(d / "HEAD"):
            return False
        return (d / "commondir").is_file() or ((d / "objects").is_dir() and (d / "refs").exists())
    except OSError:
        return False


def _gitdir_from_file(dotgit: Path) -> Path:
    """Parse a ``.git`` file (``gitdir: <path>``) of a linked worktree or submodule."""
    try:
        data = read_file_safely(dotgit, limit=64 * 1024)
    except (OSError, UnsafeFile) as exc:
        raise GitError(f"{dotgit}: cannot read the .git file: {exc}") from None
    text = data.decode("utf-8", "surrogateescape").rstrip("\r\n")
    if not text.startswith("gitdir: ") or "\n" in text or "\0" in text:
        raise GitError(f"{dotgit}: not a git repository (invalid .git file: expected 'gitdir: <path>')")
    target = Path(text[len("gitdir: ") :].strip())
    if not target.is_absolute():
        target = dotgit.parent / target
    real = Path(os.path.realpath(target))
    if not _is_git_dir(real):
        raise GitError(f"{dotgit}: not a git repository (its gitdir {real} is not a git directory)")
    return real


def _common_dir(git_dir: Path) -> Path:
    try:
        data = _read_small(git_dir / "commondir", 64 * 1024)
    except UnsafeFile as exc:
        raise GitError(f"{git_dir / 'commondir'}: {exc}") from None
    if data is None:
        return git_dir
    text = data.decode("utf-8", "surrogateescape").strip("\r\n")
    if not text or "\n" in text or "\0" in text:
        raise GitError(f"{git_dir / 'commondir'}: invalid commondir file")
    target = Path(text)
    if not target.is_absolute():
        target = git_dir / target
    common = Path(os.path.realpath(target))
    if not (common / "objects").is_dir():
        raise GitError(f"{git_dir}: commondir points at {common}, which is not a git directory")
    if not path_inside(git_dir, common):
        raise GitError(f"{git_dir}: commondir points at {common}, outside the repository layout; refused")
    return common


def locate(repo: str | os.PathLike) -> GitLocation:
    """Find the git dirs for ``repo``: a checkout root, any folder inside one (we walk upward),
    a linked worktree or submodule (``.git`` file), or a git dir itself.

    Raises ``NoRepositoryError`` (a ``GitError`` and a ``UsageError``) when ``repo`` does not exist
    or no repository holds it, ``GitError`` (one line, naming the path) when the repository is
    not usable.
    """
    given = Path(os.path.expanduser(os.fspath(repo)))
    if not given.exists():
        raise NoRepositoryError(f"{given}: no such file or folder", option="repo")
    start = Path(os.path.realpath(given))
    if not start.is_dir():
        start = start.parent
    found = _find_git_dir(start)
    if found is None:
        raise NoRepositoryError(f"{given}: not a git repository (nor any parent folder)", option="repo")
    worktree, git_dir, bare = found
    common_dir = _common_dir(git_dir)

    config: dict[str, str] = {}
    try:
        data = _read_small(common_dir / "config")
    except UnsafeFile as exc:
        raise GitError(f"{common_dir / 'config'}: {exc}") from None
    if data is not None:
        config = read_config(data)
    ref_storage = _ref_storage(config, worktree, (common_dir, git_dir))
    object_format = config.get("extensions.objectformat", "sha1").lower() or "sha1"
    if object_format not in ("sha1", "sha256"):
        raise GitError(f"{worktree}: unknown object format {object_format!r}")
    if config.get("core.bare", "").lower() in ("true", "yes", "on", "1") and worktree == git_dir:
        bare = True
    return GitLocation(
        worktree=worktree,
        git_dir=git_dir,
        common_dir=common_dir,
        bare=bare,
        object_format=object_format,
        ref_storage=ref_storage,
    )


def _find_git_dir(start: Path) -> tuple[Path, Path, bool] | None:
    """``(worktree, git_dir, bare)`` of the nearest repository at or above ``start``."""
    for d in (start, *start.parents):
        dotgit = d / ".git"
        try:
            is_dir = dotgit.is_dir()
            is_file = not is_dir and dotgit.is_file()
        except OSError:
            is_dir = is_file = False
        if is_dir:
            real = Path(os.path.realpath(dotgit))
            if _is_git_dir(real):
                return d, real, False
        elif is_file:
            return d, _gitdir_from_file(Path(os.path.realpath(dotgit))), False
        if _is_git_dir(d):
            if d.name == ".git" and Path(os.path.realpath(d.parent / ".git")) == d:
                return d.parent, d, False  # --repo pointed into .git itself
            return d, d, True
    return None


def _ref_storage(config: dict[str, str], worktree: Path, git_dirs: tuple[Path, Path]) -> str:
    """``files`` or ``reftable``: what ``extensions.refStorage`` says, or a ``tables.list``
    (https://git-scm.com/docs/git-config#Documentation/git-config.txt-extensionsrefStorage)."""
    refstorage = config.get("extensions.refstorage", "").lower()
    if (refstorage and refstorage != "files") or any(os.path.lexists(d / "reftable" / "tables.list") for d in git_dirs):
        if refstorage not in ("", "files", "reftable"):
            raise GitError(f"{worktree}: unknown ref storage {refstorage!r}")
        return "reftable"
    return "files"


# --------------------------------------------------------------------------- HEAD


def valid_refname(name: str) -> bool:
    """A ref name we accept from inside the repository (``refs/...``, git's rules, no ``..``)."""
    return _valid_refname(name)


def packed_ref(loc: GitLocation, name: str) -> str | None:
    try:
        return _packed_ref(loc, name)
    except UnsafeFile:
        return None


def _valid_refname(name: str) -> bool:
    if not name.startswith("refs/") or name.endswith("/") or ".." in name or "@{" in name:
        return False
    if _REF_FORBIDDEN.search(name):
        return False
    return all(part and not part.startswith(".") and not part.endswith(".lock") for part in name.split("/"))


def _packed_ref(loc: GitLocation, name: str) -> str | None:
    path = resolve_inside(loc.common_dir, loc.common_dir, "packed-refs")
    data = _read_small(path, MAX_PACKED_REFS_BYTES)
    if data is None:
        return None
    target = name.encode("utf-8", "surrogateescape")
    for line in data.split(b"\n"):
        if not line or line[:1] in (b"#", b"^"):
            continue
        sha, _, ref = line.rstrip(b"\r").partition(b" ")
        if ref == target:
            text = sha.decode("ascii", "replace")
            return text if _HEX_SHA.fullmatch(text) else None
    return None


def resolve_head(loc: GitLocation) -> HeadState:
    """What HEAD resolves to now, from the files (HEAD -> loose ref file or packed-refs)."""
    diags: list[Diagnostic] = []
    roots = (loc.git_dir, loc.common_dir)
    head_path = loc.git_dir / "HEAD"
    try:
        data = _read_small(head_path, 64 * 1024)
    except UnsafeFile as exc:
        return HeadState(None, None, (Diagnostic(str(head_path), None, f"HEAD {exc}"),))
    if data is None:
        return HeadState(None, None, (Diagnostic(str(head_path), None, "HEAD file is missing"),))
    symref: str | None = None
    for _ in range(6):  # HEAD -> ref -> (rarely) another symbolic ref
        text = data.decode("utf-8", "surrogateescape").strip()
        if _HEX_SHA.fullmatch(text):
            if len(text) != loc.sha_length:
                diags.append(
                    Diagnostic(
                        str(head_path),
                        None,
                        f"HEAD id {text[:12]} does not match the {loc.object_format} object format",
                    )
                )
            return HeadState(text, symref, tuple(diags))
        if not text.startswith("ref:"):
            diags.append(Diagnostic(str(head_path), None, "HEAD (or the ref it names) has unrecognised content"))
            return HeadState(None, symref, tuple(diags))
        name = text[4:].strip()
        if not _valid_refname(name):
            diags.append(Diagnostic(str(head_path), None, f"HEAD names an invalid ref {name[:80]!r}; refused"))
            return HeadState(None, symref, tuple(diags))
        if symref is None:
            symref = name
        base = loc.git_dir if name.startswith(_PER_WORKTREE_PREFIXES) else loc.common_dir
        try:
            ref_path = resolve_inside(roots, base, *name.split("/"))
            loose = _read_small(ref_path, 64 * 1024)
            if loose is None:
                sha = _packed_ref(loc, name)
                return HeadState(sha, symref, tuple(diags))  # None: unborn branch
        except UnsafeFile as exc:
            diags.append(Diagnostic(str(base / name), None, f"ref {name} {exc}"))
            return HeadState(None, symref, tuple(diags))
        except IsADirectoryError:
            return HeadState(None, symref, tuple(diags))
        data = loose
    diags.append(Diagnostic(str(head_path), None, "HEAD: too many levels of symbolic refs"))
    return HeadState(None, symref, tuple(diags))
