from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline.clock import ZonePolicy, infer_offset, iso, machine_zone, parse_zone, steady_offset, wall_candidates
from timeline.errors import UsageError


@pytest.mark.parametrize(
    "spec, offset_in_july",
    [
        ("UTC", 0),
        ("Z", 0),
        ("+02:00", 120),
        ("-0530", -330),
        ("+5", 300),
        ("UTC+01:00", 60),
        ("Europe/Berlin", 120),
        ("America/New_York", -240),
    ],
)
def test_parse_zone_accepts_names_and_offsets(spec, offset_in_july):
    zone = parse_zone(spec)
    assert datetime(2026, 7, 1, 12, tzinfo=zone).utcoffset() == timedelta(minutes=offset_in_july)


@pytest.mark.parametrize("spec", ["Mars/Olympus", "+25:00", "../etc/passwd", "", "CEST+"])
def test_unknown_zone_is_a_usage_error_naming_it(spec):
    with pytest.raises(UsageError) as caught:
        parse_zone(spec)
    assert repr(spec) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_machine_zone_prefers_tz_then_localtime(tmp_path: Path):
    assert machine_zone({"TZ": "Europe/Berlin"}).name == "Europe/Berlin"
    link = tmp_path / "localtime"
    link.symlink_to("/usr/share/zoneinfo/Asia/Kolkata")
    zone = machine_zone({}, localtime=link)
    assert (zone.name, zone.source) == ("Asia/Kolkata", "machine-local")


def zone_file(name: str) -> Path:
    """The TZif file of zone ``name`` as the system (or the tzdata package) ships it."""
    import zoneinfo

    for folder in zoneinfo.TZPATH:
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    from importlib.resources import files

    return Path(str(files("tzdata.zoneinfo").joinpath(name)))


def test_copied_localtime_keeps_its_rules(tmp_path: Path):
    """A Docker image's /etc/localtime is a copy, not a link: its name is lost, its rules are not."""
    copied = tmp_path / "localtime"
    copied.write_bytes(zone_file("Europe/Berlin").read_bytes())
    zone = machine_zone({}, localtime=copied)
    assert (zone.name, zone.source) == (str(copied), "machine-local")
    assert datetime(2026, 7, 14, 17, 42, tzinfo=zone.tzinfo).utcoffset() == timedelta(hours=2)
    assert datetime(2026, 1, 14, 17, 42, tzinfo=zone.tzinfo).utcoffset() == timedelta(hours=1)


@pytest.mark.parametrize(
    ("tz", "name", "offset_in_july"),
    [
        (":Europe/Berlin", "Europe/Berlin", 120),
        ("", "UTC", 0),  # set but empty: UTC, as glibc reads it
        ("CET-1CEST,M3.5.0,M10.5.0/3", "Asia/Kolkata", 330),  # a rule string: not read, the zone file is
    ],
)
def test_machine_zone_reads_tz_as_the_c_library_does(tmp_path: Path, tz, name, offset_in_july):
    link = tmp_path / "localtime"
    link.symlink_to(zone_file("Asia/Kolkata"))
    zone = machine_zone({"TZ": tz}, localtime=link)
    assert zone.name == name
    assert datetime(2026, 7, 1, 12, tzinfo=zone.tzinfo).utcoffset() == timedelta(minutes=offset_in_july)


def test_tz_naming_a_zone_file_keeps_its_rules(tmp_path: Path):
    zone = machine_zone({"TZ": str(zone_file("Europe/Berlin"))}, localtime=tmp_path / "none")
    assert zone.name.endswith("Europe/Berlin")
    assert datetime(2026, 7, 1, 12, tzinfo=zone.tzinfo).utcoffset() == timedelta(hours=2)


def test_no_zone_file_is_utc_not_this_process_offset(tmp_path: Path):
    for missing_or_bad in (tmp_path / "none", tmp_path / "not-a-zone-file"):
        if missing_or_bad.name == "not-a-zone-file":
            missing_or_bad.write_text("Europe/Berlin\n")
        zone = machine_zone({}, localtime=missing_or_bad)
        assert (zone.name, zone.tzinfo) == ("UTC", timezone.utc)


BERLIN = ZoneInfo("Europe/Berlin")


