"""Completing partial time stamps: the date of a time-only stamp, the year of a ``MM-DD`` one.

SGLang 0.2-0.3 prints ``[HH:MM:SS TP0]`` (``configure_logger``'s ``datefmt="%H:%M:%S"`` in
those releases' ``python/sglang/srt/utils.py``) and vLLM prints ``MM-DD HH:MM:SS`` (its
``datefmt`` in https://github.com/vllm-project/vllm/blob/main/vllm/logger.py). The missing part comes from the file's
mtime: a log is last written when its last
line is printed, so the last stamp lies at or a little before the mtime. The mtime is read as
this machine's local wall-clock time (the zone the core also falls back to); a stamp up to
``SLACK`` after it still counts as the same day, so a clock a little ahead does not shift a
whole day. Earlier stamps are counted back over each midnight (or new year) the log crossed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

__all__ = [
    "SLACK",
    "mtime_local",
    "last_day",
    "last_year",
    "describe_mtime",
    "real_clock",
    "real_date",
    "real_month_day",
    "ImpossibleStamps",
]

SLACK = timedelta(minutes=5)


def mtime_local(mtime: float) -> datetime | None:
    """The mtime as a naive local wall-clock reading, or None if it cannot be one."""
    try:
        return datetime.fromtimestamp(mtime)
    except (OverflowError, OSError, ValueError):
        return None


def last_day(last_time: str, mtime: float) -> date | None:
    """The date of the last time-only stamp ``HH:MM:SS``: the mtime's day, or the day before
    when that time of day is later than the mtime."""
    local = mtime_local(mtime)
    if local is None:
        return None
    try:
        hh, mm, ss = int(last_time[0:2]), int(last_time[3:5]), int(last_time[6:8])
        candidate = local.replace(hour=hh, minute=mm, second=ss, microsecond=0)
    except ValueError:
        return None
    day = local.date()
    if candidate > local + SLACK:
        day -= timedelta(days=1)
    return day


def last_year(month: int, day: int, clock: str, mtime: float) -> int | None:
    """The year of the last ``MM-DD HH:MM:SS`` stamp: the mtime's year, or the year before when
    that reading would lie after the mtime (a log of late December read in January)."""
    local = mtime_local(mtime)
    if local is None:
        return None
    year = local.year
    for candidate_year in (year, year - 1):
        try:
            moment = datetime(candidate_year, month, day, int(clock[0:2]), int(clock[3:5]), int(clock[6:8]))
        except ValueError:
            continue  # 02-29 in a year without one
        if moment <= local + SLACK:
            return candidate_year
    return None


def describe_mtime(mtime: float) -> str:
    local = mtime_local(mtime)
    return "?" if local is None else local.strftime("%Y-%m-%d %H:%M:%S") + " local time"


# --------------------------------------------------------------------------- impossible stamps
# A stamp whose fields are digits in the right places but no real date and time (2026-02-30,
# month 13, 25:61:00; a leap second, :60, too, which datetime does not take): not a reading.
# Every family skips it as a time and tallies it, and the file says so once, at its line.

_REAL_DATES: dict[str, bool] = {}


def real_clock(clock: str) -> bool:
    """``HH:MM:SS`` (digits) is a time of day."""
    return clock[0:2] <= "23" and clock[3:4] <= "5" and clock[6:7] <= "5"


def real_date(text: str) -> bool:
    """``YYYY-MM-DD`` (digits) is a day of the calendar (remembered: a log has a few)."""
    known = _REAL_DATES.get(text)
    if known is None:
        try:
            date(int(text[0:4]), int(text[5:7]), int(text[8:10]))
            known = True
        except ValueError:
            known = False
        if len(_REAL_DATES) < 4096:
            _REAL_DATES[text] = known
    return known


def real_month_day(month: int, day: int) -> bool:
    """``MM-DD`` is a day of some year (02-29 is)."""
    try:
        date(2000, month, day)  # a leap year
    except ValueError:
        return False
    return True


@dataclass(slots=True)
class ImpossibleStamps:
    """The stamps of one file that are no real date and time: how many, the first one's line and text."""

    count: int = 0
    line: int | None = None
    text: str | None = None

    def note(self, line: int, text: str, count: int = 1) -> None:
        """``count`` such stamps, the first of them at ``line``, reading ``text``."""
        if self.line is None:
            self.line, self.text = line, text
        self.count += count
