"""Every way a checkout moves, on real repositories built with real git commands:
branch moves made elsewhere merged in, context logs, files that may differ, pull modes,
commit facts, coverage, and the no-reflog fallback. git 2.39 behaviour.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from timeline.export import commit_to_dict, event_to_dict, listed_commits
from timeline.git import read_history
from timeline.git.history import GitHistory
from timeline.git.runner import git_version

ZERO = "0" * 40


def subjects(commits) -> list[str]:
    return [c.subject for c in commits]


def kinds(h: GitHistory) -> list[str]:
    return [e.kind for e in h.events]


def no_diagnostics(h: GitHistory) -> None:
    assert h.diagnostics == [], [str(d) for d in h.diagnostics]


# --------------------------------------------------------------------------- other worktrees


def test_branch_moved_from_another_worktree_is_merged_in(bench):
    repo = bench.init()
    bench.commit("c1", file="a.txt")
    c2 = bench.commit("c2", file="a.txt")
    wt = bench.root / "wt"
    bench.git("worktree", "add", "-q", "--detach", str(wt))
    x = bench.commit("made in wt", cwd=wt, file="w.txt")
    # the other worktree moves the branch the main worktree has checked out: no HEAD-log line
    bench.git("update-ref", "-m", "update-ref from other worktree", "refs/heads/main", x, cwd=wt)
    assert len(bench.head_log(repo)) == 2
    c4 = bench.commit("c4", file="b.txt")  # committed on top of x, files of c2
    y = bench.commit("made in wt 2", cwd=wt, file="w2.txt")
    bench.git("update-ref", "refs/heads/main", y, cwd=wt)  # no message at all; the last move

    h = read_history(repo)
    no_diagnostics(h)  # the chain gap and HEAD != last line: explained
    assert h.head == y
    assert [(e.id, e.kind, e.ref) for e in h.events] == [
        ("e1", "commit", "HEAD"),
        ("e2", "commit", "HEAD"),
        ("e3", "other", "refs/heads/main"),
        ("e4", "commit", "HEAD"),
        ("e5", "other", "refs/heads/main"),
    ]
    moved, tail = h.events[2], h.events[4]
    branch_log = str(repo / ".git" / "logs" / "refs" / "heads" / "main")
    assert (moved.old, moved.new, moved.message) == (c2, x, "update-ref from other worktree")
    assert moved.source == branch_log and moved.line == 3
    assert moved.files_may_differ and moved.changes_commit
    assert moved.note.startswith("HEAD moved, files did not")
    assert subjects(moved.commits) == ["made in wt"] and moved.commits_removed == []
    assert (tail.old, tail.new, tail.message, tail.files_may_differ) == (c4, y, "", True)
    assert subjects(tail.commits) == ["made in wt 2"]
    assert not any(e.files_may_differ for e in h.events if e.ref == "HEAD")
    d = event_to_dict(moved, {sha: i for i, sha in enumerate(listed_commits([moved]))})
    assert d["ref"] == "refs/heads/main" and d["files_may_differ"] is True


def test_branch_moves_while_head_was_elsewhere_are_not_merged(bench):
    repo = bench.init()
    c1 = bench.commit("c1")
    bench.commit("c2")
    bench.git("checkout", "-q", "-b", "side")
    bench.git("update-ref", "refs/heads/main", c1)  # main moves while HEAD is on side
    bench.git("checkout", "-q", "main")
    h = read_history(repo)
    no_diagnostics(h)
    assert [e.ref for e in h.events] == ["HEAD"] * 4


# --------------------------------------------------------------------------- context


def test_fetches_are_context_not_events(bench, cloned):
    up, work = cloned
    bench.commit("u1", cwd=up)
    bench.git("fetch", "-q", "origin", cwd=work)
    bench.commit("u2", cwd=up)
    bench.git("pull", "-q", "origin", "main", cwd=work)

    h = read_history(work)
    no_diagnostics(h)
    assert kinds(h) == ["clone", "pull"]
    assert h.events[1].detail == "fast-forward"
    remotes = work / ".git" / "logs" / "refs" / "remotes" / "origin"
    assert [(x.id, x.ref, x.kind, x.message, x.source) for x in h.context] == [
        ("x1", "refs/remotes/origin/HEAD", "clone", f"clone: from {up}", str(remotes / "HEAD")),
        ("x2", "refs/remotes/origin/main", "fetch", "fetch -q origin: fast-forward", str(remotes / "main")),
        ("x3", "refs/remotes/origin/main", "fetch", "pull -q origin main: fast-forward", str(remotes / "main")),
    ]
    assert h.context[1].changes_commit and h.context[1].new == bench.sha("origin/main~1", cwd=work)
    assert all(x.id not in {e.id for e in h.events} for x in h.context)


def test_stash_is_an_event_and_its_entry_is_context(bench):
    repo = bench.init()
    c1 = bench.commit("c1")
    (repo / "file.txt").write_text("dirty\n")
    bench.git("stash", "-q")
    h = read_history(repo)
    no_diagnostics(h)
    assert kinds(h) == ["commit", "stash"]
    stash = h.events[1]
    assert stash.files_may_differ and not stash.changes_commit and "stash" in stash.note
    assert [(x.ref, x.kind, x.message, x.old) for x in h.context] == [
        ("refs/stash", "stash", f"WIP on main: {c1[:7]} c1", ZERO)
    ]
    assert h.context[0].source == str(repo / ".git" / "logs" / "refs" / "stash")


# --------------------------------------------------------------------------- files may differ


def test_reset_soft_marks_files_may_differ_and_commits_do_not(bench):
    bench.init()
    bench.commit("c1")
    bench.commit("c2")
    bench.git("checkout", "-q", "-b", "other")
    bench.git("reset", "-q", "--soft", "HEAD~1")
    bench.git("reset", "-q")  # reset: moving to HEAD
    h = read_history(bench.repo)
    no_diagnostics(h)
    assert [(e.kind, e.files_may_differ) for e in h.events] == [
        ("commit", False),
        ("commit", False),
        ("checkout", False),
        ("reset", True),
        ("reset", True),
    ]
    soft, to_head = h.events[3], h.events[4]
    assert soft.changes_commit and subjects(soft.commits_removed) == ["c2"]
    assert "--soft" in soft.note and to_head.message == "reset: moving to HEAD"
    assert not to_head.changes_commit


# --------------------------------------------------------------------------- pull modes


def test_pull_fast_forward_merge_and_rebase_details(bench, cloned):
    up, work = cloned
    bench.commit("u1", cwd=up, file="u1.txt")
    bench.git("pull", "-q", cwd=work)  # fast-forward
    bench.commit("u2", cwd=up, file="u2.txt")
    bench.commit("l1", cwd=work, file="l1.txt")
    bench.git("pull", "-q", "--no-rebase", "--no-edit", cwd=work)  # true merge
    bench.commit("u3", cwd=up, file="u3.txt")
    bench.commit("l2", cwd=work, file="l2.txt")
    bench.git("pull", "-q", "--rebase", cwd=work)  # rebase burst
    bench.git("-c", "pull.rebase=true", "pull", "-q", cwd=work)  # up to date: no line
    bench.commit("u4", cwd=up, file="u4.txt")
    bench.git("-c", "pull.rebase=true", "pull", "-q", cwd=work)  # rebase from config, ff

    h = read_history(work)
    no_diagnostics(h)
    assert all(e.ref == "HEAD" for e in h.events)  # the branch's lines all matched HEAD's
    pulls = [e for e in h.events if e.kind == "pull"]
    assert [(e.message.split(":")[0], e.detail) for e in pulls] == [
        ("pull -q", "fast-forward"),
        ("pull -q --no-rebase --no-edit", "merge"),
        ("pull -q --rebase (start)", "rebase"),
        ("pull -q (start)", "rebase"),
    ]  # rebase from config
    merge = pulls[1]
    assert subjects(merge.commits)[0].startswith("Merge branch 'main' of ")
    assert set(subjects(merge.commits)[1:]) == {"u2"}
    rebase = pulls[2]
    # the local merge is linearised: l1 and l2 are replayed onto u3
    assert subjects(rebase.commits) == ["l2", "l1", "u3"]
    assert subjects(rebase.commits_removed)[0] == "l2"
    assert h.spans[rebase.id][2] == 4  # start, pick, pick, finish
    assert not any(e.files_may_differ for e in pulls)


# --------------------------------------------------------------------------- commit facts


def test_commits_carry_author_dates_and_paths(bench):
    bench.init()
    bench.commit("c1", file="a.txt")
    (bench.repo / "src").mkdir()
    (bench.repo / "src" / "m.py").write_text("x\n")
    (bench.repo / "odd\tname.txt").write_text("y\n")
    bench.git("add", "-A")
    bench.git(
        "commit",
        "-q",
        "-m",
        "second",
        "--author=Bob Author <bob@example.com>",
        "--date=@1600000000 +0200",
        at=1_700_000_500,
        tz="-0330",
    )
    bench.git("mv", "a.txt", "b.txt")
    bench.git("commit", "-q", "-m", "rename")
    bench.git("checkout", "-q", "-b", "topic", "HEAD~1")
    bench.commit("t1", file="t.txt")
    bench.git("checkout", "-q", "main")
    bench.git("merge", "-q", "--no-ff", "-m", "merge topic", "topic")

    h = read_history(bench.repo)
    no_diagnostics(h)
    first = h.events[0].commits[0]
    assert first.paths == ("a.txt",)  # a root commit: all its files
    second = h.events[1].commits[0]
    assert (second.subject, second.author, second.author_email) == ("second", "Bob Author", "bob@example.com")
    assert second.author_date == datetime(2020, 9, 13, 14, 26, 40, tzinfo=timezone(timedelta(hours=2)))
    assert second.committer_date == datetime.fromtimestamp(1_700_000_500, timezone(-timedelta(hours=3, minutes=30)))
    assert second.paths == ("odd\tname.txt", "src/m.py")  # -z: no quoting
    assert h.events[2].commits[0].paths == ("a.txt", "b.txt")  # no rename detection: both sides
    merge = h.events[-1]
    assert merge.detail == "merge"
    assert [(c.subject, c.paths) for c in merge.commits] == [("merge topic", ("t.txt",)), ("t1", ("t.txt",))]
    listed = listed_commits(h.events)
    positions = {sha: index for index, sha in enumerate(listed)}
    assert event_to_dict(h.events[1], positions)["commits"][0] == positions[second.sha]
    d = commit_to_dict(listed[second.sha])
    assert d == {
        "sha": second.sha,
        "subject": "second",
        "author": "Bob Author",
        "author_email": "bob@example.com",
        "author_date": "2020-09-13T14:26:40+02:00",
        "committer_date": "2023-11-14T18:51:40-03:30",
        "paths": ["odd\tname.txt", "src/m.py"],
    }


def test_a_10000_commit_pull_is_described_with_one_git_call(bench, cloned, count_git_processes):
    up, work = cloned
    base = bench.sha(cwd=up)
    stream = []
    for i in range(10_000):
        msg = f"bulk {i}".encode()
        body = f"{i}\n".encode()
        stream.append(b"commit refs/heads/main\n")
        stream.append(f"committer Ann Tester <ann@example.com> {1_700_001_000 + i} +0000\n".encode())
        stream.append(b"data %d\n%s\n" % (len(msg), msg))
        if i == 0:
            stream.append(f"from {base}\n".encode())
        stream.append(b"M 644 inline bulk.txt\ndata %d\n%s\n" % (len(body), body))
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        input=b"".join(stream),
        cwd=up,
        env=bench.env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    bench.git("pull", "-q", "origin", "main", cwd=work)

    calls = count_git_processes()
    h = read_history(work)
    no_diagnostics(h)
    pull = h.events[1]
    assert len(pull.commits) == 10_000 and pull.commits_removed == []
    assert pull.commits[0].subject == "bulk 9999" and pull.commits[-1].subject == "bulk 0"
    assert all(c.paths == ("bulk.txt",) for c in pull.commits)
    # init, cat-file, ONE walk describing all 10,000 (and the clone's commit: the pull's old end)
    (walk,) = [c for c in calls if "log" in c]
    assert "--stdin" in walk and "--no-walk=unsorted" not in walk
    assert len(calls) == 3


# --------------------------------------------------------------------------- coverage


def test_coverage_starts_at_the_clone(bench, cloned):
    _up, work = cloned
    h = read_history(work)
    assert h.coverage.reason == "clone" and h.coverage.event == "e1"
    assert h.coverage.ts == h.events[0].ts


def test_coverage_after_expiry_is_reported(bench):
    repo = bench.init()
    bench.commit("c1")
    bench.commit("c2")
    bench.commit("c3")
    log = repo / ".git" / "logs" / "HEAD"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[1:]))  # what gc's expiry leaves
    h = read_history(repo)
    assert h.coverage.reason == "expired-or-deleted" and h.coverage.ts == h.events[0].ts
    (d,) = h.diagnostics
    assert d.line == 1 and "reflog coverage starts here" in d.message and "expired" in d.message


# --------------------------------------------------------------------------- no reflog at all


def test_deleted_logs_fall_back_to_approximate_times(bench):
    repo = bench.init()
    c1 = bench.commit("c1")
    c2 = bench.commit("c2")
    gd = repo / ".git"
    shutil.rmtree(gd / "logs")
    (gd / "ORIG_HEAD").write_text(c1 + "\n")
    (gd / "FETCH_HEAD").write_text(f"{c1}\t\tbranch 'main' of /somewhere\n")
    os.utime(gd / "HEAD", (1_700_100_000, 1_700_100_000))
    os.utime(gd / "refs" / "heads" / "main", (1_700_200_000, 1_700_200_000))
    os.utime(gd / "ORIG_HEAD", (1_700_200_001, 1_700_200_001))
    os.utime(gd / "FETCH_HEAD", (1_700_150_000, 1_700_150_000))

    h = read_history(repo)
    assert h.approximate and h.coverage.reason == "approximate"
    (ev,) = h.events
    assert (ev.kind, ev.ts, ev.old, ev.new, ev.approximate) == ("other", 1_700_200_000, c1, c2, True)
    assert ev.ref == "HEAD" and ev.line is None and ev.source == str(gd / "refs" / "heads" / "main")
    assert ev.message.startswith("(approximate)") and "upper bound" in ev.note
    assert subjects(ev.commits) == ["c2"]
    (fetch,) = h.context
    assert (fetch.kind, fetch.ref, fetch.new, fetch.ts, fetch.approximate) == (
        "fetch",
        "FETCH_HEAD",
        c1,
        1_700_150_000,
        True,
    )
    (warning,) = h.diagnostics
    assert "APPROXIMATE" in warning.message and "ORIG_HEAD" in warning.message
    assert event_to_dict(ev, {sha: i for i, sha in enumerate(listed_commits([ev]))})["approximate"] is True

    # a checkout after the branch's last write: HEAD's own time, kind checkout
    os.utime(gd / "HEAD", (1_700_300_000, 1_700_300_000))
    (ev,) = read_history(repo).events
    assert (ev.kind, ev.ts, ev.old) == ("checkout", 1_700_300_000, ZERO)


def test_packed_branch_uses_packed_refs_time(bench):
    repo = bench.init()
    bench.commit("c1")
    c2 = bench.commit("c2")
    bench.git("pack-refs", "--all")
    gd = repo / ".git"
    shutil.rmtree(gd / "logs")
    os.utime(gd / "HEAD", (1_700_100_000, 1_700_100_000))
    os.utime(gd / "packed-refs", (1_700_200_000, 1_700_200_000))
    (ev,) = read_history(repo).events
    assert (ev.ts, ev.new, ev.source) == (1_700_200_000, c2, str(gd / "packed-refs"))


# --------------------------------------------------------------------------- reftable


def _real_reftable_git() -> bool:
    v = git_version()
    return v is not None and v >= (2, 45, 0)


@pytest.mark.skipif(not _real_reftable_git(), reason="needs git >= 2.45 on PATH (reftable)")
def test_real_reftable_repository_is_read_through_git_reflog(bench):
    repo = bench.root / "rt"
    bench.git("init", "-q", "--ref-format=reftable", str(repo), cwd=bench.root)
    bench.repo = repo
    bench.commit("c1")
    c2 = bench.commit("c2")
    bench.git("checkout", "-q", "-b", "topic", "HEAD~1")
    c3 = bench.commit("c3")
    assert not (repo / ".git" / "logs").exists()
    # planted programs: none may run (git reflog runs in a shadow holding a copy of the tables)
    marker = bench.root / "marker.log"
    mark = bench.root / "mark"
    mark.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexit 0\n')
    mark.chmod(0o755)
    for key in ("core.fsmonitor", "core.pager", "gpg.program", "diff.external", "core.hooksPath"):
        bench.git("config", key, str(mark))
    bench.git("config", "log.showSignature", "true")
    h = read_history(repo)
    assert not marker.exists()
    assert h.ref_storage == "reftable" and h.head == c3 and h.branch == "refs/heads/topic"
    assert kinds(h) == ["commit", "commit", "checkout", "commit"]
    assert all(e.old_inferred for e in h.events)
    assert h.events[2].old == c2 and subjects(h.events[2].commits_removed) == ["c2"]
    assert subjects(h.events[3].commits) == ["c3"]
    assert any("reftable" in d.message and "inferred" in d.message for d in h.diagnostics)
