from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from timeline.clock import REAL_OFFSETS
from timeline.correlate import MAX_CANDIDATES, Attribution, HeadIndex, assume_zone, attribute, clock_steps
from timeline.model import CodeEvent, ZoneReading

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
    assert HeadIndex(events).commit_at(at(70).timestamp()) == C


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


@settings(max_examples=200, deadline=None)
@given(
    times=st.lists(st.integers(0, 50), min_size=0, max_size=12),
    commits=st.lists(st.sampled_from([A, B, C, ZERO]), min_size=12, max_size=12),
    probe=st.integers(-5, 60),
)
def test_head_index_answers_as_head_at(times, commits, probe):
    """File order is the truth, even when the reflog's clock steps backwards."""
    events = [event(n, minutes, ZERO, commits[n], "checkout") for n, minutes in enumerate(times)]
    assert HeadIndex(events).commit_at(at(probe).timestamp()) == linear_head(events, at(probe).timestamp())


def wall(minutes: float) -> datetime:
    """The naive wall-clock reading of ``at(minutes)`` in UTC."""
    return at(minutes).replace(tzinfo=None)


DAY = 24 * 60
# a clone, a pull two days later, a reset one day after that
MOVES = [event(1, 0, ZERO, A, "clone"), event(2, 2 * DAY, A, B), event(3, 3 * DAY, B, C, "reset")]


def assumed(minutes: float):
    start = at(minutes)
    return assume_zone(attribute(MOVES, [start], start + timedelta(minutes=10)), HeadIndex(MOVES), wall(minutes), 60)


def test_a_start_no_offset_moves_stays_exact():
    tied = assumed(DAY)  # a day after the clone, a day before the pull: -12:00 to +14:00 stay inside
    assert (tied.commit, tied.attribution, tied.reasons, tied.zone_readings) == (A, "exact", [], [])


def test_a_start_some_offset_moves_is_ambiguous_with_each_offset_span():
    tied = assumed(2 * DAY - 5 * 60)  # five hours before the pull, read as UTC
    assert (tied.commit, tied.attribution, tied.reasons) == (A, "ambiguous", ["zone-assumed"])
    assert tied.candidate_commits == [A, B]
    # at -05:00 the start is the pull's instant itself: HEAD held B from then on
    assert tied.zone_readings == [
        ZoneReading(B, timedelta(hours=-12), timedelta(hours=-5)),
        ZoneReading(A, timedelta(hours=-4), timedelta(hours=14)),
    ]


def test_offsets_spanning_two_moves_name_three_commits_in_time_order():
    tied = assumed(2 * DAY + 12 * 60)  # 12 hours after the pull, 12 before the reset
    assert tied.candidate_commits == [A, B, C]
    assert [r.commit for r in tied.zone_readings] == [C, B, A]  # west to east: later instants first


def test_an_offset_before_the_reflog_names_no_commit():
    tied = assumed(3 * 60)  # three hours after the clone
    assert tied.attribution == "ambiguous" and tied.candidate_commits == [A]
    assert tied.zone_readings[-1].commit is None and tied.zone_readings[-1].max_offset == timedelta(hours=14)


def test_a_near_move_reason_is_kept_with_the_zone():
    tied = assumed(2 * DAY + 0.5)  # 30 s after the pull
    assert tied.reasons == ["clock-tolerance", "zone-assumed"]


def test_ambiguous_reasons_without_an_assumed_zone():
    near = attribute(EVENTS, [at(60) + timedelta(seconds=10)], at(80))
    assert near.reasons == ["clock-tolerance"]
    dst = attribute(EVENTS, [at(90), at(30)], at(100), tolerance_s=0)
    assert dst.reasons == ["dst"]
    assert attribute(EVENTS, [at(30)], at(50)).reasons == []


def test_head_moving_away_and_back_within_the_tolerance_is_ambiguous():
    # Before: every probe (start, start +- tolerance) saw A, so the run was "exact" on A while
    # HEAD held B for ten seconds right next to its start.
    away = event(2, 60, A, B, "checkout")
    back = CodeEvent("e3", away.time + timedelta(seconds=10), away.ts + 10, "checkout", "checkout", B, A, True)
    events = [event(1, 0, ZERO, A, "clone"), away, back]
    tied = attribute(events, [at(60) + timedelta(seconds=30)], at(80))
    assert (tied.attribution, tied.commit, tied.candidate_commits) == ("ambiguous", A, [A, B])
    assert attribute(events, [at(60) + timedelta(seconds=30)], at(80), tolerance_s=5).attribution == "exact"
    assert attribute(events, [at(70)], at(80)).attribution == "exact"


