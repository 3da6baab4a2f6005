from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from timeline.clock import iso, machine_zone, parse_zone, resolve_log_zone, to_instant
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


def test_flag_zone_is_reported_as_flag():
    zone = resolve_log_zone("UTC", {})
    assert (zone.name, zone.source) == ("UTC", "flag")


def test_wall_clock_reading_becomes_the_right_instant():
    berlin = ZoneInfo("Europe/Berlin")
    instant = to_instant(datetime(2026, 3, 2, 17, 42), berlin)
    assert instant.astimezone(timezone.utc) == datetime(2026, 3, 2, 16, 42, tzinfo=timezone.utc)
    own_offset = datetime(2026, 3, 2, 17, 42, tzinfo=timezone.utc)
    assert to_instant(own_offset, berlin) is own_offset


def test_iso_keeps_offset():
    assert iso(datetime(2026, 3, 2, 16, 42, tzinfo=timezone(timedelta(hours=1)))) == "2026-03-02T16:42:00+01:00"
    assert iso(None) is None
