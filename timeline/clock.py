"""Time zones: turning a log's zone-less wall-clock readings into instants.

SGLang and vLLM print local wall-clock time with no zone (sglang-log-formats.md §1.1); the
reflog stores UTC seconds (git-reflog.md §6). Every comparison happens in UTC; the zone a
log's times are read in is always explicit and reported with how it was chosen.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from timeline.errors import UsageError

_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$")


@dataclass(frozen=True)
class Zone:
    """A zone as the user named it, with where that choice came from."""

    name: str
    tzinfo: tzinfo
    source: str  # "flag" or "machine-local"


def parse_zone(spec: str) -> tzinfo:
    """Read an IANA name (``Europe/Berlin``), ``UTC``/``Z``, or an offset (``+02:00``, ``-0530``).

    Raises UsageError naming the zone when it is unknown.
    """
    text = spec.strip()
    if text.upper() in ("UTC", "Z", "GMT"):
        return timezone.utc
    match = _OFFSET.match(text)
    if match:
        sign, hours, minutes = match.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes or 0))
        if delta >= timedelta(hours=24):
            raise UsageError(f"unknown time zone {spec!r}: offset out of range")
        return timezone(-delta if sign == "-" else delta)
    try:
        # ZoneInfo also accepts relative paths; a zone name never has a leading dot.
        if text.startswith((".", "/")):
            raise ValueError(text)
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UsageError(
            f"unknown time zone {spec!r} (use an IANA name such as Europe/Berlin, UTC, or an offset such as +02:00)"
        ) from None


def machine_zone(environ: dict[str, str] | None = None, localtime: Path = Path("/etc/localtime")) -> Zone:
    """The analysing machine's local zone, by name when it can be found (TZ, /etc/localtime)."""
    environ = os.environ if environ is None else environ
    tz_name = environ.get("TZ", "").lstrip(":")
    if tz_name:
        try:
            return Zone(tz_name, parse_zone(tz_name), "machine-local")
        except UsageError:
            pass
    try:
        target = os.readlink(localtime)
        name = target.split("zoneinfo/", 1)[1]
        return Zone(name, ZoneInfo(name), "machine-local")
    except (OSError, IndexError, ZoneInfoNotFoundError, ValueError):
        pass
    offset = datetime.now().astimezone().utcoffset() or timedelta(0)
    return Zone(format_offset(offset), timezone(offset), "machine-local")


def resolve_log_zone(spec: str | None, environ: dict[str, str] | None = None) -> Zone:
    """The zone log times are read in: the ``--log-tz`` flag, else the machine's zone."""
    if spec is None:
        return machine_zone(environ)
    return Zone(spec, parse_zone(spec), "flag")


def to_instant(wall: datetime, zone: tzinfo) -> datetime:
    """A log reading as an aware datetime in ``zone`` (kept as is when it carries its own offset)."""
    if wall.tzinfo is not None:
        return wall
    return wall.replace(tzinfo=zone)


def format_offset(offset: timedelta) -> str:
    total = int(offset.total_seconds()) // 60
    sign = "-" if total < 0 else "+"
    hours, minutes = divmod(abs(total), 60)
    return f"{sign}{hours:02d}:{minutes:02d}"


def iso(moment: datetime | None) -> str | None:
    """ISO-8601 with offset (seconds precision unless the moment has a fraction)."""
    if moment is None:
        return None
    spec = "milliseconds" if moment.microsecond else "seconds"
    return moment.isoformat(timespec=spec)