CLOCK_SET_BACK = [event(1, 0, ZERO, A, "clone"), event(2, 60, A, B), event(3, 30, B, C, "reset")]


def test_a_reflog_clock_stepping_back_is_found_with_the_commits_held_meanwhile():
    (step,) = clock_steps(CLOCK_SET_BACK)
    assert (step.event.id, step.back_s, step.low, step.high) == ("e3", 1800, CLOCK_SET_BACK[2].ts, CLOCK_SET_BACK[1].ts)
    assert step.commits == (C, B, A)
    assert clock_steps(EVENTS) == []


def test_a_run_in_the_time_the_reflog_read_twice_is_ambiguous():
    # Before: "exact" on C (file order), though the reflog's clock read 9:45 both before the
    # reset (on B) and after it.
    tied = attribute(CLOCK_SET_BACK, [at(45)], at(50))
    assert (tied.attribution, tied.commit, tied.reasons) == ("ambiguous", C, ["reflog-clock-step"])
    assert tied.candidate_commits == [C, B, A]
    later = attribute(CLOCK_SET_BACK, [at(90)], at(100))
    assert (later.attribution, later.commit, later.reasons) == ("exact", C, [])


def test_a_reflog_moving_head_thousands_of_times_names_a_bounded_number_of_candidates():
    events = [event(1, 0, ZERO, A, "clone")]
    for n in range(5000):
        moment = T0 + timedelta(hours=1, milliseconds=10 * n)
        events.append(
            CodeEvent(f"e{n + 2}", moment, int(moment.timestamp()), "checkout", "checkout", A, f"{n:040x}", True)
        )
    tied = attribute(events, [at(60)], at(61))
    assert tied.attribution == "ambiguous" and len(tied.candidate_commits) <= 2 + 4 * MAX_CANDIDATES


def linear_head(events: list[CodeEvent], ts: float) -> str | None:
    """The definition: the last event in file order at or before ``ts`` that leaves a commit."""
    found = None
    for e in events:
        if e.ts <= ts and e.new != ZERO:
            found = e.new
    return found


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.sampled_from([A, B, C, ZERO])), max_size=40), st.integers(-5, 55))
def test_the_index_answers_as_reading_every_entry_does(moves, probe):
    events = []
    for n, (minute, new) in enumerate(moves):
        moment = T0 + timedelta(minutes=minute)
        events.append(CodeEvent(f"e{n}", moment, int(moment.timestamp()), "checkout", "checkout", A, new, True))
    ts = at(probe).timestamp()
    found = HeadIndex(events).event_at(ts)
    assert (found.new if found else None) == linear_head(events, ts)


@settings(max_examples=200, deadline=None)
@given(
    hours=st.lists(st.floats(0, 96), min_size=1, max_size=10),
    commits=st.lists(st.sampled_from([A, B, C]), min_size=10, max_size=10),
    start=st.floats(-24, 120),
    tolerance=st.sampled_from([0.0, 60.0, 3600.0]),
)
def test_assume_zone_reads_as_a_look_up_at_every_offset_would(hours, commits, start, tolerance):
    """The one walk over the readings gives what looking each reading up gives."""
    events = [event(n, h * 60, ZERO, commits[n], "checkout") for n, h in enumerate(hours)]
    heads = HeadIndex(events)
    reading = wall(start * 60).replace(microsecond=0)
    tied = assume_zone(Attribution(None, "exact"), heads, reading, tolerance)
    as_utc = reading.replace(tzinfo=timezone.utc).timestamp()
    own = [linear_head(events, as_utc - o.total_seconds()) for o in REAL_OFFSETS]
    every = {
        linear_head(events, as_utc - o.total_seconds() + d) for o in REAL_OFFSETS for d in (-tolerance, 0, tolerance)
    }
    assert (tied.attribution == "ambiguous") == (len(every) > 1)
    if len(every) > 1:
        assert [
            c
            for r in tied.zone_readings
            for c in [r.commit] * (REAL_OFFSETS.index(r.max_offset) - REAL_OFFSETS.index(r.min_offset) + 1)
        ] == own
        assert set(tied.candidate_commits) == every - {None}
