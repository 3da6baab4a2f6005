"""Finding the git dirs: root, subfolder, linked worktree, .git itself; what is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from timeline.git import GitError, read_history
from timeline.git.locate import locate, read_config


def test_root_subfolder_and_dot_git_resolve_to_the_same_checkout(bench):
    repo = bench.init()
    bench.commit("c1", file="src/pkg/mod.py")
    sub = repo / "src" / "pkg"
    for where in (repo, sub, repo / ".git", repo / ".git" / "logs", sub / "mod.py"):
        h = read_history(where)
        assert h.path == str(repo), where
        assert h.git_dir == h.common_dir == str(repo / ".git")
        assert [e.message for e in h.events] == ["commit (initial): c1"]


def test_linked_worktree_uses_its_own_head_log(bench):
    repo = bench.init()
    bench.commit("c1")
    bench.commit("c2")
    wt = bench.root / "wt"
    bench.git("worktree", "add", "-q", str(wt), "-b", "wtb", "HEAD~1")
    wt_commit = bench.commit("wt-commit", cwd=wt, file="w.txt")
    (wt / "deep").mkdir()

    h = read_history(wt / "deep")
    assert h.path == str(wt)
    assert h.common_dir == str(repo / ".git")
    assert h.git_dir == str(repo / ".git" / "worktrees" / "wt")
    assert h.head_log == str(repo / ".git" / "worktrees" / "wt" / "logs" / "HEAD")
    assert h.head == wt_commit and h.branch == "refs/heads/wtb"
    # first line of a new worktree's HEAD log has no message (no TAB)
    assert [(e.kind, e.message) for e in h.events] == [
        ("other", ""), ("reset", "reset: moving to HEAD"), ("commit", "commit: wt-commit")]
    assert h.events[0].changes_commit and [c.subject for c in h.events[0].commits] == ["c1"]
    assert [c.subject for c in h.events[2].commits] == ["wt-commit"]
    assert h.diagnostics == []

    main = read_history(repo)                   # the main worktree is unaffected
    assert [e.message for e in main.events] == ["commit (initial): c1", "commit: c2"]


def test_not_a_repository_raises_one_line_naming_the_path(tmp_path):
    plain = tmp_path / "plain" / "dir"
    plain.mkdir(parents=True)
    with pytest.raises(GitError) as err:
        read_history(plain)
    msg = str(err.value)
    assert str(plain) in msg and "not a git repository" in msg and "\n" not in msg

    with pytest.raises(GitError, match="no such file or directory"):
        read_history(tmp_path / "missing")


def test_reftable_repository_is_reported_clearly(bench):
    repo = bench.init()
    bench.commit("c1")
    with open(repo / ".git" / "config", "a") as fh:
        fh.write("[extensions]\n\trefStorage = reftable\n")
    with pytest.raises(GitError, match="reftable ref storage is not supported yet") as err:
        read_history(repo)
    assert str(repo) in str(err.value)


def test_reftable_tables_list_is_detected_too(bench):
    repo = bench.init()
    (repo / ".git" / "reftable").mkdir()
    (repo / ".git" / "reftable" / "tables.list").write_text("")
    with pytest.raises(GitError, match="reftable"):
        read_history(repo)


def test_bad_dot_git_file_and_escaping_commondir_are_refused(bench, tmp_path):
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / ".git").write_text("gitdir: /nonexistent/place\n")
    with pytest.raises(GitError, match="not a git repository"):
        read_history(fake)
    (fake / ".git").write_text("garbage\n")
    with pytest.raises(GitError, match="invalid .git file"):
        read_history(fake)

    repo = bench.init()
    bench.commit("c1")
    wt = bench.root / "wt"
    bench.git("worktree", "add", "-q", "--detach", str(wt))
    other = bench.init("other")
    bench.commit("o1", cwd=other)
    # a commondir pointing at another repository, not at an ancestor of the worktree git dir
    (repo / ".git" / "worktrees" / "wt" / "commondir").write_text(str(other / ".git") + "\n")
    with pytest.raises(GitError, match="commondir"):
        read_history(wt)


def test_object_format_and_bare_detection(bench):
    bare = bench.init("bare.git", bare=True)
    loc = locate(bare)
    assert loc.bare and loc.git_dir == loc.common_dir == loc.worktree == Path(os.path.realpath(bare))
    h = read_history(bare)
    assert h.events == [] and any("no reflog file" in d.message for d in h.diagnostics)


def test_read_config_minimal_parser():
    cfg = read_config(b'[core]\n\tbare = false\n[extensions]\n  objectFormat = "sha256" ; c\n'
                      b'[remote "Origin"]\nurl = x\n[a.B]\nflag\n')
    assert cfg["core.bare"] == "false"
    assert cfg["extensions.objectformat"] == "sha256"
    assert cfg["remote.Origin.url"] == "x"
    assert cfg["a.b.flag"] == "true"
