"""read_history on real repositories built with real git commands (git 2.39 behaviour).

Commit lists are NEWEST FIRST, exactly as ``git rev-list`` gives them.
"""

from __future__ import annotations

from datetime import timedelta

from timeline.git import GitHistory, read_history
from timeline.model import is_zero_sha


def subjects(commits) -> list[str]:
    return [c.subject for c in commits]


def kinds(history: GitHistory) -> list[str]:
    return [e.kind for e in history.events]


def no_diagnostics(history: GitHistory) -> None:
    assert history.diagnostics == [], [str(d) for d in history.diagnostics]


def test_clone_then_pull_fast_forward_lists_the_three_upstream_commits(bench, cloned):
    up, work = cloned
    tip0 = bench.sha(cwd=work)
    for i in (1, 2, 3):
        bench.commit(f"u{i}", cwd=up)
    bench.git("pull", "origin", "main", cwd=work)

    h = read_history(work)
    no_diagnostics(h)
    assert h.path == str(work)
    assert h.head == bench.sha(cwd=work)
    assert h.branch == "refs/heads/main"
    assert h.head_log == str(work / ".git" / "logs" / "HEAD")
    assert [e.id for e in h.events] == ["e1", "e2"]

    clone, pull = h.events
    assert clone.kind == "clone" and clone.message.startswith("clone: from ")
    assert is_zero_sha(clone.old) and clone.new == tip0 and clone.changes_commit
    assert subjects(clone.commits) == ["u0"]  # the new commit only, not the history
    assert pull.kind == "pull"
    assert pull.message == "pull origin main: Fast-forward"
    assert pull.old == tip0 and pull.new == h.head and pull.changes_commit
    assert subjects(pull.commits) == ["u3", "u2", "u1"]  # newest first (rev-list order)
    assert pull.commits_removed == []
    assert pull.line == 2 and pull.source == h.head_log and pull.ref == "HEAD"


def test_reset_hard_back_one_commit_lists_what_left(bench):
    bench.init()
    bench.commit("c1")
    bench.commit("c2")
    bench.git("reset", "-q", "--hard", "HEAD~1")
    h = read_history(bench.repo)
    no_diagnostics(h)
    reset = h.events[-1]
    assert reset.kind == "reset" and reset.message == "reset: moving to HEAD~1"
    assert reset.changes_commit
    assert reset.commits == []
    assert subjects(reset.commits_removed) == ["c2"]