def test_plain_zone_applies_to_all_logs_and_patterns_win():
    policy = ZonePolicy(["node2/*=UTC", "Europe/Berlin"], {})
    assert policy.zone_for("logs/node2/a.log", None, None) == policy.patterns[0][1]
    assert policy.zone_for("logs/node2/a.log", None, None).source == "pattern"
    zone = policy.zone_for("logs/node1/a.log", None, None)
    assert (zone.name, zone.source) == ("Europe/Berlin", "flag")
    assert (policy.summary.name, policy.summary.source) == ("Europe/Berlin", "flag")


@pytest.mark.parametrize("specs", [["a=Mars/Olympus"], ["=UTC"], ["UTC", "Europe/Berlin"]])
def test_bad_zone_options_are_usage_errors(specs):
    with pytest.raises(UsageError):
        ZonePolicy(specs, {})


def test_offset_is_inferred_from_an_mtime_that_agrees_with_the_last_line():
    last = datetime(2026, 3, 2, 19, 52, 0)  # Berlin wall clock = 18:52 UTC
    written = datetime(2026, 3, 2, 18, 52, 3, tzinfo=timezone.utc).timestamp()
    assert infer_offset(last, written) == timedelta(hours=1)
    assert infer_offset(datetime(2026, 3, 2, 23, 22), written) == timedelta(hours=4, minutes=30)
    assert infer_offset(last, written + 600) is None  # 10 minutes off any quarter hour: no agreement
    # A server writes its last line and the mtime together: a minute later is no agreement (a
    # copy, or a file written to after its last stamped line), as it was under the old 5 minutes.
    at_once = written - 3  # 18:52:00 UTC, the last line's own second
    assert infer_offset(last, at_once + 60) is None
    assert infer_offset(last, at_once + 6) is None and infer_offset(last, at_once - 3) is None
    assert infer_offset(last, at_once + 5) == infer_offset(last, at_once - 2) == timedelta(hours=1)
    assert infer_offset(last, written + 20 * 86400) is None  # a copied file


def test_policy_infers_from_mtime_only_without_a_flag():
    last = datetime(2026, 3, 2, 19, 52, 0)
    written = datetime(2026, 3, 2, 18, 52, 0, tzinfo=timezone.utc).timestamp()
    inferred = ZonePolicy([], {"TZ": "UTC"}).zone_for("a.log", last, written)
    assert (inferred.name, inferred.source) == ("UTC+01:00", "inferred-mtime")
    fallback = ZonePolicy([], {"TZ": "UTC"}).zone_for("a.log", last, written + 1000)
    assert (fallback.name, fallback.source) == ("UTC", "machine-local")
    assert ZonePolicy(["UTC"], {}).zone_for("a.log", last, written).source == "flag"


def test_autumn_overlap_gives_two_readings():
    readings, problem = wall_candidates(datetime(2026, 10, 25, 2, 30), BERLIN)
    assert [r.astimezone(timezone.utc).hour for r in readings] == [0, 1]
    assert problem == "happens twice (autumn overlap)"


def test_spring_gap_gives_two_readings():
    readings, problem = wall_candidates(datetime(2026, 3, 29, 2, 30), BERLIN)
    assert sorted(r.astimezone(timezone.utc).hour for r in readings) == [0, 1]
    assert problem == "never happens (spring-forward gap)"


def test_ordinary_time_gives_one_reading():
    readings, problem = wall_candidates(datetime(2026, 3, 2, 17, 42), BERLIN)
    assert readings == [datetime(2026, 3, 2, 16, 42, tzinfo=timezone.utc)] and problem is None
    own = datetime(2026, 3, 2, 17, 42, tzinfo=timezone.utc)
    assert wall_candidates(own, BERLIN) == ([own], None)


def test_iso_keeps_offset():
    assert iso(datetime(2026, 3, 2, 16, 42, tzinfo=timezone(timedelta(hours=1)))) == "2026-03-02T16:42:00+01:00"
    assert iso(None) is None


