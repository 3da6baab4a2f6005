"""Message -> kind, and burst / rename grouping, on synthetic entries."""

from __future__ import annotations

import pytest

from timeline.git.classify import classify, detail_for, group_entries, match_stashes, parse_action
from timeline.git.reflog import ReflogEntry

Z = "0" * 40


def sha(n: int) -> str:
    return f"{n:040x}"


@pytest.mark.parametrize(
    "message, kind",
    [
        ("clone: from https://example.com/x.git", "clone"),
        ("commit (initial): c1", "commit"),
        ("commit: fixup! edited during rebase", "commit"),
        ("commit (amend): c3-amended", "amend"),
        ("commit (merge): Merge branch 'c1b' into c2b", "merge"),
        ("commit (cherry-pick): main change", "cherry-pick"),
        ("merge feature: Fast-forward", "merge"),
        ("merge origin/main: Merge made by the 'ort' strategy.", "merge"),
        ("pull: Fast-forward", "pull"),
        ("pull -q: Fast-forward", "pull"),
        ("pull origin main: Fast-forward", "pull"),
        ("pull --no-rebase: Merge made by the 'ort' strategy.", "pull"),
        ("pull --rebase origin main (pick): local1", "pull"),
        ("pull (start): checkout 8813fc6", "pull"),
        ("checkout: moving from main to feature", "checkout"),
        ("checkout: moving from main to main@{1 minute ago}", "checkout"),
        ("reset: moving to HEAD~1", "reset"),
        ("rebase (start): checkout main", "rebase"),
        ("rebase -i (finish): returning to refs/heads/topic", "rebase"),
        ("rebase: fast-forward", "rebase"),
        ("cherry-pick: topic4", "cherry-pick"),
        ('revert: Revert "topic4"', "revert"),
        ("am: topic3", "am"),
        ("branch: Reset to refs/remotes/origin/main", "branch"),
        ("Branch: renamed refs/heads/main to refs/heads/trunk", "branch"),
        ("fetch origin: fast-forward", "fetch"),
        ("fetch -q --no-tags --prune --depth=1 origin +abc:refs/remotes/origin/main: storing ref", "fetch"),
        ("update by push", "push"),
        ("my custom message", "other"),
        ("", "other"),
        (None, "other"),
        ("commit things without a colon", "other"),
    ],
)
def test_classify(message, kind):
    assert classify(message) == kind


def test_parse_action_splits_at_first_colon_space():
    a = parse_action("fetch -q origin +abc:refs/remotes/origin/main: storing ref")
    assert a.cmd == "fetch" and a.rest == "storing ref"
    a = parse_action("pull --rebase origin main (finish): returning to refs/heads/main")
    assert (a.cmd, a.phase, a.action) == ("pull", "finish", "pull --rebase origin main (finish)")


def entries(*rows) -> list[ReflogEntry]:
    return [
        ReflogEntry(old=o, new=n, name="A", email="a@b", ts=1_700_000_000 + i, tz="+0000", message=m, line=i + 1)
        for i, (o, n, m) in enumerate(rows)
    ]


def test_pull_rebase_burst_collapses_start_to_finish():
    es = entries(
        (sha(1), sha(2), "commit: local"),
        (sha(2), sha(3), "pull --rebase origin main (start): checkout 3"),
        (sha(3), sha(4), "pull --rebase origin main (pick): local"),
        (sha(4), sha(4), "pull --rebase origin main (finish): returning to refs/heads/main"),
        (sha(4), sha(5), "commit: after"),
    )
    groups = group_entries(es)
    assert [(g.kind, len(g.entries), g.burst, g.closed) for g in groups] == [
        ("commit", 1, False, True),
        ("pull", 3, True, True),
        ("commit", 1, False, True),
    ]
    assert groups[1].first.old == sha(2) and groups[1].last.new == sha(4)


def test_rebase_i_with_edit_amend_and_fast_forward_stays_one_burst():
    es = entries(
        (sha(1), sha(2), "rebase (start): checkout HEAD~3"),
        (sha(2), sha(3), "rebase: fast-forward"),
        (sha(3), sha(4), "commit (amend): edited during rebase"),
        (sha(4), sha(5), "rebase (continue): x"),
        (sha(5), sha(5), "rebase (finish): returning to refs/heads/topic"),
    )
    groups = group_entries(es)
    assert [(g.kind, len(g.entries)) for g in groups] == [("rebase", 5)]


def test_unterminated_burst_stops_before_foreign_entries():
    es = entries(
        (sha(1), sha(2), "rebase (start): checkout main"),
        (sha(2), sha(3), "rebase (pick): a"),
        (sha(3), sha(9), "checkout: moving from 3 to main"),
        (sha(9), sha(10), "commit: later"),
    )
    groups = group_entries(es)
    assert [(g.kind, len(g.entries), g.closed) for g in groups] == [
        ("rebase", 2, False),
        ("checkout", 1, True),
        ("commit", 1, True),
    ]


