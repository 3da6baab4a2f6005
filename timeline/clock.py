"""Time zones: turning a log's zone-less wall-clock readings into instants.

SGLang and vLLM print local wall-clock time with no zone (their ``datefmt`` has no ``%z``:
``configure_logger`` in
https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/utils/common.py,
https://github.com/vllm-project/vllm/blob/main/vllm/logger.py); the reflog stores UTC seconds
since the epoch plus the writer's offset (https://git-scm.com/docs/git-update-ref#_logging_updates,
dates as in https://git-scm.com/docs/git-commit#_date_formats). Every comparison happens in UTC; the zone each
log's times are read in is explicit and reported with how it was chosen (``Zone.source``):

- ``flag``: ``--log-tz ZONE``;
- ``pattern``: ``--log-tz PATTERN=ZONE``, the first pattern matching the log's path;
- ``inferred-mtime``: the file's last write (mtime) a whole real offset after its last
  wall-clock reading, within seconds, and not unlike the reflog's offsets around then;
- ``machine-local``: the analysing machine's zone, when nothing better is known;
- ``in-line``: the line carried its own offset (docker ``-t`` prefixes); kept as is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path, PurePath
from typing import overload
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from timeline.errors import UsageError

_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$")

# Inferring a log's zone from its mtime: a server writes its last line and the file's mtime at
# the same moment (Python's logging.StreamHandler flushes every record), and the stamp is that
# moment cut to the second, so the mtime lies a whole real-world offset after the last stamp,
# give or take a few seconds (CLOCK_SLACK for file times kept in whole seconds, as tar does).
# A copy's mtime lands that close to one of the offsets by chance about once in 300 copies
# (40 offsets, 7 s each, in 26 hours of them); with the old five minutes it was one in six.
MTIME_AGREEMENT = timedelta(seconds=5)
CLOCK_SLACK = timedelta(seconds=2)
# Every UTC offset in use: whole hours from -12 to +14 and the odd ones (tzdata 2025).
REAL_OFFSETS = sorted(
    [timedelta(hours=h) for h in range(-12, 15)]
    + [timedelta(minutes=m) for m in (-570, -210, -150, 210, 270, 330, 345, 390, 525, 570, 630, 765, 825)]
)


@dataclass(frozen=True)
class Zone:
    """A zone as the user named it, with where that choice came from."""

    name: str
    tzinfo: tzinfo
    source: str  # "flag" | "pattern" | "inferred-mtime" | "machine-local" | "in-line"


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
        # ZoneInfo also accepts relative paths; a zone name never starts with a dot or a slash.
        if text.startswith((".", "/")):
            raise ValueError(text)
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UsageError(
            f"unknown time zone {spec!r} (use an IANA name such as Europe/Berlin, UTC, or an offset such as +02:00)"
        ) from None


LOCALTIME = Path("/etc/localtime")


def machine_zone(environ: Mapping[str, str] | None = None, localtime: Path = LOCALTIME) -> Zone:
    """The analysing machine's local zone, with its rules (daylight saving), as the C library finds it.

    ``TZ`` first (``Europe/Berlin``, ``:Europe/Berlin``, a zone file's absolute path; set but empty
    is UTC), then ``localtime``: named after its target when it is a link into a zoneinfo folder,
    read with ``ZoneInfo.from_file`` when it is a copied file (the usual Docker image, where a fixed
    offset would lose summer time). No zone file: UTC, as glibc reads it. A ``TZ`` rule string
    (``CET-1CEST,M3.5.0,M10.5.0/3``) is not understood here and falls back to ``localtime``.
    """
    environ = os.environ if environ is None else environ
    if "TZ" in environ:
        tz_name = environ["TZ"].lstrip(":")
        if not tz_name:
            return Zone("UTC", timezone.utc, "machine-local")
        try:
            if tz_name.startswith("/"):
                return Zone(tz_name.split("zoneinfo/", 1)[-1], _zone_file(Path(tz_name)), "machine-local")
            return Zone(tz_name, parse_zone(tz_name), "machine-local")
        except (UsageError, OSError, ValueError):
            pass
    try:
        name = os.readlink(localtime).split("zoneinfo/", 1)[1]
        return Zone(name, ZoneInfo(name), "machine-local")
    except (OSError, IndexError, ZoneInfoNotFoundError, ValueError):
        pass
    try:
        return Zone(os.fspath(localtime), _zone_file(localtime), "machine-local")
    except (OSError, ValueError):
        return Zone("UTC", timezone.utc, "machine-local")


def _zone_file(path: Path) -> tzinfo:
    """A TZif zone file's rules (ValueError when it is not one)."""
    with open(path, "rb") as handle:
        return ZoneInfo.from_file(handle, key=os.fspath(path))


def infer_offset(last_wall: datetime, mtime: float) -> timedelta | None:
    """The zone offset that makes a file's last wall-clock reading agree with its mtime.

    The file was last written when its last line was printed, so the line's real instant is
    the mtime, within seconds: ``wall - offset`` lies in ``[mtime - MTIME_AGREEMENT, mtime +
    CLOCK_SLACK]``. Only offsets some zone uses are considered. Returns None when no offset
    agrees (a copied or touched file, a file written to after its last timestamped line); the
    caller also holds the offset against the reflog's (``timeline.builder``), since a copy's
    mtime can still fall on one by chance.
    """
    difference = last_wall.replace(tzinfo=timezone.utc) - datetime.fromtimestamp(mtime, timezone.utc)
    for offset in REAL_OFFSETS:
        delay = offset - difference  # how long before the mtime the last line was written
        if -CLOCK_SLACK <= delay <= MTIME_AGREEMENT:
            return offset
    return None


