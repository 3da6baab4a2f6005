"""What many moves brought in and took away, with a constant number of git processes (not one a
move: 2,000 moves must not start 2,000 git processes): one walk from all the moves' ends (a ``git log`` that describes
each commit it reads). Checked against git itself (``git rev-list old..new`` per move, and the per-move
``ObjectStore.between``) on real repositories built with real git commands.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest

from timeline import scenario
from timeline.git import objects as objects_module
from timeline.git import read_history
from timeline.git.objects import ObjectStore, ObjectStoreError
from timeline.model import is_zero_sha
from timeline.scenario import FastCommit


def rev_list(bench, repo: Path, rng: str) -> list[str]:
    out = bench.git("rev-list", rng, cwd=repo, at=bench.clock)
    return out.split() if out else []


def range_ids(store: ObjectStore, pairs) -> dict:
    """``between_many`` with commit ids instead of ``CommitInfo``s."""
    return {
        pair: r if isinstance(r, ObjectStoreError) else ([c.sha for c in r[0]], [c.sha for c in r[1]], r[2])
        for pair, r in store.between_many(pairs).items()
    }


def walks(calls: list[list[str]]) -> list[list[str]]:
    """The walks among git processes: ``git log --stdin`` (not ``--no-walk``)."""
    return [c for c in calls if "log" in c and "--stdin" in c and "--no-walk=unsorted" not in c]


def fast_import(bench, repo: Path, commits: list[tuple[int, list[int], int, str]]) -> list[str]:
    """Commits ``(mark, parent marks, committer time, file)`` into ``repo`` (refs/heads/gen);
    returns the shas by mark order."""
    shas = scenario.fast_import(
        repo,
        [
            FastCommit(mark, tuple(parents), when, path, ref="refs/heads/gen", message=f"g{mark}")
            for mark, parents, when, path in commits
        ],
        bench.env,
    )
    return [shas[mark] for mark, *_ in commits]


# --------------------------------------------------------------------------- many moves


def test_many_moves_take_a_constant_number_of_git_processes(bench, cloned, count_git_processes, monkeypatch):
    up, work = cloned
    for r in range(6):
        for i in range(3):
            bench.commit(f"u{r}.{i}", cwd=up, file="u.txt")
        bench.git("pull", "-q", cwd=work)  # ff, or a merge
        bench.commit(f"m{r}.1", file="m.txt")
        bench.commit(f"m{r}.2", file="m.txt")
        bench.git("checkout", "-q", "-b", f"topic{r}", "HEAD~2")
        t = bench.commit(f"t{r}.1", file=f"t{r}.txt")
        bench.commit(f"t{r}.2", file=f"t{r}.txt", at=bench.clock)  # the same second
        bench.git("checkout", "-q", "main")
        bench.git("merge", "-q", "--no-ff", "-m", f"merge topic{r}", f"topic{r}")
        bench.git("reset", "-q", "--hard", "HEAD~1")
        bench.git("reset", "-q", "--hard", "ORIG_HEAD")
        bench.git("checkout", "-q", "--detach", "HEAD~3")
        bench.git("checkout", "-q", t)
        bench.git("checkout", "-q", "main")
        bench.git("commit", "-q", "--amend", "-m", f"merge topic{r} (amended)")
        bench.git("rebase", "-q", f"topic{r}~1")  # linearise: picks, same second
        bench.git("reset", "-q", "--hard", "ORIG_HEAD")
    bench.git("pull", "-q", "--rebase", cwd=work)

    calls = count_git_processes()
    h = read_history(work)
    monkeypatch.undo()
    assert [d.message for d in h.diagnostics] == []
    ranged = [e for e in h.events if e.changes_commit and not is_zero_sha(e.old)]
    pairs = {(e.old, e.new) for e in ranged}
    assert len(pairs) >= 50
    # init, cat-file --batch-check, ONE walk (a git log describing what it reads), and one
    # git log for the clone's commit if the walk did not read it: not one per move
    assert len(calls) <= 4, calls
    assert len(walks(calls)) == 1

    forward = backward = divergent = 0
    with ObjectStore(work / ".git") as store:
        for e in ranged:
            arrived, left = [c.sha for c in e.commits], [c.sha for c in e.commits_removed]
            # exactly git's sets, in git's order (old..new: what came; new..old: what left)
            assert arrived == rev_list(bench, work, f"{e.old}..{e.new}"), e
            assert left == rev_list(bench, work, f"{e.new}..{e.old}"), e
            # and exactly what the per-move code gives: same CommitInfo, same order
            assert (e.commits, e.commits_removed, False) == store.between(e.old, e.new)
            forward += bool(arrived and not left)
            backward += bool(left and not arrived)
            divergent += bool(arrived and left)
    assert forward and backward and divergent
    merges = [c for e in ranged for c in e.commits if c.subject.startswith("merge topic")]
    assert merges and all(c.paths for c in merges)


def test_random_graphs_give_git_s_sets_and_order(bench):
    """Branchy histories with merges and same-second commits, many random moves: each move's
    lists equal ``git rev-list old..new`` / ``new..old`` (set and order) and ``between``."""
    repo = bench.init()
    rng = random.Random(11)
    commits: list[tuple[int, list[int], int, str]] = []
    when = 1_700_000_000
    for mark in range(1, 401):
        if mark == 1:
            parents: list[int] = []
        else:
            recent = list(range(max(1, mark - 25), mark))
            parents = [rng.choice(recent)]
            if rng.random() < 0.15 and len(recent) > 1:
                other = rng.choice(recent)
                if other != parents[0]:
                    parents.append(other)
        when += rng.choice((0, 0, 1, 60))  # many commits share their second
        commits.append((mark, parents, when, f"f{rng.randrange(20)}.txt"))
    shas = fast_import(bench, repo, commits)
    pairs = set()
    while len(pairs) < 120:
        a, b = rng.sample(shas, 2)
        pairs.add((a, b))
    with ObjectStore(repo / ".git") as store:
        ids = range_ids(store, sorted(pairs))
        walked = store.walked
        many = store.between_many(sorted(pairs))
        for (old, new), res in ids.items():
            arrived, left, truncated = res
            assert arrived == rev_list(bench, repo, f"{old}..{new}")
            assert left == rev_list(bench, repo, f"{new}..{old}")
            assert not truncated
            assert many[(old, new)] == store.between(old, new)
    assert walked <= len(shas)


def test_clock_skew_is_tolerated(bench):
    """Committer dates going backwards (a child older than its parent) by five minutes now and
    then: the lists are the exact sets (ancestors of one end, not of the other). git's own
    date-ordered walk stops early there and may list commits that both ends reach; where it
    does not, the lists are git's, order included."""
    repo = bench.init()
    rng = random.Random(5)
    commits = []
    when = 1_700_000_000
    for mark in range(1, 121):
        parents = [] if mark == 1 else [rng.choice(range(max(1, mark - 6), mark))]
        when += rng.choice((60, 60, 60, -300))
        commits.append((mark, parents, when, "f.txt"))
    shas = fast_import(bench, repo, commits)
    graph = {
        line.split()[0]: line.split()[1:] for line in bench.git("rev-list", "--parents", *shas, cwd=repo).splitlines()
    }

    def ancestors(sha: str) -> set[str]:
        seen: set[str] = set()
        stack = [sha]
        while stack:
            c = stack.pop()
            if c not in seen:
                seen.add(c)
                stack.extend(graph[c])
        return seen

    pairs = [(shas[i], shas[j]) for i, j in ((10, 60), (60, 10), (30, 119), (119, 90), (70, 71), (5, 100))]
    git_wrong = 0
    with ObjectStore(repo / ".git") as store:
        for (old, new), (arrived, left, _) in range_ids(store, pairs).items():
            assert set(arrived) == ancestors(new) - ancestors(old) and len(set(arrived)) == len(arrived)
            assert set(left) == ancestors(old) - ancestors(new) and len(set(left)) == len(left)
            for mine, rng_ in ((arrived, f"{old}..{new}"), (left, f"{new}..{old}")):
                theirs = rev_list(bench, repo, rng_)
                if set(theirs) == set(mine):
                    assert theirs == mine
                else:
                    git_wrong += 1
                    assert set(mine) < set(theirs)  # git's extra ones are common ancestors
    assert git_wrong  # (this history does fool git: the test checks what it means to)


