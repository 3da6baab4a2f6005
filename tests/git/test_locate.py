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
    # first line of a new worktree's HEAD log has no message (no TAB); with the
    # "reset: moving to HEAD" git worktree add writes next, it is one "worktree" event
    assert [(e.kind, e.message) for e in h.events] == [("worktree", ""), ("commit", "commit: wt-commit")]
    assert h.spans["e1"] == (1, 2, 2)
    assert not h.events[0].files_may_differ
    assert h.events[0].changes_commit and [c.subject for c in h.events[0].commits] == ["c1"]
    assert [c.subject for c in h.events[1].commits] == ["wt-commit"]
    assert h.coverage.reason == "worktree-created"
    assert h.diagnostics == []

    main = read_history(repo)  # the main worktree is unaffected
    assert [e.message for e in main.events] == ["commit (initial): c1", "commit: c2"]


def test_not_a_repository_raises_one_line_naming_the_path(tmp_path):
    plain = tmp_path / "plain" / "dir"
    plain.mkdir(parents=True)
    with pytest.raises(GitError) as err:
        read_history(plain)
    msg = str(err.value)
    assert str(plain) in msg and "not a git repository" in msg and "\n" not in msg

    with pytest.raises(GitError, match="no such file or folder"):
        read_history(tmp_path / "missing")


@pytest.fixture
def old_git(monkeypatch):
    """Pretend the git on PATH is older than 2.45, whatever this machine has."""
    from timeline.git import reftable

    monkeypatch.setattr(reftable, "git_version", lambda git=None: (2, 39, 5))


def test_reftable_repository_is_reported_clearly(bench, old_git):
    repo = bench.init()
    bench.commit("c1")
    with open(repo / ".git" / "config", "a") as fh:
        fh.write("[extensions]\n\trefStorage = reftable\n")
    assert locate(repo).ref_storage == "reftable"
    h = read_history(repo)
    assert h.events == [] and h.ref_storage == "reftable" and h.coverage.reason == "unread"
    (d,) = h.diagnostics
    assert str(repo) in d.message and "reftable ref storage" in d.message
    assert "needs git >= 2.45 on PATH (found: 2.39.5)" in d.message
    assert "no reflog" not in d.message.lower()  # the reflog exists: never say there is none


def test_reftable_tables_list_is_detected_too(bench, old_git):
    repo = bench.init()
    (repo / ".git" / "reftable").mkdir()
    (repo / ".git" / "reftable" / "tables.list").write_text("")
    assert locate(repo).ref_storage == "reftable"
    h = read_history(repo)
    assert h.events == [] and "reftable" in h.diagnostics[0].message


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
    cfg = read_config(
        b'[core]\n\tbare = false\n[extensions]\n  objectFormat = "sha256" ; c\n'
        b'[remote "Origin"]\nurl = x\n[a.B]\nflag\n'
    )
    assert cfg["core.bare"] == "false"
    assert cfg["extensions.objectformat"] == "sha256"
    assert cfg["remote.Origin.url"] == "x"
    assert cfg["a.b.flag"] == "true"
