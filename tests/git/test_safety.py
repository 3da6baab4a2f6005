"""SAFETY: read_history on a booby-trapped repository runs nothing of it and changes nothing.

Every setting that makes git run a program (``core.fsmonitor``, ``core.hooksPath``, ``core.pager``,
``diff.external``, textconv/filter/merge drivers, ``gpg.program``, ``credential.helper``,
``alias.*``, ...: https://git-scm.com/docs/git-config) points at a marker script that
appends to a file OUTSIDE the repository; hooks of every name exist (in .git/hooks and in
core.hooksPath); .gitattributes routes every path through an evil filter/diff/merge driver;
HEAD is a signed commit with log.showSignature=true; the environment carries GIT_* traps.
After read_history the marker must not exist and no file of the repository may have changed
(content, size, mode, mtime -- the index included). Finally a plain ``git status`` proves the
traps were armed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from timeline.git import read_history

HOOKS = [
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
]


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under root: type, mode, size, mtime_ns and a content hash (or link target)."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[p] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[p] = ("dir", st.st_mode, st.st_mtime_ns)
            else:
                with open(p, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
                out[p] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return out


def make_signed_commit(bench, repo: Path) -> str:
    body = bench.git("cat-file", "commit", "HEAD", cwd=repo)
    header, _, message = body.partition("\n\n")
    sig = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEEfakefakefake\n -----END PGP SIGNATURE-----"
    signed = f"{header}\n{sig}\n\n{message}\n"
    path = bench.root / "signed-commit.txt"
    path.write_text(signed)
    return bench.git("hash-object", "-t", "commit", "-w", str(path), cwd=repo)


def test_booby_trapped_repository_runs_nothing_and_changes_nothing(bench, tmp_path, monkeypatch):
    marker = tmp_path / "marker.log"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    mark = bindir / "mark"
    mark.write_text(f'#!/bin/sh\necho "$(basename "$0") $*" >> "{marker}"\ncat >/dev/null 2>&1 &\nexit 0\n')
    mark.chmod(0o755)

    # --- a repository with some history (before arming, so our own setup runs nothing)
    repo = bench.init()
    (repo / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    c1 = bench.commit("c1", file="a.txt")
    bench.git("checkout", "-q", "-b", "feature")
    bench.commit("f1", file="b.txt")
    bench.git("checkout", "-q", "main")
    bench.commit("c2", file="c.txt")
    bench.git("merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    signed = make_signed_commit(bench, repo)
    bench.git("reset", "-q", "--soft", signed)
    bench.git("replace", c1, bench.sha("feature"))  # a replace ref: must be ignored
    # context logs: a remote-tracking ref and a stash entry
    bench.git("update-ref", "-m", "fetch origin: fast-forward", "refs/remotes/origin/main", signed)
    (repo / "a.txt").write_text("to stash\n")
    bench.git("stash", "-q")
    (repo / ".mailmap").write_text("Evil <evil@example.com> Ann Tester <ann@example.com>\n")

    # --- arm every trap
    hooks = tmp_path / "evil-hooks"
    hooks.mkdir()
    for name in HOOKS:
        for d in (hooks, repo / ".git" / "hooks"):
            (d / name).write_text(f'#!/bin/sh\necho "hook {name}" >> "{marker}"\nexit 0\n')
            (d / name).chmod(0o755)
    settings = {
        "core.fsmonitor": str(mark),
        "core.hooksPath": str(hooks),
        "core.pager": str(mark),
        "core.editor": str(mark),
        "sequence.editor": str(mark),
        "core.sshCommand": str(mark),
        "core.askPass": str(mark),
        "core.alternateRefsCommand": str(mark),
        "diff.external": str(mark),
        "diff.evil.textconv": str(mark),
        "filter.evil.clean": str(mark),
        "filter.evil.smudge": str(mark),
        "filter.evil.required": "true",
        "merge.evil.driver": str(mark),
        "gpg.program": str(mark),
        "log.showSignature": "true",
        "credential.helper": f"!{mark}",
        "uploadpack.packObjectsHook": str(mark),
        "alias.lg": f"!{mark}",
        "remote.origin.uploadpack": str(mark),
        "remote.origin.url": "ext::" + str(mark),
        "protocol.ext.allow": "always",
        "pager.log": str(mark),
        "core.commitGraph": "true",
        "log.mailmap": "true",
        "mailmap.file": str(repo / ".mailmap"),
        "diff.renames": "copies",
        "diff.orderFile": str(mark),
        "log.decorate": "full",
        "core.quotePath": "true",
    }
    for key, value in settings.items():
        bench.git("config", key, value, cwd=repo)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=evil diff=evil merge=evil\n")
    bench.git("commit-graph", "write", "--reachable", cwd=repo)
    (repo / "a.txt").write_text("stat-dirty\n")  # makes status want to refresh/clean
    os.utime(repo / "a.txt", ns=(1, 1))

    # --- environment traps: inherited GIT_* variables and a hostile global config
    evil_home = tmp_path / "evil-home"
    (evil_home / ".config" / "git").mkdir(parents=True)
    for cfg in (evil_home / ".gitconfig", evil_home / ".config" / "git" / "config"):
        cfg.write_text(f"[core]\n\tfsmonitor = {mark}\n\tpager = {mark}\n[log]\n\tshowSignature = true\n")
    monkeypatch.setenv("HOME", str(evil_home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(evil_home / ".config"))
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo))
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='{mark}'")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.pager")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(mark))
    for var in ("GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_SSH_COMMAND", "GIT_ASKPASS"):
        monkeypatch.setenv(var, str(mark))
    shadow_tmp = tmp_path / "tmp"
    shadow_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shadow_tmp))

    before = snapshot(repo)
    h = read_history(repo)
    after = snapshot(repo)

    assert not marker.exists(), marker.read_text()
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert changed == set()
    assert list(shadow_tmp.iterdir()) == []  # the shadow repo was removed

    # it did real work: commits were listed through the shadow (git log with paths, authors
    # and dates: the signed commit's signature, mailmap, textconv... were never consulted),
    # replace refs ignored, context logs read
    assert [e.kind for e in h.events] == [
        "commit",
        "checkout",
        "commit",
        "checkout",
        "commit",
        "merge",
        "reset",
        "stash",
    ]
    assert [c.subject for c in h.events[0].commits] == ["c1"]
    assert [(c.subject, c.paths) for c in h.events[5].commits] == [("merge feature", ("b.txt",)), ("f1", ("b.txt",))]
    assert {c.author for e in h.events for c in e.commits} == {"Ann Tester"}
    assert all(c.author_date is not None for e in h.events for c in e.commits)
    assert [e.files_may_differ for e in h.events][-2:] == [True, True]
    assert [(x.ref, x.kind) for x in h.context] == [("refs/remotes/origin/main", "fetch"), ("refs/stash", "stash")]
    assert h.head == signed
    assert h.diagnostics == []

    # no reflog at all: the approximate fallback reads files and mtimes only
    monkeypatch.undo()
    shutil.rmtree(repo / ".git" / "logs")
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='{mark}'")
    monkeypatch.setattr(tempfile, "tempdir", str(shadow_tmp))
    before = snapshot(repo)
    h = read_history(repo)
    assert snapshot(repo) == before and not marker.exists()
    assert h.approximate and [(e.new, e.approximate) for e in h.events] == [(signed, True)]
    assert list(shadow_tmp.iterdir()) == []

    # the traps were armed: plain git in the repository does run them
    monkeypatch.undo()
    bench.git("status", "--porcelain", cwd=repo, check=False)
    assert marker.exists() and marker.read_text().strip()