def test_the_walk_stays_near_the_moves_in_a_long_history(bench):
    """5,000 commits, 10 minutes apart; moves among the newest ones read a few dozen commits (the
    moves', an hour's more for clock skew, _WALK_SLOP more), not the history."""
    repo = bench.init()
    commits = [(m, [] if m == 1 else [m - 1], 1_700_000_000 + 600 * m, "f.txt") for m in range(1, 5001)]
    shas = fast_import(bench, repo, commits)
    near = [(shas[-10], shas[-1]), (shas[-1], shas[-5]), (shas[-5], shas[-3])]
    with ObjectStore(repo / ".git") as store:
        ids = range_ids(store, near)
        assert store.walked < 100
        assert ids[near[0]][0] == shas[-9:][::-1] and ids[near[1]][1] == shas[-4:][::-1]
        # a move far back walks down to it, no further than needed
        far = [(shas[-1], shas[999])]
        ids = range_ids(store, far)
        assert len(ids[far[0]][1]) == 4000 and store.walked < 4100


def test_a_missing_commit_inside_a_range_fails_only_the_moves_that_need_it(bench):
    repo = bench.init()
    c = [bench.commit(f"c{i}") for i in range(1, 7)]
    obj = repo / ".git" / "objects" / c[2][:2] / c[2][2:]
    obj.chmod(0o644)
    obj.unlink()  # c3 is gone: c1..c5 cannot be walked
    with ObjectStore(repo / ".git") as store:
        res = store.between_many([(c[0], c[4]), (c[4], c[5])])
    assert isinstance(res[(c[0], c[4])], ObjectStoreError)
    assert str(res[(c[0], c[4])]).startswith("git log failed: ")
    arrived, left, truncated = res[(c[4], c[5])]
    assert [x.subject for x in arrived] == ["c6"] and left == [] and not truncated


