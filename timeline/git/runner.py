"""Running git on an untrusted repository without running anything of the repository's.

Every git call has an environment stripped of every ``GIT_*`` variable plus a fixed safe set
(system and global config off, no replace objects, no prompt, no optional locks, no lazy fetch),
``--no-pager`` and our own ``-c`` overrides (``SAFE_CONFIG``), which win over any config git
could still read: https://git-scm.com/docs/git#_environment_variables,
https://git-scm.com/docs/git-config#_configuration_file. Only ids that ``valid_sha`` accepts are
passed to git, after ``--end-of-options`` or on stdin.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache

__all__ = ["SAFE_CONFIG", "safe_env", "safe_git_command", "git_failure", "run_safe_git", "git_version", "valid_sha"]

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


def valid_sha(sha: str | None, length: int | None = None) -> bool:
    if not sha or not _SHA.match(sha):
        return False
    return length is None or len(sha) == length


def safe_env() -> dict[str, str]:
    """``os.environ`` minus every ``GIT_*`` variable, plus a fixed, safe git environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
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


def safe_git_command(git: str, args: list[str], git_dir: str | os.PathLike | None = None) -> list[str]:
    """``git --no-pager [--git-dir=DIR] -c SAFE_CONFIG... args``: run it with ``safe_env()``."""
    cmd = [git, "--no-pager"]
    if git_dir is not None:
        cmd.append(f"--git-dir={git_dir}")
    for item in SAFE_CONFIG:
        cmd += ["-c", item]
    return cmd + args


def git_failure(args: list[str], stderr: bytes, returncode: int) -> str:
    """``git <command> failed: <stderr's last line, else the exit status>``."""
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return f"git {args[0]} failed: {lines[-1] if lines else f'exit status {returncode}'}"


def run_safe_git(
    git: str,
    args: list[str],
    *,
    cwd: str | os.PathLike,
    git_dir: str | None = None,
    input: bytes | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess:
    """Run ``git`` with ``safe_env()``, ``--no-pager`` and ``SAFE_CONFIG``; never raises for a
    non-zero exit (the caller reads ``returncode``). ``OSError``/timeouts propagate."""
    return subprocess.run(
        safe_git_command(git, args, git_dir),
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
