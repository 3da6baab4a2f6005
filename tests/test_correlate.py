from __future__ import annotations

from datetime import datetime, timedelta, timezone

from timeline.correlate import attribute, head_at
from timeline.model import CodeEvent

A, B, C = "a" * 40, "b" * 40, "c" * 40
ZERO = "0" * 40
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


def event(number: int, minutes: float, old: str, new: str, kind: str = "pull") -> CodeEvent:
    moment = T0 + timedelta(minutes=minutes)
    return CodeEvent(f"e{number}", moment, int(moment.timestamp()), kind, kind, old, new, old != new)


EVENTS = [event(1, 0, ZERO, A, "clone"), event(2, 60, A, B), event(3, 120, B, C, "reset")]


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_run_is_tied_to_head_at_its_start():
    tied = attribute(EVENTS, [at(30)], at(50))
    assert (tied.commit, tied.attribution, tied.events_during) == (A, "exact", [])


def test_run_spanning_a_move_is_mixed_and_names_it():
    tied = attribute(EVENTS, [at(50)], at(130))
    assert (tied.commit, tied.attribution, tied.events_during) == (A, "mixed", ["e2", "e3"])


def test_move_that_keeps_the_commit_does_not_make_a_run_mixed():
    events = EVENTS + [event(4, 200, C, C, "checkout")]
    assert attribute(events, [at(190)], at(210)).attribution == "exact"


def test_run_starting_10s_after_a_pull_is_ambiguous_and_names_both_commits():
    tied = attribute(EVENTS, [at(60) + timedelta(seconds=10)], at(80))
    assert (tied.attribution, tied.commit, tied.candidate_commits) == ("ambiguous", B, [B, A])


def test_tolerance_is_configurable():
    assert attribute(EVENTS, [at(60) + timedelta(seconds=10)], at(80), tolerance_s=5).attribution == "exact"
    assert attribute(EVENTS, [at(58)], at(59), tolerance_s=180).attribution == "ambiguous"


def test_two_dst_readings_on_different_commits_are_ambiguous():
    tied = attribute(EVENTS, [at(90), at(30)], at(100), tolerance_s=0)
    assert (tied.attribution, tied.candidate_commits) == ("ambiguous", [B, A])
    same = attribute(EVENTS, [at(70), at(80)], at(100), tolerance_s=0)
    assert same.attribution == "exact"


def test_run_before_first_entry_is_not_guessed():
    tied = attribute(EVENTS, [at(-5)], at(10))
    assert (tied.attribution, tied.commit) == ("before-reflog", None)


def test_run_starting_just_after_the_clone_may_be_before_the_reflog():
    tied = attribute(EVENTS, [at(0) + timedelta(seconds=20)], at(10))
    assert (tied.attribution, tied.candidate_commits) == ("ambiguous", [A])


def test_no_repo_and_no_time():
    assert attribute(None, [at(30)], at(40)).attribution == "no-repo"
    assert attribute(EVENTS, [], None).attribution == "no-time"


def test_file_order_wins_over_a_clock_that_stepped_back():
    # e3 was written after e2 but its clock reads earlier: HEAD after both is e3's commit.
    events = [event(1, 0, ZERO, A, "clone"), event(2, 60, A, B), event(3, 59, B, C, "reset")]
    assert head_at(events, at(70).timestamp()) == C


def test_commit_from_an_approximate_event_is_approximate():
    approximate = event(2, 60, A, B)
    approximate.approximate = True
    events = [event(1, 0, ZERO, A, "clone"), approximate]
    assert attribute(events, [at(90)], at(100)).attribution == "approximate"
    assert attribute(events, [at(30)], at(40)).attribution == "exact"


def test_files_may_differ_follows_the_move_that_set_the_commit():
    soft_reset = event(2, 60, A, B, "reset")
    soft_reset.files_may_differ = True
    events = [event(1, 0, ZERO, A, "clone"), soft_reset]
    assert attribute(events, [at(90)], at(100)).files_may_differ is True
    assert attribute(events, [at(30)], at(40)).files_may_differ is False