def test_a_missing_commit_elsewhere_fails_no_move(bench):
    """A commit lost on the main line stops the shared walk; a move on a side branch that never
    needs it still gets its commits (its own walk, then)."""
    repo = bench.init()
    t = 1_700_000_000
    commits = [
        FastCommit(1, (), t + 1, "f1", ref="refs/heads/main"),
        FastCommit(11, (1,), t + 2, "f11", ref="refs/heads/b"),
        FastCommit(12, (11,), t + 3, "f12", ref="refs/heads/b"),
    ]
    commits += [FastCommit(m, (m - 1,), t + 2 + m, f"f{m}", ref="refs/heads/main") for m in range(2, 6)]
    s = scenario.fast_import(repo, commits, bench.env)
    lost = repo / ".git" / "objects" / s[3][:2] / s[3][2:]
    lost.chmod(0o644)
    lost.unlink()
    with ObjectStore(repo / ".git") as store:
        res = store.between_many([(s[1], s[5]), (s[11], s[12])])
    assert isinstance(res[(s[1], s[5])], ObjectStoreError)
    assert [c.sha for c in res[(s[11], s[12])][0]] == [s[12]]


def test_own_walks_after_a_failed_walk_are_few(bench, count_git_processes):
    """A lost commit under many moves: a few of them get a walk of their own, the rest the error
    (not a git process a move)."""
    repo = bench.init()
    t = 1_700_000_000
    commits = [FastCommit(m, (m - 1,) if m > 1 else (), t + m, f"f{m}") for m in range(1, 31)]  # loose objects
    s = scenario.fast_import(repo, commits, bench.env)
    lost = repo / ".git" / "objects" / s[2][:2] / s[2][2:]
    lost.chmod(0o644)
    lost.unlink()
    pairs = [(s[1], s[m]) for m in range(4, 31)]
    with ObjectStore(repo / ".git") as store:
        calls = count_git_processes()
        res = store.between_many(pairs)
    assert all(isinstance(r, ObjectStoreError) for r in res.values())
    assert len([c for c in calls if "log" in c]) == 1 + objects_module.MAX_OWN_WALKS


def test_a_child_with_its_clock_behind_does_not_make_a_shared_commit_one_sided(bench):
    """C, committed with a clock 15 minutes behind its parent R's, is read late (git walks by
    date); the walk does not stop before it, so R, which both ends reach, is in neither list."""
    repo = bench.init()
    t = 1_700_000_000
    commits = [FastCommit(1, (), t + 1000, "r", message="R"), FastCommit(2, (1,), t + 100, "c", message="C")]
    commits += [FastCommit(10 + i, (9 + i,) if i else (), t + 800 - i, "d", message=f"D{i}") for i in range(40)]
    commits += [
        FastCommit(3, (2, 49), t + 900, "z", message="Z"),
        FastCommit(4, (3,), t + 2000, "o", message="O"),
        FastCommit(5, (1, 3), t + 2001, "n", message="N"),
    ]
    s = scenario.fast_import(repo, commits, bench.env)
    old, new = s[4], s[5]
    with ObjectStore(repo / ".git") as store:
        arrived, left, _ = store.between_many([(old, new)])[(old, new)]
    assert [c.sha for c in arrived] == rev_list(bench, repo, f"{old}..{new}") == [new]
    assert [c.sha for c in left] == rev_list(bench, repo, f"{new}..{old}") == [old]