def test_iso_reads_back_as_it_was_written():
    # a clock at 12:00:59.000500 was written "...59.000+00:00", read back as :59 and written
    # again "...59+00:00": the same instant, two texts (a JSON loaded and written again differed)
    for microsecond in (0, 1, 500, 999, 1000, 1500, 999_999):
        written = iso(datetime(2026, 3, 2, 12, 0, 59, microsecond, tzinfo=timezone.utc))
        assert iso(datetime.fromisoformat(written)) == written
    assert iso(datetime(2026, 3, 2, 12, 0, 59, 500, tzinfo=timezone.utc)) == "2026-03-02T12:00:59+00:00"
    assert iso(datetime(2026, 3, 2, 12, 0, 59, 1500, tzinfo=timezone.utc)) == "2026-03-02T12:00:59.001+00:00"


# --- steady_offset: the samples' times placed in their zone at once (for speed) -----------------

TRANSITION_ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/St_Johns", "America/Santiago"]


def _transitions(zone: ZoneInfo) -> list[datetime]:
    """The wall-clock hours of 2026 at which ``zone``'s offset changes (found hour by hour)."""
    found, hour = [], datetime(2026, 1, 1)
    previous = hour.replace(tzinfo=zone).utcoffset()
    while hour.year == 2026:
        offset = hour.replace(tzinfo=zone).utcoffset()
        if offset != previous:
            found.append(hour)
        previous, hour = offset, hour + timedelta(hours=1)
    return found


def _one_offset_every_minute(zone, earliest: datetime, latest: datetime) -> bool:
    minute = earliest.replace(second=0, microsecond=0)
    offsets = set()
    while minute <= latest + timedelta(minutes=1):
        readings, _ = wall_candidates(minute, zone)
        if len(readings) > 1:
            return False
        offsets.add(readings[0].utcoffset())
        minute += timedelta(minutes=1)
    return len(offsets) == 1


@settings(max_examples=120, deadline=None)
@given(
    name=st.sampled_from(TRANSITION_ZONES),
    which=st.integers(0, 3),
    before=st.integers(-3000, 3000),
    span=st.integers(0, 3000),
)
def test_a_steady_offset_has_one_reading_a_minute(name, which, before, span) -> None:
    """Around a zone's transitions (30-minute ones too): whenever ``steady_offset`` says the
    offset holds, every minute of the span reads one instant, at one offset."""
    zone = ZoneInfo(name)
    transitions = _transitions(zone)
    earliest = transitions[which % len(transitions)] + timedelta(minutes=before)
    latest = earliest + timedelta(minutes=span)
    steady = steady_offset(zone, earliest, latest)
    if steady:
        assert _one_offset_every_minute(zone, earliest, latest)
    margin = timedelta(hours=3)  # the hour around the span, and the hour a transition was found in
    if not any(earliest - margin <= t <= latest + margin for t in transitions):
        assert steady


def test_steady_offset_in_fixed_zones_and_far_ranges() -> None:
    july = datetime(2026, 7, 1, 8)
    assert steady_offset(ZoneInfo("Europe/Berlin"), july, july + timedelta(days=30))
    assert not steady_offset(timezone(timedelta(hours=5, minutes=30)), datetime(1, 1, 1, 2), july)  # over 400 days
    assert steady_offset(timezone.utc, july, july + timedelta(days=300))
    assert not steady_offset(ZoneInfo("Europe/Berlin"), datetime(2026, 3, 1), datetime(2026, 4, 1))
    assert not steady_offset(timezone.utc, july, july - timedelta(seconds=1))
    assert steady_offset(timezone.utc, datetime.min, datetime.min) in (True, False)  # no overflow
    assert steady_offset(timezone.utc, datetime.max, datetime.max) in (True, False)


@pytest.mark.parametrize(
    ("specs", "said"),
    [
        (["=UTC"], "log_tz '=UTC': empty pattern before '='"),
        (["UTC", "Europe/Berlin"], "log_tz given twice without a pattern: 'UTC' and 'Europe/Berlin'"),
    ],
)
def test_bad_zone_options_name_the_python_parameter_not_the_flag(specs, said):
    with pytest.raises(UsageError) as caught:
        ZonePolicy(specs, {})
    assert str(caught.value) == said
    assert (caught.value.option, caught.value.value) == ("log_tz", specs[-1])


def test_build_from_python_names_log_tz_not_the_flag(tmp_path: Path):
    from timeline import build

    with pytest.raises(UsageError, match=r"^log_tz '=UTC': empty pattern before '='$"):
        build([tmp_path], log_tz="=UTC")