def test_new_start_ends_an_unterminated_burst():
    es = entries(
        (sha(1), sha(2), "rebase (start): checkout main"),
        (sha(2), sha(3), "rebase (start): checkout main"),
        (sha(3), sha(4), "rebase (finish): returning to refs/heads/x"),
    )
    assert [(len(g.entries), g.closed) for g in group_entries(es)] == [(1, False), (2, True)]


def test_abort_closes_a_burst():
    es = entries(
        (sha(1), sha(2), "rebase (start): checkout origin/main"),
        (sha(2), sha(1), "rebase (abort): returning to refs/heads/main"),
    )
    (g,) = group_entries(es)
    assert g.burst and g.closed and g.first.old == g.last.new


def test_branch_rename_pair_and_lone_half():
    msg = "Branch: renamed refs/heads/main to refs/heads/trunk"
    es = entries((sha(1), Z, msg), (Z, sha(1), msg), (Z, sha(1), msg))
    groups = group_entries(es)
    assert [(g.kind, len(g.entries), g.rename) for g in groups] == [("branch", 2, True), ("branch", 1, True)]


def test_match_stashes_by_time_and_abbreviated_sha():
    head = entries((sha(1), sha(1), "reset: moving to HEAD"), (sha(1), sha(1), "reset: moving to HEAD"))
    groups = group_entries(head)
    stash = entries((Z, sha(77), f"WIP on main: {sha(1)[:7]} c1"))
    match_stashes(groups, stash)
    assert [g.kind for g in groups] == ["stash", "reset"]  # one stash entry, used once

    groups = group_entries(head)
    match_stashes(groups, entries((Z, sha(77), "WIP on main: deadbee other")))
    assert [g.kind for g in groups] == ["reset", "reset"]  # names another commit


def test_unterminated_burst_does_not_swallow_user_commits():
    es = entries(
        (sha(1), sha(2), "rebase -i (start): checkout HEAD~2"),
        (sha(2), sha(3), "rebase -i (pick): a"),
        (sha(3), sha(4), "commit (amend): edited while stopped"),
    )
    assert [(g.kind, len(g.entries), g.closed) for g in group_entries(es)] == [("rebase", 2, False), ("amend", 1, True)]


@pytest.mark.parametrize(
    "rows, detail",
    [
        ([(sha(1), sha(2), "pull: Fast-forward")], "fast-forward"),
        ([(sha(1), sha(2), "pull --rebase: Fast-forward")], "fast-forward"),  # nothing to rebase
        ([(sha(1), sha(2), "pull --no-rebase: Merge made by the 'ort' strategy.")], "merge"),
        ([(sha(1), sha(2), "merge feature: Fast-forward")], "fast-forward"),
        ([(sha(1), sha(2), "merge origin/main: Merge made by the 'recursive' strategy.")], "merge"),
        ([(sha(1), sha(2), "commit (merge): Merge branch 'x'")], "merge"),
        (
            [
                (sha(1), sha(2), "pull (start): checkout 2"),
                (sha(2), sha(3), "pull (pick): l"),
                (sha(3), sha(3), "pull (finish): returning to refs/heads/main"),
            ],
            "rebase",
        ),
        (
            [
                (sha(1), sha(2), "rebase (start): checkout origin/main"),
                (sha(2), sha(1), "rebase (abort): returning to refs/heads/main"),
            ],
            "aborted",
        ),
        ([(sha(1), sha(2), "rebase (start): checkout main"), (sha(2), sha(3), "rebase (pick): a")], "unfinished"),
        (
            [
                (sha(1), sha(2), "rebase (start): checkout main"),
                (sha(2), sha(3), "rebase (pick): a"),
                (sha(3), sha(3), "rebase (finish): returning to refs/heads/t"),
            ],
            None,
        ),
        ([(sha(1), sha(2), "commit: x")], None),
        ([(sha(1), sha(2), "pull: something new")], None),
    ],
)
def test_detail_for_pull_merge_and_rebase(rows, detail):
    (g,) = group_entries(entries(*rows))
    assert detail_for(g) == detail


def test_worktree_creation_lines_are_one_group_only_in_a_linked_worktree():
    es = entries((Z, sha(1), None), (sha(1), sha(1), "reset: moving to HEAD"), (sha(1), sha(2), "commit: c"))
    assert [(g.kind, len(g.entries)) for g in group_entries(es, linked_worktree=True)] == [
        ("worktree", 2),
        ("commit", 1),
    ]
    assert [g.kind for g in group_entries(es)] == ["other", "reset", "commit"]


def test_push_and_message_less_entries_group_as_push_and_other():
    es = entries((sha(1), sha(2), "update by push"), (sha(2), sha(3), None), (sha(3), sha(4), "my text"))
    assert [g.kind for g in group_entries(es)] == ["push", "other", "other"]