def test_moves_that_list_the_same_commits_share_one_list(bench):
    """A checkout and the checkout back, a commit and the reset that undid it: one list of
    ``CommitInfo``s for each distinct list of commits (a 100,000-entry reflog's 3.1 million
    listings: the 44,000 distinct lists hold 1.6 million), the JSON writing each list's text once."""
    repo = bench.init()
    c = [bench.commit(f"c{i}") for i in range(1, 5)]
    with ObjectStore(repo / ".git") as store:
        res = store.between_many([(c[0], c[2]), (c[2], c[0]), (c[1], c[2]), (c[2], c[1]), (c[2], c[3])])
    forward, back = res[(c[0], c[2])], res[(c[2], c[0])]
    assert [x.subject for x in forward[0]] == ["c3", "c2"] and back[0] == forward[1] == []
    assert back[1] is forward[0]  # the checkout back lists what the checkout brought in
    assert res[(c[2], c[1])][1] is res[(c[1], c[2])][0]  # the reset, what the commit brought in
    assert [x.subject for x in res[(c[2], c[3])][0]] == ["c4"]


def test_no_pairs_and_bad_ids(bench):
    repo = bench.init()
    bench.commit("c1")
    with ObjectStore(repo / ".git") as store:
        assert store.between_many([]) == {}
        with pytest.raises(ObjectStoreError):
            range_ids(store, [("HEAD", "a" * 40)])


def test_git_is_stopped_once_the_walk_is_done(bench, monkeypatch):
    """The walk's git process is killed, not left running down the history."""
    repo = bench.init()
    commits = [(m, [] if m == 1 else [m - 1], 1_700_000_000 + 600 * m, "f.txt") for m in range(1, 3001)]
    shas = fast_import(bench, repo, commits)
    procs = []
    real_popen = objects_module.subprocess.Popen

    def keep(cmd, *args, **kwargs):
        proc = real_popen(cmd, *args, **kwargs)
        procs.append((cmd, proc))
        return proc

    monkeypatch.setattr(objects_module.subprocess, "Popen", keep)
    with ObjectStore(repo / ".git") as store:
        assert range_ids(store, [(shas[-2], shas[-1])]) == {(shas[-2], shas[-1]): ([shas[-1]], [], False)}
        assert store.walked < 50
    (walk,) = [p for cmd, p in procs if cmd in walks([cmd])]
    # killed while it still had history to print (3,000 commits fill the pipe), and reaped
    assert walk.returncode == -signal.SIGKILL


def test_passes_and_straight_lines_give_what_one_pass_of_every_move_gives(bench, monkeypatch):
    """The walk keeps a graph and paints a few moves a pass (a commit's paint does not grow with
    the number of moves), takes a straight line of one-parent commits at once, and a move back
    as the mirror of the move there: the lists are the same, order included, as painting every
    move in one pass, and as ``git rev-list``."""
    from timeline.git import walk as walk_module

    repo = bench.init()
    rng = random.Random(17)
    commits: list[tuple[int, list[int], int, str]] = []
    when = 1_700_000_000
    for mark in range(1, 301):
        parents = [] if mark == 1 else [mark - 1]
        if mark % 25 == 0:
            parents.append(rng.randrange(max(1, mark - 20), mark - 1))  # a merge now and then
        when += rng.choice((0, 1, 60, 600))
        commits.append((mark, parents, when, f"f{rng.randrange(9)}.txt"))
    shas = fast_import(bench, repo, commits)
    pairs: list[tuple[str, str]] = []
    pos = 0
    while len(pairs) < 150:  # a checkout's life: forward, back, far back and back again
        step = rng.choice((1, 1, 3, -2, -60, 0))
        to = min(len(shas) - 1, max(0, pos + step))
        there = [(shas[pos], shas[to])]
        if step == 0:  # a checkout of an older commit, across merges, and back
            there = [(shas[pos], shas[pos // 2]), (shas[pos // 2], shas[pos])]
        pairs += [pair for pair in there if pair[0] != pair[1] and pair not in pairs]
        pos = to

    def lists(moves_a_pass: int, lines: bool) -> dict:
        monkeypatch.setattr(walk_module, "MOVES_A_PASS", moves_a_pass)
        if not lines:
            monkeypatch.setattr(walk_module.CommitWalk, "_line", lambda self, top, bottom: None)
        with ObjectStore(repo / ".git") as store:
            return range_ids(store, pairs)

    mine = lists(walk_module.MOVES_A_PASS, lines=True)
    assert lists(3, lines=True) == mine
    assert lists(len(pairs), lines=False) == mine  # every move in one pass, as the walk once was
    assert sum((new, old) in mine for old, new in pairs) > 10  # checkouts and back: the lists mirrored
    for old, new in pairs:
        arrived, left, truncated = mine[(old, new)]
        assert arrived == rev_list(bench, repo, f"{old}..{new}")
        assert left == rev_list(bench, repo, f"{new}..{old}")
        assert not truncated
