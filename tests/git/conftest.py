"""Real git repositories for the git-module tests, built with real git commands.

Isolation: HOME is a temporary folder, GIT_CONFIG_NOSYSTEM=1, every inherited GIT_* variable
is dropped, and each step gets ``GIT_COMMITTER_DATE``/``GIT_AUTHOR_DATE = "@<epoch> +0000"``
(the reflog timestamp is the committer date), so SHAs and reflog times are reproducible.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

T0 = 1_700_000_000
STEP = 100


class GitBench:
    """``bench.git(*args, at=epoch, cwd=...)`` runs git; ``bench.commit(msg, at=...)`` commits.

    ``at=None`` advances an internal clock by 100 s per step. ``cwd`` defaults to the
    repository made by the last ``init``/``clone``.
    """

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.home.mkdir()
        self.clock = T0
        self.repo: Path = root
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            GIT_CONFIG_NOSYSTEM="1",
            LC_ALL="C",
            TZ="UTC",
        )
        self.env = env
        for key, value in (
            ("user.name", "Ann Tester"),
            ("user.email", "ann@example.com"),
            ("init.defaultBranch", "main"),
            ("advice.detachedHead", "false"),
            ("pull.rebase", "false"),
            ("gc.auto", "0"),
            ("maintenance.auto", "false"),
        ):
            self.git("config", "--global", key, value, cwd=root)

    def tick(self, at: int | None = None) -> int:
        self.clock = self.clock + STEP if at is None else at
        return self.clock

    def git(
        self,
        *args: str,
        at: int | None = None,
        cwd: Path | None = None,
        tz: str = "+0000",
        check: bool = True,
        env: dict[str, str] | None = None,
    ) -> str:
        when = f"@{self.tick(at)} {tz}"
        full_env = dict(self.env, GIT_COMMITTER_DATE=when, GIT_AUTHOR_DATE=when, **(env or {}))
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd or self.repo,
            env=full_env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"git {' '.join(args)} failed ({proc.returncode}):\n"
                f"{proc.stdout.decode(errors='replace')}{proc.stderr.decode(errors='replace')}"
            )
        return proc.stdout.decode("utf-8", "replace").strip()

    def init(self, name: str = "repo", bare: bool = False) -> Path:
        path = self.root / name
        self.git("init", "-q", *(["--bare"] if bare else []), str(path), cwd=self.root)
        if not bare:
            self.repo = path
        return path

    def clone(self, src: Path, name: str, *args: str, at: int | None = None) -> Path:
        path = self.root / name
        self.git("clone", "-q", *args, str(src), str(path), at=at, cwd=self.root)
        self.repo = path
        return path

    def commit(
        self,
        msg: str,
        at: int | None = None,
        cwd: Path | None = None,
        file: str | None = None,
        content: str | None = None,
        tz: str = "+0000",
    ) -> str:
        cwd = cwd or self.repo
        target = cwd / (file or "file.txt")
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(content if content is not None else f"{msg}\n")
        self.git("add", "-A", cwd=cwd, at=self.clock)
        self.git("commit", "-q", "-m", msg, at=at, cwd=cwd, tz=tz)
        return self.sha("HEAD", cwd=cwd)

    def sha(self, rev: str = "HEAD", cwd: Path | None = None) -> str:
        return self.git("rev-parse", "--verify", "--end-of-options", rev, cwd=cwd, at=self.clock)

    def head_log(self, cwd: Path | None = None) -> list[str]:
        path = self.git("rev-parse", "--git-path", "logs/HEAD", cwd=cwd, at=self.clock)
        full = Path(path) if os.path.isabs(path) else (cwd or self.repo) / path
        return full.read_text(encoding="utf-8", errors="replace").splitlines()


@pytest.fixture
def bench(tmp_path: Path) -> GitBench:
    return GitBench(tmp_path)


@pytest.fixture
def cloned(bench):
    """An upstream with one commit and a clone of it; returns (up, work)."""
    up = bench.init("up")
    bench.commit("u0", cwd=up)
    work = bench.clone(up, "work")
    return up, work


@pytest.fixture
def count_git_processes(monkeypatch):
    """``calls = count_git_processes()`` records, from then on, every process started through
    ``subprocess.Popen`` (``subprocess.run`` goes through it too) as its argument list: git's
    (``git --no-pager ...``), not that of the shell that sets git's memory ceiling and execs it."""
    import timeline.git.objects as objects_module

    def start() -> list[list[str]]:
        calls: list[list[str]] = []
        real_popen = subprocess.Popen

        def counting_popen(cmd, *args, **kwargs):
            calls.append(list(cmd[3:] if list(cmd[:2]) == ["/bin/sh", "-c"] else cmd))
            return real_popen(cmd, *args, **kwargs)

        monkeypatch.setattr(objects_module.subprocess, "Popen", counting_popen)
        return calls

    return start