class ZonePolicy:
    """Chooses the zone of each log from the ``--log-tz`` options, the file's mtime, or the machine.

    ``specs`` are ``ZONE`` (all logs) and ``PATTERN=ZONE`` (logs whose path matches the glob,
    matched from the right as ``pathlib.PurePath.match`` does, so ``node2/*`` matches
    ``logs/node2/a.log``). Patterns win over the plain zone; the first matching pattern wins.
    """

    def __init__(
        self, specs: Sequence[str] = (), environ: Mapping[str, str] | None = None, localtime: Path = LOCALTIME
    ):
        self.patterns: list[tuple[str, Zone]] = []
        self.default: Zone | None = None
        for spec in specs:
            if "=" in spec:
                pattern, _, name = spec.partition("=")
                if not pattern:
                    raise UsageError(f"{spec!r}: empty pattern before '='", option="log_tz", value=spec)
                self.patterns.append((pattern, Zone(name, parse_zone(name), "pattern")))
            elif self.default is not None:
                raise UsageError(
                    f"given twice without a pattern: {self.default.name!r} and {spec!r}", option="log_tz", value=spec
                )
            else:
                self.default = Zone(spec, parse_zone(spec), "flag")
        self.machine = machine_zone(environ, localtime)

    @property
    def summary(self) -> Zone:
        """The zone logs fall back to: the plain ``--log-tz``, else the machine's."""
        return self.default or self.machine

    def zone_for(self, source: str, last_wall: datetime | None, mtime: float | None) -> Zone:
        for pattern, zone in self.patterns:
            if PurePath(source).match(pattern):
                return zone
        if self.default is not None:
            return self.default
        if last_wall is not None and last_wall.tzinfo is None and mtime is not None:
            offset = infer_offset(last_wall, mtime)
            if offset is not None:
                name = "UTC" if not offset else f"UTC{format_offset(offset)}"
                return Zone(name, timezone(offset), "inferred-mtime")
        return self.machine


def wall_candidates(wall: datetime, zone: tzinfo) -> tuple[list[datetime], str | None]:
    """Every instant a wall-clock reading can stand for in ``zone``.

    The nominal reading (``fold=0``) comes first. One instant normally; two in the autumn overlap (the hour that
    happens twice) and in the spring gap (the hour that never happens: the clock or the zone is wrong), with a note
    saying which. Readings carrying their own offset are returned as they are.
    """
    if wall.tzinfo is not None:
        return [wall], None
    first = wall.replace(tzinfo=zone, fold=0)
    second = wall.replace(tzinfo=zone, fold=1)
    if first.utcoffset() == second.utcoffset():
        return [first], None
    instants = [first, second]  # nominal (fold=0) first
    round_trip = first.astimezone(timezone.utc).astimezone(zone).replace(tzinfo=None, fold=0)
    if round_trip != wall:
        return instants, "never happens (spring-forward gap)"
    return instants, "happens twice (autumn overlap)"


def steady_offset(zone: tzinfo, earliest: datetime, latest: datetime, max_days: int = 400) -> bool:
    """Whether every wall-clock reading from ``earliest`` to ``latest`` (naive) stands for one
    instant in ``zone``, at the same offset: no transition in between. The offset is looked at
    on every hour from the hour before ``earliest`` to the one after ``latest``, both folds: a
    transition changes it from one hour to the next or makes an hour's start ambiguous (no zone
    goes and comes back within an hour). Spans over ``max_days``: False (not worth checking)."""
    if latest < earliest or latest - earliest > timedelta(days=max_days):
        return False
    hour = earliest.replace(minute=0, second=0, microsecond=0)
    try:
        hour -= timedelta(hours=1)
        end = latest + timedelta(hours=1)
    except OverflowError:
        return False
    offset = hour.replace(tzinfo=zone).utcoffset()
    while hour <= end:
        if any(hour.replace(tzinfo=zone, fold=fold).utcoffset() != offset for fold in (0, 1)):
            return False
        try:
            hour += timedelta(hours=1)
        except OverflowError:
            return False
    return True


def format_offset(offset: timedelta) -> str:
    total = int(offset.total_seconds()) // 60
    sign = "-" if total < 0 else "+"
    hours, minutes = divmod(abs(total), 60)
    return f"{sign}{hours:02d}:{minutes:02d}"


@overload
def iso(moment: datetime) -> str: ...
@overload
def iso(moment: None) -> None: ...
@overload
def iso(moment: datetime | None) -> str | None: ...
def iso(moment: datetime | None) -> str | None:
    """ISO-8601 with offset, to the millisecond when the moment has one (under a millisecond:
    to the second, so that the text read back is written the same)."""
    if moment is None:
        return None
    spec = "milliseconds" if moment.microsecond >= 1000 else "seconds"
    return moment.isoformat(timespec=spec)
