"""Running git on an untrusted repository without running anything of the repository's.

Every git call has an environment stripped of every ``GIT_*`` variable plus a fixed safe set
(system and global config off, no replace objects, no prompt, no optional locks, no lazy fetch),
``--no-pager`` and our own ``-c`` overrides (``SAFE_CONFIG``), which win over any config git
could still read: https://git-scm.com/docs/git#_environment_variables,
https://git-scm.com/docs/git-config#_configuration_file. Only ids that ``valid_sha`` accepts are
passed to git, after ``--end-of-options`` or on stdin.

Every git process on a repository also has a memory ceiling (``memory_ceiling``): its address
space (``RLIMIT_AS``) is capped, so that a repository built to make git grow (an object that
inflates to gigabytes, a pack git maps without end) stops git with "out of memory" instead of
taking the machine's memory. The cap is set by ``ulimit -v`` in a ``/bin/sh`` that then execs
git: before git's first instruction, and without a ``preexec_fn``, which is unsafe in a process
with threads (numpy's BLAS starts some): https://docs.python.org/3/library/subprocess.html#popen-constructor.
Linux only (macOS does not enforce ``RLIMIT_AS``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping
from functools import lru_cache
from typing import IO, Any

from timeline.errors import UsageError

__all__ = [
    "SAFE_CONFIG",
    "MEMORY_VARIABLE",
    "memory_ceiling",
    "safe_env",
    "safe_git_command",
    "git_failure",
    "run_safe_git",
    "start_safe_git",
    "git_version",
    "valid_sha",
]

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_VERSION = re.compile(rb"git version (\d+)\.(\d+)(?:\.(\d+))?")
# Our own -c overrides on every git call (they win over the shadow's config, which is empty).
SAFE_CONFIG = (
    "core.commitGraph=false",
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "gc.auto=0",
    "log.showSignature=false",
    "log.mailmap=false",
    "core.quotePath=false",
    "diff.renames=false",
    "core.pager=cat",
    "protocol.allow=never",
    "gpg.program=/bin/false",
    "core.askPass=/bin/false",
)


# The memory ceiling of each git process: this variable's MiB if set (0: none), else
# BASE_MEMORY plus PACKS_FACTOR times the repository's packs (git maps the packs it reads into its
# address space, and inflates one object at a time; a walk of a million commits holds a few
# hundred MB).
MEMORY_VARIABLE = "TIMELINE_GIT_MEMORY_MB"
BASE_MEMORY = 1 << 30
PACKS_FACTOR = 2
_CEILING_SHELL = "/bin/sh"
# What git (and the loader before it) says when an allocation fails under the ceiling.
_OUT_OF_MEMORY = re.compile(rb"out of memory|cannot allocate memory|failed to map segment", re.IGNORECASE)
# ... or how it dies when the stack cannot grow: by a signal.
_MEMORY_SIGNALS = {-signal.SIGSEGV, -signal.SIGBUS, -signal.SIGABRT}


def memory_ceiling(pack_bytes: int = 0, environ: Mapping[str, str] | None = None) -> int | None:
    """The address space, in bytes, each git process on a repository with ``pack_bytes`` of packs
    may use: ``TIMELINE_GIT_MEMORY_MB`` MiB if set (``0``: no ceiling, None), else 1 GiB plus twice
    the packs. None where a ceiling cannot be set (not Linux). ``UsageError`` for a value of the
    variable that is no whole number."""
    given = (os.environ if environ is None else environ).get(MEMORY_VARIABLE, "").strip()
    if given:
        if not given.isdigit():
            raise UsageError(f"{MEMORY_VARIABLE}={given!r}: not a whole number of MiB (0: no ceiling)")
        ceiling = int(given) << 20
    else:
        ceiling = BASE_MEMORY + PACKS_FACTOR * max(pack_bytes, 0)
    if not ceiling or not sys.platform.startswith("linux") or not os.access(_CEILING_SHELL, os.X_OK):
        return None
    return ceiling


def valid_sha(sha: str | None, length: int | None = None) -> bool:
    if not sha or not _SHA.match(sha):
        return False
    return length is None or len(sha) == length


def safe_env() -> dict[str, str]:
    """``os.environ`` minus every ``GIT_*`` variable, plus a fixed, safe git environment."""
    # (ENV, BASH_ENV: files a shell reads at start, never wanted by the one that sets the ceiling)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("ENV", "BASH_ENV")}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "LC_ALL": "C",
        }
    )
    return env


def safe_git_command(
    git: str, args: list[str], git_dir: str | os.PathLike | None = None, *, memory: int | None = None
) -> list[str]:
    """``git --no-pager [--git-dir=DIR] -c SAFE_CONFIG... args``: run it with ``safe_env()``. With
    ``memory`` (bytes, from ``memory_ceiling``), the command sets that ceiling first: ``/bin/sh -c
    'ulimit -v KiB; exec "$0" "$@"' git ...`` (the arguments stay arguments, never shell text)."""
    cmd = [git, "--no-pager"]
    if git_dir is not None:
        cmd.append(f"--git-dir={git_dir}")
    for item in SAFE_CONFIG:
        cmd += ["-c", item]
    cmd += args
    if memory is None:
        return cmd
    # A shell that cannot set it (a hard limit already lower) runs git under the one it has.
    return [_CEILING_SHELL, "-c", f'ulimit -v {max(memory >> 10, 1)} 2>/dev/null; exec "$0" "$@"', *cmd]


def out_of_memory(stderr: bytes, returncode: int) -> bool:
    """Whether a git process that had a memory ceiling died of it."""
    return returncode in _MEMORY_SIGNALS or (returncode != 0 and _OUT_OF_MEMORY.search(stderr) is not None)


def git_failure(
    args: list[str], stderr: bytes, returncode: int, *, memory: int | None = None, repository: object = None
) -> str:
    """``git <command> failed: <stderr's last line, else the exit status>``; with the ``memory``
    ceiling git ran under, when it died of it: that, naming ``repository`` and the variable."""
    if memory is not None and out_of_memory(stderr, returncode):
        where = f" on {repository}" if repository is not None else ""
        return (
            f"git {args[0]} ran out of memory{where}: each git process may use {memory >> 20} MiB here "
            f"({MEMORY_VARIABLE} sets the ceiling; 0 for none)"
        )
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return f"git {args[0]} failed: {lines[-1] if lines else f'exit status {returncode}'}"


def start_safe_git(
    git: str,
    args: list[str],
    *,
    cwd: str | os.PathLike,
    git_dir: str | os.PathLike | None = None,
    memory: int | None,
    stdin: int | IO[Any] | None,
    stdout: int | IO[Any] | None,
    stderr: int | IO[Any] | None,
) -> subprocess.Popen:
    """Start ``git`` as ``run_safe_git`` runs it, to read its output as it comes."""
    return subprocess.Popen(
        safe_git_command(git, args, git_dir, memory=memory),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        cwd=cwd,
        env=safe_env(),
    )


def run_safe_git(
    git: str,
    args: list[str],
    *,
    cwd: str | os.PathLike,
    git_dir: str | None = None,
    memory: int | None,
    input: bytes | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess:
    """Run ``git`` with ``safe_env()``, ``--no-pager``, ``SAFE_CONFIG`` and the ``memory``
    ceiling (bytes, from ``memory_ceiling``; None: none); never raises for a non-zero exit (the
    caller reads ``returncode``). ``OSError``/timeouts propagate."""
    return subprocess.run(
        safe_git_command(git, args, git_dir, memory=memory),
        input=input,
        capture_output=True,
        stdin=None if input is not None else subprocess.DEVNULL,
        cwd=cwd,
        env=safe_env(),
        timeout=timeout,
        check=False,
    )


@lru_cache(maxsize=8)
def git_version(git: str | None = None) -> tuple[int, int, int] | None:
    """``(2, 39, 5)`` for the git at ``git`` (default: the one on PATH); None when absent."""
    git = git or shutil.which("git")
    if not git:
        return None
    try:
        proc = subprocess.run(
            [git, "--version"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            cwd="/",
            env=safe_env(),
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    m = _VERSION.search(proc.stdout)
    if proc.returncode != 0 or not m:
        return None
    return int(m[1]), int(m[2]), int(m[3] or 0)