def test_commit_checkout_amend_merge_cherry_pick_revert(bench):
    bench.init()
    bench.commit("c1", file="a.txt")
    bench.git("checkout", "-q", "-b", "feature")
    bench.commit("f1", file="b.txt")
    bench.commit("f2", file="c.txt")
    bench.git("checkout", "-q", "main")
    bench.commit("c2", file="d.txt")
    bench.git("commit", "-q", "--amend", "-m", "c2 amended")
    bench.git("merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    bench.git("checkout", "-q", "-b", "pick", "main~1")
    bench.git("cherry-pick", bench.sha("feature~1"))
    bench.git("revert", "--no-edit", "HEAD")

    h = read_history(bench.repo)
    no_diagnostics(h)
    assert kinds(h) == [
        "commit",
        "checkout",
        "commit",
        "commit",
        "checkout",
        "commit",
        "amend",
        "merge",
        "checkout",
        "cherry-pick",
        "revert",
    ]
    by_line = {e.line: e for e in h.events}
    assert [e.line for e in h.events] == list(range(1, 12))

    switch = by_line[2]  # checkout -b at the same commit
    assert switch.message == "checkout: moving from main to feature"
    assert not switch.changes_commit and switch.commits == [] and switch.commits_removed == []

    back = by_line[5]  # feature -> main: backward
    assert back.changes_commit
    assert back.commits == [] and subjects(back.commits_removed) == ["f2", "f1"]

    amend = by_line[7]  # divergent: one in, one out
    assert amend.message == "commit (amend): c2 amended"
    assert subjects(amend.commits) == ["c2 amended"] and subjects(amend.commits_removed) == ["c2"]

    merge = by_line[8]
    assert merge.message.startswith("merge feature: Merge made by the ")
    assert subjects(merge.commits) == ["merge feature", "f2", "f1"]
    assert merge.commits_removed == []

    to_pick = by_line[9]  # main -> main~1 ("c2 amended"): backward
    assert to_pick.commits == []
    assert subjects(to_pick.commits_removed) == ["merge feature", "f2", "f1"]

    pick = by_line[10]
    assert pick.message == "cherry-pick: f1" and subjects(pick.commits) == ["f1"]
    revert = by_line[11]
    assert revert.message == 'revert: Revert "f1"' and subjects(revert.commits) == ['Revert "f1"']


def test_stash_is_recognised_and_does_not_change_the_commit(bench):
    bench.init()
    bench.commit("c1")
    (bench.repo / "file.txt").write_text("dirty\n")
    bench.git("stash", "-q")
    bench.git("reset", "-q", "--hard")  # a plain reset to HEAD stays a reset
    h = read_history(bench.repo)
    no_diagnostics(h)
    assert kinds(h) == ["commit", "stash", "reset"]
    stash = h.events[1]
    assert stash.message == "reset: moving to HEAD"
    assert not stash.changes_commit and stash.old == stash.new
    assert stash.commits == [] and stash.commits_removed == []


def test_pull_rebase_burst_collapses_into_one_pull_event(bench, cloned):
    up, work = cloned
    before = bench.sha(cwd=work)
    bench.commit("upstream change", cwd=up, file="up.txt")
    bench.commit("local1", cwd=work, file="l1.txt")
    bench.commit("local2", cwd=work, file="l2.txt")
    pre = bench.sha(cwd=work)
    raw_lines = len(bench.head_log(work))
    bench.git("pull", "-q", "--rebase", "origin", "main", cwd=work)
    assert len(bench.head_log(work)) - raw_lines == 4  # start, pick, pick, finish

    h = read_history(work)
    no_diagnostics(h)
    assert kinds(h) == ["clone", "commit", "commit", "pull"]
    pull = h.events[-1]
    assert pull.message.startswith("pull -q --rebase origin main (start): checkout ")
    assert pull.old == pre and pull.new == h.head and pull.changes_commit
    assert pull.line == raw_lines + 1
    assert subjects(pull.commits) == ["local2", "local1", "upstream change"]
    assert subjects(pull.commits_removed) == ["local2", "local1"]
    assert h.spans[pull.id] == (raw_lines + 1, raw_lines + 4, 4)
    assert before != pre


def test_rebase_burst_collapses_and_abort_is_no_change(bench):
    bench.init()
    bench.commit("base", file="a.txt")
    bench.git("checkout", "-q", "-b", "topic")
    bench.commit("t1", file="t1.txt")
    bench.commit("t2", file="t2.txt")
    old_topic = bench.sha()
    bench.git("checkout", "-q", "main")
    bench.commit("m1", file="m1.txt")
    bench.git("checkout", "-q", "topic")
    bench.git("rebase", "-q", "main")
    # a conflicting rebase, aborted: HEAD ends where it started
    bench.git("checkout", "-q", "-b", "clash", "main")
    bench.commit("clash here", file="t1.txt", content="other\n")
    bench.git("rebase", "-q", "topic", check=False)
    bench.git("rebase", "--abort")

    h = read_history(bench.repo)
    no_diagnostics(h)
    assert kinds(h) == [
        "commit",
        "checkout",
        "commit",
        "commit",
        "checkout",
        "commit",
        "checkout",
        "rebase",
        "checkout",
        "commit",
        "rebase",
    ]
    rebase = h.events[7]
    assert rebase.message == "rebase (start): checkout main"
    assert rebase.old == old_topic and rebase.changes_commit
    first, last, count = h.spans[rebase.id]
    assert first == rebase.line and count == 4  # start, pick, pick, finish
    assert subjects(rebase.commits) == ["t2", "t1", "m1"]
    assert subjects(rebase.commits_removed) == ["t2", "t1"]

    aborted = h.events[10]
    assert aborted.message.startswith("rebase (start): checkout topic")
    assert aborted.old == aborted.new and not aborted.changes_commit
    assert aborted.commits == [] and aborted.commits_removed == []
    assert h.spans[aborted.id][2] == 2  # start, abort


def test_branch_rename_pair_is_one_non_code_event(bench):
    bench.init()
    bench.commit("c1")
    bench.git("branch", "-m", "main", "trunk")
    h = read_history(bench.repo)
    no_diagnostics(h)
    assert kinds(h) == ["commit", "branch"]
    rename = h.events[1]
    assert rename.message == "Branch: renamed refs/heads/main to refs/heads/trunk"
    assert rename.old == rename.new == h.head and not rename.changes_commit
    assert h.spans[rename.id] == (2, 3, 2)
    assert h.branch == "refs/heads/trunk"


def test_time_is_aware_in_the_writers_offset_and_file_order_is_kept(bench):
    bench.init()
    bench.commit("c1", at=1_700_000_000, tz="+0530")
    bench.commit("c2", at=1_600_000_000, tz="-0330")  # the clock went backwards
    bench.commit("c3", at=1_650_000_000, tz="+0000")
    h = read_history(bench.repo)
    no_diagnostics(h)
    assert [e.ts for e in h.events] == [1_700_000_000, 1_600_000_000, 1_650_000_000]
    offsets = [e.time.utcoffset() for e in h.events]
    assert offsets == [timedelta(hours=5, minutes=30), -timedelta(hours=3, minutes=30), timedelta(0)]
    assert all(int(e.time.timestamp()) == e.ts for e in h.events)
    assert [c.subject for e in h.events for c in e.commits] == ["c1", "c2", "c3"]


def test_detached_head_and_packed_refs(bench):
    bench.init()
    bench.commit("c1")
    c2 = bench.commit("c2")
    bench.git("pack-refs", "--all")
    assert not (bench.repo / ".git" / "refs" / "heads" / "main").exists()
    h = read_history(bench.repo)
    assert h.head == c2 and h.branch == "refs/heads/main"
    bench.git("checkout", "-q", "--detach", "HEAD~1")
    h = read_history(bench.repo)
    assert h.head == bench.sha() and h.branch is None
    assert h.events[-1].kind == "checkout"
    assert subjects(h.events[-1].commits_removed) == ["c2"]


def test_unborn_repository_has_no_head_and_no_log(bench):
    repo = bench.init()
    h = read_history(repo)
    assert h.head is None and h.events == []
    assert h.branch == "refs/heads/main"
    assert any("no reflog file" in d.message and d.line is None for d in h.diagnostics)


def test_sha256_repository(bench):
    repo = bench.root / "r256"
    bench.git("init", "-q", "--object-format=sha256", str(repo), cwd=bench.root)
    bench.repo = repo
    bench.commit("c1")
    bench.commit("c2")
    h = read_history(repo)
    no_diagnostics(h)
    assert h.object_format == "sha256" and len(h.head) == 64
    assert subjects(h.events[1].commits) == ["c2"]


def test_shallow_clone_commits_listed_with_a_diagnostic(bench):
    up = bench.init("up")
    for i in range(3):
        bench.commit(f"u{i}", cwd=up)
    work = bench.root / "work"
    bench.git("clone", "-q", "--depth=1", f"file://{up}", str(work), cwd=bench.root)
    bench.commit("u3", cwd=up)
    bench.commit("u4", cwd=up)
    bench.git("pull", "-q", "origin", "main", cwd=work)
    h = read_history(work)
    assert kinds(h) == ["clone", "pull"]
    assert subjects(h.events[0].commits) == ["u2"]
    assert subjects(h.events[1].commits) == ["u4", "u3"]
    assert [d.message for d in h.diagnostics][:1] == ["shallow clone: commit lists stop at the shallow boundary"]
    # the clone's commit u2 is the shallow boundary: its missing parents are reported, not fatal
    (boundary,) = h.diagnostics[1:]
    assert boundary.line == 1 and "shallow-clone boundary" in boundary.message
    assert h.events[0].commits[0].paths is None  # git would list every file as added
    assert h.events[1].commits[0].paths == ("file.txt",)


def test_rebase_stopped_on_a_conflict_is_reported_as_unterminated(bench):
    bench.init()
    bench.commit("base", file="a.txt")
    bench.git("checkout", "-q", "-b", "topic")
    bench.commit("t1", file="a.txt", content="topic\n")
    bench.git("checkout", "-q", "main")
    bench.commit("m1", file="a.txt", content="main\n")
    bench.git("checkout", "-q", "topic")
    bench.git("rebase", "-q", "main", check=False)  # stops: conflict in a.txt
    h = read_history(bench.repo)
    rebase = h.events[-1]
    assert rebase.kind == "rebase" and rebase.message == "rebase (start): checkout main"
    assert h.head == bench.sha("main") and h.branch is None  # detached at main, mid-rebase
    assert [c.subject for c in rebase.commits] == ["m1"]
    assert [c.subject for c in rebase.commits_removed] == ["t1"]
    assert any(d.line == rebase.line and "no (finish) or (abort)" in d.message for d in h.diagnostics)
